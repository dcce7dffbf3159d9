//go:build linux

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// wordsRoots are the roots of the tool-error cases: each with the worker
// options that serve it alone, and its manifest entry.
var wordsRoots = []struct {
	name, entry string
	flags       []string
}{
	{"reader", "{name: reader, path: ws, include: ['**'], exclude: ['secret/**'], tools: read, limits: {max_files: 5, max_file_bytes: 100}}",
		[]string{"--include", "**", "--exclude", "secret/**", "--max-files", "5", "--max-file-bytes", "100"}},
	{"writer", "{name: writer, path: out, include: ['*.md'], tools: write, limits: {max_write_bytes: 10}}",
		[]string{"--include", "*.md", "--tools", "write", "--max-write-bytes", "10"}},
	{"deep", "{name: deep, path: ws, include: ['**'], tools: read, limits: {max_depth: 1}}", []string{"--include", "**", "--max-depth", "1"}},
	{"dirs", "{name: dirs, path: ws, include: ['**'], tools: read, limits: {max_directories: 1}}", []string{"--include", "**", "--max-directories", "1"}},
	{"entries", "{name: entries, path: ws, include: ['**'], tools: read, limits: {max_entries: 3}}", []string{"--include", "**", "--max-entries", "3"}},
}

// wordsCases are worker tool errors of docs/reference.md, Errors, as the
// worker alone says them and as the supervisor relays them: in the
// manifest's words (include:, exclude:, limits.<key> and its value) and
// naming the tool as the host called it.
var wordsCases = []struct {
	root, tool string
	args       map[string]any
	worker     string // the text of docs/reference.md, Errors
	supervisor string
}{
	{"reader", "read_text_file", map[string]any{"path": "secret/s.md"}, "path matches an --exclude pattern of this root",
		"path matches an exclude pattern of root reader (the manifest's exclude: list, or the built-in list unless default_exclude: false)"},
	{"reader", "search_files", map[string]any{"query": "md"}, "file limit exceeded",
		"file limit exceeded: the walk of root reader selects more than 5 files (limits.max_files: 5); narrow the call to a smaller folder with its path argument, or raise limits.max_files in the manifest"},
	{"reader", "read_text_file", map[string]any{"path": "big.md"}, "file exceeds the configured size limit",
		"file exceeds the size limit of root reader (limits.max_file_bytes: 100)"},
	{"reader", "read_text_file", map[string]any{"path": 5}, "Input validation error: Invalid arguments for tool read_text_file: path must be a string",
		"Input validation error: Invalid arguments for tool reader_read_text_file: path must be a string"},
	{"writer", "write_text_file", map[string]any{"path": "note.txt", "content": "x"}, "path matches no --include pattern of this root",
		"path matches no include: pattern of root writer"},
	{"writer", "write_text_file", map[string]any{"path": "note.md", "content": "more than ten bytes"}, "content exceeds the 10-byte write limit",
		"content exceeds the 10-byte write limit of root writer (limits.max_write_bytes)"},
	{"deep", "search_files", map[string]any{"query": "md"}, "directory depth limit exceeded",
		"directory depth limit exceeded: the walk of root deep goes deeper than 1 directory levels (limits.max_depth: 1); narrow the call to a smaller folder with its path argument, or raise limits.max_depth in the manifest"},
	{"dirs", "search_files", map[string]any{"query": "md"}, "directory limit exceeded",
		"directory limit exceeded: the walk of root dirs enters more than 1 directories (limits.max_directories: 1); narrow the call to a smaller folder with its path argument, or raise limits.max_directories in the manifest"},
	{"entries", "list_directory", map[string]any{"path": ""}, "directory entry limit exceeded",
		"directory entry limit exceeded: the walk of root entries reads more than 3 directory entries (limits.max_entries: 3); narrow the call to a smaller folder with its path argument, or raise limits.max_entries in the manifest"},
	// Not one of the texts to reword: the same through both.
	{"reader", "read_text_file", map[string]any{"path": "absent.md"}, "path is not a readable regular file", "path is not a readable regular file"},
}

