// Package pin holds blank imports of the chosen dependencies so go.mod and
// go.sum carry them while the packages that use them are written. Delete it
// once every import below is made by real code.
package pin

import (
	_ "github.com/hashicorp/go-hclog"
	_ "github.com/hashicorp/go-plugin"
	_ "github.com/modelcontextprotocol/go-sdk/mcp"
	_ "github.com/oklog/run"
	_ "golang.org/x/sys/unix"
	_ "google.golang.org/grpc"
	_ "google.golang.org/protobuf/types/known/wrapperspb"
	_ "gopkg.in/yaml.v3"
)
