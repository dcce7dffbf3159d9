package front

import (
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestOwnServerInfo(t *testing.T) {
	s, err := New(&mcp.Implementation{Name: "fsmcp-supervisor", Version: "v1"}, nil, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	const sup = `{"name":"fsmcp-supervisor","version":"v1"}`
	for _, tc := range []struct{ name, in, want string }{
		{"worker's first", `{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"fsmcp-worker","version":"v1"}},"content":[]}`,
			`{"_meta":{"io.modelcontextprotocol/serverInfo":` + sup + `},"content":[]}`},
		{"spaced and last", `{"content":[], "_meta": {"x": 1, "io.modelcontextprotocol/serverInfo": {"name": "w", "version": "2"} }}`,
			`{"content":[], "_meta": {"x": 1, "io.modelcontextprotocol/serverInfo":` + sup + ` }}`},
		{"none", `{"content":[]}`, `{"content":[]}`},
		{"only in text", `{"content":[{"type":"text","text":"\"io.modelcontextprotocol/serverInfo\":{}"}]}`,
			`{"content":[{"type":"text","text":"\"io.modelcontextprotocol/serverInfo\":{}"}]}`},
		{"truncated", `{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":`, `{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":`},
	} {
		got := string(s.ownServerInfo(json.RawMessage(tc.in)))
		if got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
}
