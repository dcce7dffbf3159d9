package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The interop client lives in ../interop: a Node script on the TypeScript
// MCP client, installed from the committed lockfile (interop_install_test.go
// runs `npm ci` when it is missing).
const interopDir = "../interop"

func readJSON(t testing.TB, file string, v any) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

// interopPlan is what drive.mjs reads; interopReport is what it prints.
type interopPlan struct {
	Command      string            `json:"command"`
	Args         []string          `json:"args"`
	Env          map[string]string `json:"env"`
	Mode         any               `json:"mode"`
	Legacy       string            `json:"legacy,omitempty"`
	Prefix       string            `json:"prefix"`
	Tools        []string          `json:"tools"`
	Listing      []map[string]any  `json:"listing"`
	BigFile      string            `json:"bigFile"`
	Files        map[string]string `json:"files"`
	Needle       string            `json:"needle"`
	WriteTool    string            `json:"writeTool"`
	WritePath    string            `json:"writePath"`
	ReadBackTool string            `json:"readBackTool,omitempty"`
}

type interopReport struct {
	Legacy struct {
		Code      int      `json:"code"`
		Supported []string `json:"supported"`
		Protocol  string   `json:"protocol"`
		Tools     int      `json:"tools"`
	} `json:"legacy"`
	Tools      []string `json:"tools"`
	ListPages  int      `json:"listPages"`
	ReadPages  int      `json:"readPages"`
	SearchHits []string `json:"searchHits"`
	ToolError  string   `json:"toolError"`
	Write      struct {
		Path  string `json:"path"`
		Bytes int    `json:"bytes"`
	} `json:"write"`
}

const interopWritten = "written by the TypeScript client\n"

// interopTree is the read root every scenario serves: a file that takes
// several 2048-byte chunks (multi-byte and escape-heavy text included), a
// subfolder, and a needle on known lines.
func interopTree(t *testing.T) (root string, files map[string]string, hits []string) {
	t.Helper()
	var big strings.Builder
	for i := 1; i <= 400; i++ {
		line := fmt.Sprintf("%04d café <tag> & \"quoted\" \\ text", i)
		if i%97 == 0 {
			line += " needle"
			hits = append(hits, fmt.Sprintf("big.txt:%d", i))
		}
		big.WriteString(line + "\n")
	}
	files = map[string]string{
		"a.txt":    "the needle is here\n",
		"big.txt":  big.String(),
		"sub/b.md": "nothing\nneedle again\n",
	}
	hits = append([]string{"a.txt:1"}, append(hits, "sub/b.md:2")...)
	return tree(t, files), files, hits
}

// TestInteropTypeScriptClient drives both binaries with the TypeScript MCP
// client: its default legacy handshake is refused with -32022, then it
// negotiates 2026-07-28 through server/discover (pinned, and in its auto
// mode, which probes a disposable sibling process first), lists the tools
// following nextCursor, pages list_directory, read_text_file and
// search_text through next_cursor, gets a tool error as a result, and
// writes a file that the test then finds on disk.
func TestInteropTypeScriptClient(t *testing.T) {
	node := interopNode(t)
	modes := map[string]any{"pin": map[string]string{"pin": "2026-07-28"}, "auto": "auto"}
	for _, server := range []string{"worker", "supervisor"} {
		for _, mode := range []string{"pin", "auto"} {
			t.Run(server+"/"+mode, func(t *testing.T) {
				root, files, hits := interopTree(t)
				plan := interopPlan{
					Mode: modes[mode], Files: map[string]string{"big.txt": files["big.txt"]}, BigFile: "big.txt", Needle: "needle",
					Listing:   []map[string]any{{"name": "a.txt", "kind": "file", "path": "a.txt"}, {"name": "big.txt", "kind": "file", "path": "big.txt"}, {"name": "sub", "kind": "directory", "path": "sub"}},
					WritePath: "report.md",
				}
				written := filepath.Join(root, "report.md")
				if server == "worker" {
					plan.Command, plan.Args, plan.Env = workerBin, []string{"--root", root, "--include", "**"}, map[string]string{}
					plan.Tools = []string{"list_directory", "search_files", "search_text", "read_text_file", "write_text_file"}
					plan.WriteTool, plan.ReadBackTool = "write_text_file", "read_text_file"
				} else {
					outbox := t.TempDir()
					written = filepath.Join(outbox, "report.md")
					manifest := filepath.Join(t.TempDir(), "fsmcp.yaml")
					writeFile(t, manifest, fmt.Sprintf("version: 1\nroots:\n  - name: reader\n    path: %s\n    include: ['**']\n    tools: read\n  - name: writer\n    path: %s\n    include: ['*.md']\n    tools: write\n", root, outbox))
					// Start it exactly as the printed host entry says.
					s := mcpEntry(t, supervisorBin, "--manifest", manifest)
					plan.Command, plan.Args, plan.Env = s.Command, s.Args, s.Env
					plan.Prefix = "reader_"
					plan.Tools = []string{"reader_list_directory", "reader_search_files", "reader_search_text", "reader_read_text_file", "writer_write_text_file"}
					plan.WriteTool = "writer_write_text_file"
					plan.Legacy = "served"
				}
				rep := runInterop(t, node, plan)
				switch {
				case server == "worker" && (rep.Legacy.Code != -32022 || !slices.Equal(rep.Legacy.Supported, []string{"2026-07-28"})):
					t.Errorf("legacy initialize answered %+v, want -32022 naming 2026-07-28", rep.Legacy)
				case server == "supervisor" && (rep.Legacy.Protocol != "2025-11-25" || rep.Legacy.Tools != len(plan.Tools)):
					t.Errorf("legacy initialize: %+v, want 2025-11-25 and %d tools", rep.Legacy, len(plan.Tools))
				}
				if rep.ListPages != 3 || rep.ReadPages < 5 {
					t.Errorf("pages: list %d (want 3 of 1 entry), read %d (want at least 5 chunks of 2048 bytes)", rep.ListPages, rep.ReadPages)
				}
				if !slices.Equal(rep.SearchHits, hits) {
					t.Errorf("search_text hits %v, want %v", rep.SearchHits, hits)
				}
				if rep.ToolError != "path is not a relative path inside the root" {
					t.Errorf("tool error %q", rep.ToolError)
				}
				got, err := os.ReadFile(written)
				if err != nil || string(got) != interopWritten || rep.Write.Path != "report.md" || rep.Write.Bytes != len(interopWritten) {
					t.Errorf("write: report %+v, on disk %q (%v)", rep.Write, got, err)
				}
				if server == "supervisor" {
					if _, err := os.Stat(filepath.Join(root, "report.md")); err == nil {
						t.Errorf("the write landed in the read root")
					}
				}
			})
		}
	}
}

// runInterop writes plan to a file, runs drive.mjs on it and decodes the
// report it prints.
func runInterop(t *testing.T, node string, plan interopPlan) interopReport {
	t.Helper()
	planFile := filepath.Join(t.TempDir(), "plan.json")
	data, _ := json.Marshal(plan)
	if err := os.WriteFile(planFile, data, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(interopDir, "drive.mjs"), planFile)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node drive.mjs: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	if stderr.Len() > 0 {
		t.Logf("stderr:\n%s", stderr.String())
	}
	var rep interopReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("report %q: %v", stdout.String(), err)
	}
	return rep
}
