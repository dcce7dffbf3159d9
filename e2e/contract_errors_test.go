//go:build linux

package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fsmcp/fsmcp/worker/cursor"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// contractFixture is the root every row of TestContractErrors works in,
// and the workers started on it, one per configuration, as rows ask.
type contractFixture struct {
	t        *testing.T // the running row's
	top      *testing.T // the test's: workers live as long as it
	root     string
	key      string
	sessions map[string]*mcp.ClientSession
}

// contractServers are the worker configurations the rows use.
var contractServers = map[string][]string{
	"main":    {"--include", "**", "--exclude", "secret*", "--max-scan-bytes", "16384"},
	"txt":     {"--include", "*.txt"},
	"sub":     {"--include", "sub/**"},
	"small":   {"--include", "**", "--max-file-bytes", "50"},
	"files":   {"--include", "**", "--max-files", "2"},
	"dirs":    {"--include", "**", "--max-directories", "1"},
	"depth":   {"--include", "**", "--max-depth", "2"},
	"entries": {"--include", "**", "--max-entries", "3"},
}

func (f *contractFixture) session(name string) *mcp.ClientSession {
	f.t.Helper()
	if cs := f.sessions[name]; cs != nil {
		return cs
	}
	var cs *mcp.ClientSession
	t := f.top
	switch name {
	case "det": // deterministic cursors, so a test can sign one
		cs = detWorker(t, f.root, f.key)
	case "det-hash": // deterministic, with almost no hashing allowed
		cs = detWorker(t, f.root, f.key, "--max-cursor-hash-bytes", "5")
	case "other": // the same configuration in another process
		cs = worker(t, f.root, contractServers["main"]...)
	case "locked": // as uid 65534 in a root it may read but not write
		needRoot(f.t)
		locked := reachableDir(t, 0, 0, 0o755)
		cs = workerAs(t, nobody, nobody, locked, "--include", "*.md")
	default:
		cs = worker(t, f.root, contractServers[name]...)
	}
	f.sessions[name] = cs
	return cs
}

// firstCursor is the next_cursor of a tool's first page.
func (f *contractFixture) firstCursor(srv, tool string, args map[string]any) string {
	f.t.Helper()
	r := ok(f.t, f.session(srv), tool, args)
	if r.page.NextCursor == nil {
		f.t.Fatalf("%s(%v) gave no cursor", tool, args)
	}
	return *r.page.NextCursor
}

// with is args and the key-value pairs kv.
func with(args map[string]any, kv ...any) map[string]any {
	out := map[string]any{}
	for k, v := range args {
		out[k] = v
	}
	for i := 0; i < len(kv); i += 2 {
		out[kv[i].(string)] = kv[i+1]
	}
	return out
}

// contractRow is one row of docs/reference.md's tables: the server it runs on,
// its setup (which returns the call's arguments: a map, or raw JSON), and
// the exact text the call must fail with (a prefix for schema errors,
// which go on to name the argument).
type contractRow struct {
	when   string
	srv    string
	tool   string
	args   func(f *contractFixture) any
	want   string
	prefix string // set for schema errors: the text must also contain this
}

// static is a setup that only returns args.
func static(args any) func(*contractFixture) any { return func(*contractFixture) any { return args } }

const schemaPrefix = "Input validation error: Invalid arguments for tool "

