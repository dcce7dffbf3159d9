// Package profile pins an MCP server to the one protocol revision fsmcp
// speaks, 2026-07-28, and to the tools capability alone.
//
// go-sdk v1.8.0 narrows server/discover with
// ServerOptions.SupportedProtocolVersions, but it still answers a legacy
// initialize (with 2025-11-25) and advertises logging by default. Options and
// Refuse close those two gaps; both the worker and the supervisor's front
// server use them so the two binaries present the same profile.
package profile

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Version is the only protocol revision served.
const Version = "2026-07-28"

// CodeUnsupportedProtocolVersion is the JSON-RPC error code for a request at
// a protocol version this server does not implement.
const CodeUnsupportedProtocolVersion = mcp.CodeUnsupportedProtocolVersion

// Options returns server options restricted to the profile: only Version is
// supported and only the tools capability is advertised. instructions may be
// empty.
func Options(instructions string) *mcp.ServerOptions {
	return &mcp.ServerOptions{
		Instructions:              instructions,
		SupportedProtocolVersions: []string{Version},
		Capabilities:              &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}},
	}
}

// New builds a server with Options and the legacy-handshake refusal
// installed.
func New(impl *mcp.Implementation, instructions string) *mcp.Server {
	s := mcp.NewServer(impl, Options(instructions))
	s.AddReceivingMiddleware(Refuse)
	return s
}

// Refuse is receiving middleware that answers the legacy initialize
// handshake (and its initialized notification) with the
// unsupported-protocol-version error naming Version. The session is left
// open, so a client that retries with server/discover is served.
func Refuse(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "initialize":
			requested := ""
			if p, ok := req.GetParams().(*mcp.InitializeParams); ok && p != nil {
				requested = p.ProtocolVersion
			}
			data, _ := json.Marshal(mcp.UnsupportedProtocolVersionData{
				Supported: []string{Version},
				Requested: requested,
			})
			return nil, &jsonrpc.Error{
				Code:    CodeUnsupportedProtocolVersion,
				Message: "unsupported protocol version: this server implements " + Version + " only (use server/discover)",
				Data:    data,
			}
		case "notifications/initialized":
			return nil, nil
		}
		return next(ctx, method, req)
	}
}