// wordsTree writes the tree the cases run on and its manifest.
func wordsTree(t *testing.T) (dir, manifest string) {
	t.Helper()
	dir = t.TempDir()
	for _, f := range []string{"f1.md", "f2.md", "f3.md", "f4.md", "f5.md", "f6.md", "secret/s.md", "a/b/deep.md"} {
		writeFile(t, filepath.Join(dir, "ws", f), "md\n")
	}
	writeFile(t, filepath.Join(dir, "ws", "big.md"), strings.Repeat("big\n", 50))
	writeFile(t, filepath.Join(dir, "out", ".keep"), "")
	var b strings.Builder
	b.WriteString("version: 1\nroots:\n")
	for _, r := range wordsRoots {
		b.WriteString("  - " + r.entry + "\n")
	}
	manifest = filepath.Join(dir, "fsmcp.yaml")
	writeFile(t, manifest, b.String())
	return dir, manifest
}

// TestSupervisorErrorsInManifestWords: a worker's tool error about its
// --include and --exclude, a walk ceiling or another configured limit,
// relayed to a host of either era, speaks of the manifest's include:,
// exclude: and limits with their values, and names the tool as the host
// called it; the worker alone keeps the texts of docs/reference.md.
func TestSupervisorErrorsInManifestWords(t *testing.T) {
	bins := buildSupervisorBins(t)
	if !bins.real {
		t.Fatal("the supervisor's worker is not the real fsmcp-worker; build ./cmd/fsmcp-worker")
	}
	dir, manifest := wordsTree(t)
	t.Run("worker alone", func(t *testing.T) {
		for _, r := range wordsRoots {
			path := filepath.Join(dir, "ws")
			if r.name == "writer" {
				path = filepath.Join(dir, "out")
			}
			cs := worker(t, path, r.flags...)
			for _, tc := range wordsCases {
				if tc.root == r.name {
					if got := call(t, cs, tc.tool, tc.args); !got.isError || got.text != tc.worker {
						t.Errorf("%s %s(%v): %q (error %v), want %q", r.name, tc.tool, tc.args, got.text, got.isError, tc.worker)
					}
				}
			}
		}
	})
	for _, version := range []string{"2026-07-28", "2025-11-25"} {
		t.Run("supervisor at "+version, func(t *testing.T) {
			p := launchSupervisor(t, manifest, bins.worker)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			s, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil).
				Connect(ctx, &mcp.IOTransport{Reader: p.stdout, Writer: p.stdin}, &mcp.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatalf("connect: %v\nstderr:\n%s", err, p.stderr)
			}
			p.session = s
			for _, tc := range wordsCases {
				res := callTool(t, s, tc.root+"_"+tc.tool, tc.args)
				if got := resultText(res); !res.IsError || got != tc.supervisor {
					t.Errorf("%s_%s(%v)\n got %q (error %v)\nwant %q", tc.root, tc.tool, tc.args, got, res.IsError, tc.supervisor)
				}
			}
		})
	}
}

// TestSupervisorErrorsInManifestWordsSDKPath: a call the relay leaves to
// the SDK's handling (here one whose params spell a key with an escape)
// gets its error in the same words.
func TestSupervisorErrorsInManifestWordsSDKPath(t *testing.T) {
	bins := buildSupervisorBins(t)
	_, manifest := wordsTree(t)
	p := launchSupervisor(t, manifest, bins.worker)
	lines := bufio.NewReader(p.stdout)
	send := func(line string) {
		t.Helper()
		if _, err := p.stdin.Write([]byte(line + "\n")); err != nil {
			t.Fatal(err)
		}
	}
	read := func() string {
		t.Helper()
		got := make(chan string, 1)
		go func() { l, _ := lines.ReadString('\n'); got <- l }()
		select {
		case l := <-got:
			return l
		case <-time.After(20 * time.Second):
			t.Fatalf("no answer in 20s; stderr:\n%s", p.stderr)
			return ""
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}`)
	read()
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for i, tc := range wordsCases[:2] {
		args, err := json.Marshal(tc.args)
		if err != nil {
			t.Fatal(err)
		}
		send(`{"jsonrpc":"2.0","id":` + strconv.Itoa(2+i) + `,"method":"tools/call","params":{"n\u0061me":"` + tc.root + "_" + tc.tool + `","arguments":` + string(args) + `}}`)
		var resp struct {
			Result struct {
				Content []struct{ Text string }
				IsError bool
			}
		}
		line := read()
		if err := json.Unmarshal([]byte(line), &resp); err != nil || !resp.Result.IsError || len(resp.Result.Content) != 1 || resp.Result.Content[0].Text != tc.supervisor {
			t.Errorf("%s_%s through the SDK: %s (%v)\nwant the text %q", tc.root, tc.tool, line, err, tc.supervisor)
		}
	}
}
