//go:build linux

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// erasManifest writes the manifest the host scenarios serve: reader (read
// tools on a tree with a needle on known lines, cursors keyed by keyVar, so
// a host that starts the server for each request can page), writer
// (write_text_file into an outbox), and stuck (read tools on a FUSE mount
// whose reads never return, with a 500 ms call_timeout). It returns the
// manifest, the read root, the outbox and the search hits expected.
func erasManifest(t *testing.T) (manifest, root, outbox string, hits []string) {
	t.Helper()
	root, _, hits = interopTree(t)
	outbox = t.TempDir()
	stuck, _ := stuckMount(t)
	manifest = filepath.Join(t.TempDir(), "fsmcp.yaml")
	writeFile(t, manifest, fmt.Sprintf(`version: 1
roots:
  - {name: reader, path: %q, include: ["**"], tools: read, cursor_key_env: `+keyVar+`}
  - {name: writer, path: %q, include: ["*.md"], tools: write}
  - {name: stuck, path: %q, include: ["**"], tools: read, call_timeout: 500ms}
`, root, outbox, stuck))
	return manifest, root, outbox, hits
}

// erasTools are the tools the manifest of erasManifest serves.
var erasTools = []string{
	"reader_list_directory", "reader_read_text_file", "reader_search_files", "reader_search_text",
	"stuck_list_directory", "stuck_read_text_file", "stuck_search_files", "stuck_search_text",
	"writer_write_text_file",
}

// TestSupervisorGoClientEras: the go-sdk client connects to the supervisor
// at each revision it serves, by server/discover (2026-07-28) or by
// initialize (the 2025 ones), and in each gets the same tools, reads a
// file, pages a search to its end, writes through the writer root, finds
// no write tool on the reader root, and sees a call past call_timeout as a
// tool error.
func TestSupervisorGoClientEras(t *testing.T) {
	bins := buildSupervisorBins(t)
	manifest, _, outbox, hits := erasManifest(t)
	key := keyVar + "=" + newKey(t, 32)
	for _, version := range []string{"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"} {
		t.Run(version, func(t *testing.T) {
			p := launchSupervisor(t, manifest, bins.worker, key)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			client := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
			s, err := client.Connect(ctx, &mcp.IOTransport{Reader: p.stdout, Writer: p.stdin}, &mcp.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatalf("connect at %s: %v\nstderr:\n%s", version, err, p.stderr)
			}
			p.session = s
			if got := s.InitializeResult().ProtocolVersion; got != version {
				t.Fatalf("negotiated %s, want %s", got, version)
			}
			hostScenario(t, s, outbox, hits, "written at "+version+"\n")
		})
	}
}

// hostScenario is what every host does through the supervisor of
// erasManifest.
func hostScenario(t *testing.T, s *mcp.ClientSession, outbox string, hits []string, body string) {
	t.Helper()
	var names []string
	for _, tool := range listToolNames(t, s) {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	if !slices.Equal(names, erasTools) {
		t.Errorf("tools %v, want %v (no write tool on the reader root)", names, erasTools)
	}
	if r := ok(t, s, "reader_read_text_file", map[string]any{"path": "a.txt"}); len(r.page.Items) != 1 || !strings.Contains(string(r.page.Items[0]), "the needle is here") {
		t.Errorf("read a.txt: %s", r.text)
	}
	var got []string
	args := map[string]any{"query": "needle", "limit": 1}
	for pages := 0; ; pages++ {
		if pages > 100 {
			t.Fatal("search_text never reached next_cursor null")
		}
		r := ok(t, s, "reader_search_text", args)
		for _, h := range items[struct {
			Path string `json:"path"`
			Line int    `json:"line"`
		}](t, r) {
			got = append(got, fmt.Sprintf("%s:%d", h.Path, h.Line))
		}
		if r.page.NextCursor == nil {
			break
		}
		args = map[string]any{"query": "needle", "limit": 1, "cursor": *r.page.NextCursor}
	}
	if !slices.Equal(got, hits) {
		t.Errorf("search_text hits %v, want %v", got, hits)
	}
	ok(t, s, "writer_write_text_file", map[string]any{"path": "report.md", "content": body})
	if data, err := os.ReadFile(filepath.Join(outbox, "report.md")); err != nil || string(data) != body {
		t.Errorf("report.md on disk: %q, %v; want %q", data, err, body)
	}
	fails(t, s, "stuck_read_text_file", map[string]any{"path": "stuck.txt"}, "root stuck: the call did not finish within 500ms (the root's call_timeout) and was cancelled")
}