// TestContractErrors walks docs/reference.md's Errors table, its Cursors
// table and the protocol rows that are tool errors, row by row, in the
// tables' order: each row sets its case up on real files, calls
// the built worker over stdio, and wants the row's text exactly.
func TestContractErrors(t *testing.T) {
	root := tree(t, map[string]string{
		"a.txt":          "alpha\nbeta\n",
		"docs/d.md":      "doc\n",
		"secret.txt":     "s\n",
		"latin1.txt":     "caf\xe9\n",
		"big.txt":        strings.Repeat("x", 100),
		"rows.txt":       strings.Repeat("row\n", 10000),
		"sub/b.txt":      "b\n",
		"d1/d2/d3/f.txt": "f\n",
		"churn.txt":      strings.Repeat("c", 1<<20),
	})
	os.Symlink(filepath.Join(root, "a.txt"), filepath.Join(root, "leaf.txt"))
	os.Symlink(filepath.Join(root, "sub"), filepath.Join(root, "linkdir"))
	os.Mkdir(filepath.Join(root, "adir.md"), 0o755)
	f := &contractFixture{t: t, top: t, root: root, key: newKey(t, 32), sessions: map[string]*mcp.ClientSession{}}

	read := func(path string) func(*contractFixture) any { return static(map[string]any{"path": path}) }
	write := func(path, content string) func(*contractFixture) any {
		return static(map[string]any{"path": path, "content": content})
	}
	listArgs := map[string]any{"path": "", "limit": 1}
	rows := []contractRow{
		// Tool error texts, in the table's order.
		{"path: parent segment", "main", "read_text_file", read("../a.txt"), "path is not a relative path inside the root", ""},
		{"path: absolute", "main", "list_directory", static(map[string]any{"path": "/etc"}), "path is not a relative path inside the root", ""},
		{"path: dot segment", "main", "search_files", static(map[string]any{"query": "a", "path": "./sub"}), "path is not a relative path inside the root", ""},
		{"path: NUL", "main", "search_text", static(map[string]any{"query": "a", "path": "sub\x00"}), "path is not a relative path inside the root", ""},
		{"path: backslash", "main", "read_text_file", read(`sub\b.txt`), "path is not a relative path inside the root", ""},
		{"path: drive prefix", "main", "read_text_file", read("C:/a.txt"), "path is not a relative path inside the root", ""},
		{"path: over 1024 characters", "main", "read_text_file", read(strings.Repeat("é", 1025)), "path is not a relative path inside the root", ""},
		{"read: no include selects it", "txt", "read_text_file", read("docs/d.md"), "path is not served by this root", ""},
		{"read: a symbolic-link ancestor", "main", "read_text_file", read("linkdir/b.txt"), "path is not served by this root", ""},
		{"read: excluded", "main", "read_text_file", read("secret.txt"), "path matches an --exclude pattern of this root", ""},
		{"read: excluded, by name before any filesystem call", "main", "read_text_file", read("secret-missing.txt"), "path matches an --exclude pattern of this root", ""},
		{"read: missing", "main", "read_text_file", read("missing.txt"), "path is not a readable regular file", ""},
		{"read: a directory", "main", "read_text_file", read("sub"), "path is not a readable regular file", ""},
		{"read: a link", "main", "read_text_file", read("leaf.txt"), "path is not a readable regular file", ""},
		{"read: over --max-file-bytes", "small", "read_text_file", read("big.txt"), "file exceeds the configured size limit", ""},
		{"read: not UTF-8", "main", "read_text_file", read("latin1.txt"), "file is not valid UTF-8", ""},
		// "one result item exceeds the result ceiling" and "result ceiling
		// is too small" cannot be reached: see the check after the rows.
		{"neither query nor any_of", "main", "search_files", static(map[string]any{}), "query must be a non-empty string", ""},
		{"empty query", "main", "search_text", static(map[string]any{"query": ""}), "query must be a non-empty string", ""},
		{"query not a string", "main", "search_text", static(map[string]any{"query": 5}), "query must be a non-empty string", ""},
		{"term over 256 bytes", "main", "search_text", static(map[string]any{"query": strings.Repeat("q", 257)}), "query must be one line of at most 256 UTF-8 bytes", ""},
		{"term with LF", "main", "search_files", static(map[string]any{"any_of": []string{"a", "b\nc"}}), "query must be one line of at most 256 UTF-8 bytes", ""},
		{"term with CR", "main", "search_text", static(map[string]any{"query": "a\rb"}), "query must be one line of at most 256 UTF-8 bytes", ""},
		{"query and any_of", "main", "search_text", static(map[string]any{"query": "a", "any_of": []string{"b"}}), "pass either query or any_of, not both", ""},
		{"any_of empty", "main", "search_files", static(map[string]any{"any_of": []string{}}), "any_of must be a non-empty array of strings", ""},
		{"any_of not strings", "main", "search_text", static(map[string]any{"any_of": []any{"a", 1}}), "any_of must be a non-empty array of strings", ""},
		{"any_of not an array", "main", "search_text", static(map[string]any{"any_of": "a"}), "any_of must be a non-empty array of strings", ""},
		{"17 terms", "main", "search_text", static(map[string]any{"any_of": strings.Split("a b c d e f g h i j k l m n o p q", " ")}), "any_of accepts at most 16 terms", ""},
		{"case_insensitive not a boolean", "main", "search_files", static(map[string]any{"query": "a", "case_insensitive": "yes"}), "case_insensitive must be a boolean", ""},
		{"start_line 0", "main", "read_text_file", static(map[string]any{"path": "a.txt", "start_line": 0}), "start_line must be a positive integer", ""},
		{"start_line not an integer", "main", "read_text_file", static(map[string]any{"path": "a.txt", "start_line": 1.5}), "start_line must be a positive integer", ""},
		{"start_line a string", "main", "read_text_file", static(map[string]any{"path": "a.txt", "start_line": "2"}), "start_line must be a positive integer", ""},
		{"start_line past the scan budget", "main", "read_text_file", static(map[string]any{"path": "rows.txt", "start_line": 9000}), "start_line is further into the file than one page may scan", ""},
		{"deterministic hashing over the ceiling", "det-hash", "read_text_file", read("a.txt"), "deterministic cursor hashing exceeds the configured byte ceiling", ""},
		{"a file changed while it was read", "main", "read_text_file", nil, "filesystem changed while reading", ""},
		{"write: bad name", "main", "write_text_file", write("A.txt", "x"), "path must be one lowercase basename of letters, digits, dots, underscores, or hyphens", ""},
		{"write: a path", "main", "write_text_file", write("sub/c.txt", "x"), "path must be one lowercase basename of letters, digits, dots, underscores, or hyphens", ""},
		{"write: too large", "main", "write_text_file", write("w.txt", strings.Repeat("x", 65537)), "content exceeds the 65536-byte write limit", ""},
		{"write: excluded", "main", "write_text_file", write("secret.md", "x"), "path matches an --exclude pattern of this root", ""},
		{"write: not included", "txt", "write_text_file", write("w.md", "x"), "path matches no --include pattern of this root", ""},
		{"write: no include reaches the root", "sub", "write_text_file", write("w.md", "x"),
			"no --include pattern of this root matches a file in the root itself, so no write can be accepted; a write names one basename and lands in the root, so add an --include pattern without a directory prefix, such as '**'", ""},
		{"write: destination a directory", "main", "write_text_file", write("adir.md", "x"), "destination is not a writable regular file", ""},
		{"write: destination a link", "main", "write_text_file", write("leaf.txt", "x"), "destination is not a writable regular file", ""},
		{"write: an I/O error", "locked", "write_text_file", write("w.md", "x"), "write failed", ""},
		{"walk: file limit", "files", "search_files", static(map[string]any{"query": "t"}), "file limit exceeded", ""},
		{"walk: depth limit", "depth", "search_files", static(map[string]any{"query": "f"}), "directory depth limit exceeded", ""},
		{"walk: directory limit", "dirs", "list_directory", static(map[string]any{}), "directory limit exceeded", ""},
		{"walk: directory entry limit", "entries", "search_text", static(map[string]any{"query": "a"}), "directory entry limit exceeded", ""},

		// Cursors, in the order they are checked.
		{"cursor: not a string", "main", "list_directory", static(map[string]any{"cursor": 7}), "cursor is not valid", ""},
		{"cursor: empty", "main", "list_directory", static(map[string]any{"cursor": ""}), "cursor is not valid", ""},
		{"cursor: too long", "main", "list_directory", static(map[string]any{"cursor": strings.Repeat("A", 4097)}), "cursor is not valid", ""},
		{"cursor: malformed", "main", "search_files", static(map[string]any{"query": "a", "cursor": "not.a cursor"}), "cursor is not valid", ""},
		{"cursor: bad signature", "main", "list_directory", func(f *contractFixture) any {
			tok := f.firstCursor("main", "list_directory", listArgs)
			body, sig, _ := strings.Cut(tok, ".")
			flip := map[byte]byte{'A': 'B'}[sig[0]]
			if flip == 0 {
				flip = 'A'
			}
			return with(listArgs, "cursor", body+"."+string(flip)+sig[1:])
		}, "cursor is not valid", ""},
		{"cursor: another process's key", "other", "list_directory", func(f *contractFixture) any {
			return with(listArgs, "cursor", f.firstCursor("main", "list_directory", listArgs))
		}, "cursor is not valid", ""},
		{"cursor: another tool", "main", "search_files", func(f *contractFixture) any {
			return map[string]any{"query": "t", "cursor": f.firstCursor("main", "list_directory", listArgs)}
		}, "cursor was issued for a different traversal", ""},
		{"cursor: other arguments", "main", "list_directory", func(f *contractFixture) any {
			return map[string]any{"path": "sub", "cursor": f.firstCursor("main", "list_directory", listArgs)}
		}, "cursor was issued for a different traversal", ""},
		{"cursor: the bound state moved", "main", "list_directory", func(f *contractFixture) any {
			tok := f.firstCursor("main", "list_directory", listArgs)
			writeFile(f.t, filepath.Join(f.root, "new.txt"), "new\n")
			f.t.Cleanup(func() { os.Remove(filepath.Join(f.root, "new.txt")) })
			return with(listArgs, "cursor", tok)
		}, "the filesystem changed since this cursor was issued; start the traversal again", ""},
		{"cursor: position beyond the data", "det", "read_text_file", func(f *contractFixture) any {
			args := map[string]any{"path": "rows.txt"}
			tok := f.firstCursor("det", "read_text_file", args)
			return with(args, "cursor", resign(f.t, f.key, tok, cursor.Scope{Tool: "read_text_file", Args: map[string]any{"path": "rows.txt", "start_line": 1}}, "o", 1<<40))
		}, "cursor position is not valid", ""},

		// Protocol rows that are tool errors: the schema-error prefix,
		// naming the argument.
		{"unknown argument", "main", "list_directory", static(map[string]any{"bogus": 1}), schemaPrefix + "list_directory: ", "bogus"},
		{"argument keys match case exactly", "main", "read_text_file", static(map[string]any{"pAth": "a.txt"}), schemaPrefix + "read_text_file: ", "pAth"},
		{"duplicate argument", "main", "read_text_file", static(json.RawMessage(`{"path":"a.txt","path":"rows.txt"}`)), schemaPrefix + "read_text_file: ", "path"},
		{"null argument", "main", "search_text", static(map[string]any{"query": "a", "path": nil}), schemaPrefix + "search_text: ", "path"},
		{"limit null", "main", "list_directory", static(map[string]any{"limit": nil}), schemaPrefix + "list_directory: ", "limit"},
		{"wrong type", "main", "read_text_file", static(map[string]any{"path": 5}), schemaPrefix + "read_text_file: ", "path"},
		{"missing required argument", "main", "read_text_file", static(map[string]any{}), schemaPrefix + "read_text_file: ", "path"},
		{"empty read path", "main", "read_text_file", read(""), schemaPrefix + "read_text_file: ", "path"},
		{"limit 0", "main", "search_files", static(map[string]any{"query": "a", "limit": 0}), schemaPrefix + "search_files: ", "limit"},
		{"limit not an integer", "main", "list_directory", static(map[string]any{"limit": 2.5}), schemaPrefix + "list_directory: ", "limit"},
		{"read limit over ceil(--max-read-bytes/2048)", "main", "read_text_file", static(map[string]any{"path": "a.txt", "limit": 9}), schemaPrefix + "read_text_file: ", "limit"},
		{"write content missing", "main", "write_text_file", static(map[string]any{"path": "w.md"}), schemaPrefix + "write_text_file: ", "content"},
		{"write content not a string", "main", "write_text_file", static(map[string]any{"path": "w.md", "content": 1}), schemaPrefix + "write_text_file: ", "content"},
	}
	for _, row := range rows {
		t.Run(row.when, func(t *testing.T) {
			f.t = t
			defer func() { f.t = nil }()
			var got string
			if row.args == nil {
				got = changedWhileReading(t, f)
			} else {
				r, err := callAny(f.session(row.srv), row.tool, row.args(f))
				if err != nil {
					t.Fatalf("%s: %v", row.tool, err)
				}
				if !r.IsError {
					t.Fatalf("%s succeeded, want %q", row.tool, row.want)
				}
				got = r.Content[0].(*mcp.TextContent).Text
			}
			switch {
			case row.prefix == "" && got != row.want:
				t.Errorf("%s: %q, want %q", row.tool, got, row.want)
			case row.prefix != "" && (!strings.HasPrefix(got, row.want) || !strings.Contains(got[len(row.want):], row.prefix)):
				t.Errorf("%s: %q, want %q naming %q", row.tool, got, row.want, row.prefix)
			}
		})
	}
	f.t = t

	// The two result-ceiling rows cannot be reached: --max-result-bytes is
	// at least 48000, which holds an empty page and the largest item (a
	// 1024-character path, 1024 bytes of evidence, every byte escaped;
	// TestResultCeilingWorstCase reads the worst case). A smaller ceiling
	// is refused at startup.
	out, err := exec.Command(workerBin, "--root", root, "--include", "**", "--max-result-bytes", "47999").CombinedOutput()
	if ee, isExit := err.(*exec.ExitError); !isExit || ee.ExitCode() != 64 || !strings.Contains(string(out), "limits are not valid") {
		t.Errorf("--max-result-bytes 47999: %v %q, want exit 64 and limits are not valid", err, out)
	}
}

