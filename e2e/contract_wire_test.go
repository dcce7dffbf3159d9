//go:build linux

package e2e

import (
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// wireFiles is the root the path and annotation rows run in
// (docs/reference.md, Paths and Tools).
var wireFiles = map[string]string{"top.txt": "needle top\n", "lib/x/y.txt": "needle deep\n"}

// wireServers starts the worker and the supervisor (one root "ws" with
// every tool) on a fresh copy of wireFiles, each twice: fed raw lines, and
// through the go-sdk client. It returns the root's host path too.
func wireServers(t *testing.T) (raw []*protoTarget, sdk map[string]*mcp.ClientSession, prefix map[string]string, root string) {
	t.Helper()
	dir := t.TempDir()
	root = filepath.Join(dir, "ws")
	for p, body := range wireFiles {
		writeFile(t, filepath.Join(root, p), body)
	}
	manifest := filepath.Join(dir, "fsmcp.yaml")
	writeFile(t, manifest, "version: 1\nroots:\n  - {name: ws, path: ws, include: ['**'], tools: all}\n")
	sup := buildSupervisorBins(t).supervisor
	raw = []*protoTarget{
		startTarget(t, "worker", "", workerBin, "--root", root, "--include", "**"),
		startTarget(t, "supervisor", "ws_", sup, "--manifest", manifest, "--worker", workerBin),
	}
	sdk = map[string]*mcp.ClientSession{
		"worker":     worker(t, root, "--include", "**"),
		"supervisor": startSupervisor(t, manifest, workerBin).session,
	}
	return raw, sdk, map[string]string{"worker": "", "supervisor": "ws_"}, root
}

// wantTools are the titles and annotations of docs/reference.md, Tools.
var wantTools = func() map[string]struct {
	title string
	hints map[string]any
} {
	read := map[string]any{"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false}
	write := map[string]any{"readOnlyHint": false, "destructiveHint": true, "idempotentHint": true, "openWorldHint": false}
	return map[string]struct {
		title string
		hints map[string]any
	}{
		"list_directory":  {"List directory", read},
		"search_files":    {"Search files", read},
		"search_text":     {"Search text", read},
		"read_text_file":  {"Read text file", read},
		"write_text_file": {"Write text file", write},
	}
}()

// TestContractAnnotations: in tools/list of both binaries, as written on
// the wire and as the go-sdk client reads it, each tool's annotations are
// exactly the four hints of docs/reference.md, Tools, and its title is at
// the tool's top level only.
func TestContractAnnotations(t *testing.T) {
	raw, sdk, prefix, _ := wireServers(t)
	for _, p := range raw {
		t.Run(p.name+"/raw", func(t *testing.T) {
			p.send(t, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{`+newMeta+`}}`)
			line := p.recvLine(t)
			var r struct {
				Result struct {
					Tools []struct {
						Name        string                     `json:"name"`
						Title       string                     `json:"title"`
						Annotations map[string]json.RawMessage `json:"annotations"`
					} `json:"tools"`
				} `json:"result"`
			}
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				t.Fatalf("tools/list: %v: %.300s", err, line)
			}
			var names []string
			for _, tool := range r.Result.Tools {
				names = append(names, tool.Name)
				w := wantTools[strings.TrimPrefix(tool.Name, p.prefix)]
				if tool.Title != w.title {
					t.Errorf("%s: title %q, want %q", tool.Name, tool.Title, w.title)
				}
				got := map[string]any{}
				for k, v := range tool.Annotations {
					var x any
					if err := json.Unmarshal(v, &x); err != nil {
						t.Fatal(err)
					}
					got[k] = x
				}
				if !reflect.DeepEqual(got, w.hints) {
					t.Errorf("%s: annotations %v, want exactly %v", tool.Name, got, w.hints)
				}
			}
			checkToolNames(t, p.prefix, names)
		})
	}
	for name, cs := range sdk {
		t.Run(name+"/sdk", func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			res, err := cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tool := range res.Tools {
				names = append(names, tool.Name)
				w := wantTools[strings.TrimPrefix(tool.Name, prefix[name])]
				a := tool.Annotations
				if tool.Title != w.title || a == nil || a.Title != "" {
					t.Errorf("%s: title %q, annotations %+v; want title %q at the top level only", tool.Name, tool.Title, a, w.title)
					continue
				}
				var got map[string]any
				if err := json.Unmarshal(mustJSON(a), &got); err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, w.hints) {
					t.Errorf("%s: annotations %v, want exactly %v", tool.Name, got, w.hints)
				}
			}
			checkToolNames(t, prefix[name], names)
		})
	}
}

// checkToolNames wants exactly the five tools, each named with prefix.
func checkToolNames(t *testing.T, prefix string, names []string) {
	t.Helper()
	var want []string
	for n := range wantTools {
		want = append(want, prefix+n)
	}
	slices.Sort(want)
	slices.Sort(names)
	if !slices.Equal(names, want) {
		t.Errorf("tools %v, want %v", names, want)
	}
}
