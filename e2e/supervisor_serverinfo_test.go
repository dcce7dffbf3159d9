//go:build linux

package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestSupervisorServerInfo: every result the supervisor sends names it in
// _meta's serverInfo, relayed worker results (success, tool error, write)
// included, as tools/list and its own answers do.
func TestSupervisorServerInfo(t *testing.T) {
	bins := buildSupervisorBins(t)
	manifest, _ := callManifest(t, map[string]string{"a.md": "a\n"}, "")
	p := startSupervisor(t, manifest, bins.worker)
	serverName := func(meta mcp.Meta) any {
		info, _ := meta[mcp.MetaKeyServerInfo].(map[string]any)
		return info["name"]
	}
	for _, tc := range []struct {
		name string
		tool string
		args map[string]any
	}{
		{"read", "reader_read_text_file", map[string]any{"path": "a.md"}},
		{"tool error", "reader_read_text_file", map[string]any{"path": "gone.md"}},
		{"list", "reader_list_directory", map[string]any{"path": ""}},
		{"write", "writer_write_text_file", map[string]any{"path": "b.md", "content": "b\n"}},
	} {
		res := callTool(t, p.session, tc.tool, tc.args)
		if got := serverName(res.Meta); got != "fsmcp-supervisor" {
			t.Errorf("%s: serverInfo name %v, want fsmcp-supervisor (result %s)", tc.name, got, resultText(res))
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	list, err := p.session.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := serverName(list.Meta); got != "fsmcp-supervisor" {
		t.Errorf("tools/list: serverInfo name %v", got)
	}
}