// callAny calls a tool with arguments given as a map or as raw JSON.
func callAny(cs *mcp.ClientSession, tool string, args any) (*mcp.CallToolResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
}

// cursorPosition is the position a cursor carries, decoded from its body
// (the part before the signature).
func cursorPosition(t *testing.T, tok string) map[string]any {
	t.Helper()
	bodyPart, _, _ := strings.Cut(tok, ".")
	raw, _ := base64.RawURLEncoding.DecodeString(bodyPart)
	var e struct {
		P map[string]any `json:"p"`
	}
	if err := json.Unmarshal(raw, &e); err != nil || e.P == nil {
		t.Fatalf("cursor body %q: %v", raw, err)
	}
	return e.P
}

// resign signs tok's position again with one field set, as whoever holds
// the key could.
func resign(t *testing.T, key, tok string, scope cursor.Scope, field string, v any) string {
	t.Helper()
	pos := cursorPosition(t, tok)
	pos[field] = v
	k, _ := base64.RawURLEncoding.DecodeString(key)
	c, err := cursor.New(k, "root")
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.Encode(scope, pos)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// changedWhileReading reads churn.txt while a writer rewrites it in place
// with other lengths, until a page is refused, and returns that refusal's
// text (or fails after 20 s without one).
func changedWhileReading(t *testing.T, f *contractFixture) string {
	cs := f.session("main")
	path := filepath.Join(f.root, "churn.txt")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			os.WriteFile(path, []byte(strings.Repeat("c", 1<<20-i%64)), 0o644)
		}
	}()
	defer func() { close(stop); wg.Wait() }()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		r := call(t, cs, "read_text_file", map[string]any{"path": "churn.txt"})
		if r.isError {
			return r.text
		}
	}
	t.Fatal("no read of churn.txt was refused in 20 s of rewrites")
	return ""
}
