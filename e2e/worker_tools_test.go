//go:build linux

package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const changed = "the filesystem changed since this cursor was issued; start the traversal again"

// changedReading is the refusal of a page that a write overlapped.
const changedReading = "filesystem changed while reading"

// refusedAsChanged reports whether a tool error is one of the two answers
// to a change under a traversal: the cursor's state moved, or a write
// overlapped the page's reads.
func refusedAsChanged(text string) bool { return text == changed || text == changedReading }

// entryItem is a list_directory item.
type entryItem struct {
	Name string `json:"name"`
	Kind string `json:"kind"`
	Path string `json:"path"`
}

func paths(es []entryItem) string {
	var s []string
	for _, e := range es {
		s = append(s, e.Path+":"+e.Kind)
	}
	return strings.Join(s, " ")
}

// digest is a content_hash: "sha256:" and the SHA-256 of b in hex.
func digest(b []byte) string { return "sha256:" + sha(b) }

// emptyDigest is the content_hash of an empty page.
const emptyDigest = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// listDigest is the content_hash of a listing page: kind, NUL, path, LF
// per item.
func listDigest(es []entryItem) string {
	var b []byte
	for _, e := range es {
		b = append(b, e.Kind+"\x00"+e.Path+"\n"...)
	}
	return digest(b)
}

func TestListDirectory(t *testing.T) {
	root := tree(t, map[string]string{
		"a.txt":                 "a",
		"a/b.txt":               "b",
		"b.md":                  "b",
		"empty/unserved.bin":    "x",
		"lib/x.ts":              "x",
		"lib/deep/y.ts":         "y",
		"node_modules/pkg/i.js": "n",
		"secrets/k":             "k",
		".git/config":           "g",
		"only-excluded/.env":    "E=1",
		"only-excluded/key.pem": "p",
	})
	os.Mkdir(filepath.Join(root, "void"), 0o755)
	cs := worker(t, root, "--include", "**", "--exclude", "**/*.bin", "--exclude", "secrets")
	os.Symlink(filepath.Join(root, "lib"), filepath.Join(root, "link"))
	tests := []struct {
		path, dir, want string
	}{
		// Sorted by name, bytewise: "a" before "a.txt".
		{"", "", "a:directory a.txt:file b.md:file lib:directory"},
		{".", "", "a:directory a.txt:file b.md:file lib:directory"},
		{"lib", "lib", "lib/deep:directory lib/x.ts:file"},
		{"lib/", "lib", "lib/deep:directory lib/x.ts:file"},
		{"lib//deep/", "lib/deep", "lib/deep/y.ts:file"},
		{"lib/deep", "lib/deep", "lib/deep/y.ts:file"},
	}
	for _, tt := range tests {
		r := ok(t, cs, "list_directory", map[string]any{"path": tt.path})
		es := items[entryItem](t, r)
		if got := paths(es); got != tt.want {
			t.Errorf("list %q = %s, want %s", tt.path, got, tt.want)
		}
		for _, e := range es {
			if want := strings.TrimPrefix(tt.dir+"/"+e.Name, "/"); e.Path != want {
				t.Errorf("item %+v: path is not the prefix joined with the name", e)
			}
		}
		if r.page.NextCursor != nil {
			t.Errorf("list %q has a next cursor", tt.path)
		}
		if r.page.ContentHash != listDigest(es) {
			t.Errorf("content_hash %s is not the digest of kind NUL path LF per item", r.page.ContentHash)
		}
		checkPageText(t, r, es)
	}
	// Unserved, excluded, empty, missing, linked directories and files all
	// answer with the same empty page.
	for _, p := range []string{"empty", "void", "node_modules", "NODE_MODULES", "secrets", ".git", "only-excluded", "nope", "a.txt", "link", "link/deep", "nope/deeper"} {
		r := ok(t, cs, "list_directory", map[string]any{"path": p})
		if len(r.page.Items) != 0 || r.page.NextCursor != nil || r.page.ContentHash != emptyDigest {
			t.Errorf("list %q = %s, want the empty page", p, r.text)
		}
	}
	for _, p := range []string{"../x", "/etc", "./lib", "lib/.", `lib\deep`, "C:/x", "a\x00b", strings.Repeat("a", 1025)} {
		fails(t, cs, "list_directory", map[string]any{"path": p}, "path is not a relative path inside the root")
	}
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func TestListPagingAndCursorBinding(t *testing.T) {
	files := map[string]string{}
	for i := range 250 {
		files[filepath.Join("d", strings.Repeat("f", 1+i%3)+string(rune('a'+i%26))+strings.Repeat("0", i/26)+".txt")] = "x"
	}
	root := tree(t, files)
	cs := worker(t, root, "--include", "**", "--name", "alpha")
	var all []entryItem
	var cursor any
	pages := 0
	for {
		args := map[string]any{"path": "d", "limit": 40}
		if cursor != nil {
			args["cursor"] = cursor
		}
		r := ok(t, cs, "list_directory", args)
		pages++
		all = append(all, items[entryItem](t, r)...)
		if r.page.NextCursor == nil {
			break
		}
		cursor = *r.page.NextCursor
	}
	if len(all) != 250 || pages != 7 {
		t.Fatalf("paged %d entries over %d pages, want 250 over 7", len(all), pages)
	}
	for i := 1; i < len(all); i++ {
		if all[i-1].Name >= all[i].Name {
			t.Fatalf("not sorted at %d: %q >= %q", i, all[i-1].Name, all[i].Name)
		}
	}
	// A limit over 200 is clamped, not refused.
	if r := ok(t, cs, "list_directory", map[string]any{"path": "d", "limit": 5000}); len(r.page.Items) != 200 {
		t.Errorf("limit 5000 gave %d items, want 200", len(r.page.Items))
	}
	if r := ok(t, cs, "list_directory", map[string]any{"path": "d"}); len(r.page.Items) != 200 {
		t.Errorf("no limit gave %d items, want 200", len(r.page.Items))
	}
	first := ok(t, cs, "list_directory", map[string]any{"path": "d", "limit": 10})
	tok := *first.page.NextCursor
	if body, sig, found := strings.Cut(tok, "."); !found || !unpaddedB64URL(body) || !unpaddedB64URL(sig) {
		t.Fatalf("cursor %q is not <body>.<signature> in unpadded base64url", tok)
	}
	// Bound to tool, arguments and root; spelled exactly as issued.
	fails(t, cs, "list_directory", map[string]any{"path": "", "cursor": tok}, "cursor was issued for a different traversal")
	fails(t, cs, "search_files", map[string]any{"query": "f", "cursor": tok}, "cursor was issued for a different traversal")
	fails(t, cs, "list_directory", map[string]any{"path": "d", "cursor": tok + "A"}, "cursor is not valid")
	fails(t, cs, "list_directory", map[string]any{"path": "d", "cursor": tok + "="}, "cursor is not valid")
	other := worker(t, root, "--include", "**", "--name", "alpha")
	fails(t, other, "list_directory", map[string]any{"path": "d", "cursor": tok}, "cursor is not valid")
	// A file appearing deeper does not matter; one appearing in the listed
	// directory does.
	os.MkdirAll(filepath.Join(root, "d", "zz"), 0o755)
	os.WriteFile(filepath.Join(root, "d", "fa.txt.sub"), nil, 0o644)
	os.Remove(filepath.Join(root, "d", "fa.txt.sub"))
	second := ok(t, cs, "list_directory", map[string]any{"path": "d", "limit": 10})
	tok2 := *second.page.NextCursor
	os.WriteFile(filepath.Join(root, "d", "zz-later.txt"), nil, 0o644)
	fails(t, cs, "list_directory", map[string]any{"path": "d", "cursor": tok2}, changed)
}

func TestListSurvivesDeeperChange(t *testing.T) {
	files := map[string]string{"sub/a.txt": "a"}
	for i := range 30 {
		files["f"+strings.Repeat("x", i)+".txt"] = "x"
	}
	root := tree(t, files)
	cs := worker(t, root, "--include", "**")
	r := ok(t, cs, "list_directory", map[string]any{"limit": 5})
	os.WriteFile(filepath.Join(root, "sub", "b.txt"), []byte("new"), 0o644)
	ok(t, cs, "list_directory", map[string]any{"cursor": *r.page.NextCursor})
}

func TestSearchFiles(t *testing.T) {
	root := tree(t, map[string]string{
		"src/Main.go":       "",
		"src/main_test.go":  "",
		"docs/CAFÉ.md":      "",
		"docs/café.md":      "",
		"a|b.txt":           "",
		"node_modules/m.go": "",
	})
	cs := worker(t, root, "--include", "**")
	tests := []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"query": "main"}, "src/main_test.go"},
		{map[string]any{"query": "main", "case_insensitive": true}, "src/Main.go src/main_test.go"},
		{map[string]any{"any_of": []string{"Main", "café"}}, "docs/café.md src/Main.go"},
		{map[string]any{"query": "CAFÉ", "case_insensitive": true}, "docs/CAFÉ.md"},
		{map[string]any{"query": "a|b"}, "a|b.txt"},
		{map[string]any{"query": ".go", "path": "src"}, "src/Main.go src/main_test.go"},
		{map[string]any{"query": "m.go"}, ""},
	}
	for _, tt := range tests {
		r := ok(t, cs, "search_files", tt.args)
		var got []string
		for _, it := range items[struct{ Path string }](t, r) {
			got = append(got, it.Path)
		}
		if strings.Join(got, " ") != tt.want {
			t.Errorf("search_files %v = %v, want %s", tt.args, got, tt.want)
		}
	}
	// content_hash: path LF per item.
	r := ok(t, cs, "search_files", map[string]any{"query": "main", "case_insensitive": true})
	if r.page.ContentHash != digest([]byte("src/Main.go\nsrc/main_test.go\n")) {
		t.Errorf("content_hash %s is not the digest of path LF per item", r.page.ContentHash)
	}
	// A prefix that is a file, missing or excluded: the empty page.
	for _, p := range []string{"src/Main.go", "nope", "node_modules"} {
		if r := ok(t, cs, "search_files", map[string]any{"query": "m", "path": p}); len(r.page.Items) != 0 || r.page.ContentHash != emptyDigest {
			t.Errorf("search_files under %q = %s, want the empty page", p, r.text)
		}
	}
	// The refusals' texts are walked by TestContractErrors.
	// The matching set is bound; a matched file's contents are not.
	r = ok(t, cs, "search_files", map[string]any{"query": "main", "case_insensitive": true, "limit": 1})
	os.WriteFile(filepath.Join(root, "src", "Main.go"), []byte("package main"), 0o644)
	ok(t, cs, "search_files", map[string]any{"query": "main", "case_insensitive": true, "limit": 1, "cursor": *r.page.NextCursor})
	fails(t, cs, "search_files", map[string]any{"query": "main", "cursor": *r.page.NextCursor}, "cursor was issued for a different traversal")
	os.WriteFile(filepath.Join(root, "src", "main2.go"), nil, 0o644)
	fails(t, cs, "search_files", map[string]any{"query": "main", "case_insensitive": true, "limit": 1, "cursor": *r.page.NextCursor}, changed)
}

func TestWalkCeilings(t *testing.T) {
	files := map[string]string{}
	for i := range 20 {
		files[filepath.Join("d", string(rune('a'+i)), "f.txt")] = "x"
	}
	files["deep/1/2/3/4/5/f.txt"] = "x"
	root := tree(t, files)
	tests := []struct {
		flags []string
		want  string
	}{
		{[]string{"--max-files", "5"}, "file limit exceeded"},
		{[]string{"--max-directories", "5"}, "directory limit exceeded"},
		{[]string{"--max-entries", "10"}, "directory entry limit exceeded"},
		{[]string{"--max-depth", "3"}, "directory depth limit exceeded"},
	}
	for _, tt := range tests {
		cs := worker(t, root, append([]string{"--include", "**"}, tt.flags...)...)
		r := fails(t, cs, "search_files", map[string]any{"query": "f"}, tt.want)
		if r.text != tt.want {
			t.Errorf("%v: %q, want exactly %q", tt.flags, r.text, tt.want)
		}
	}
	// Depth counts from the root: listing deep/1/2/3/4 probes
	// deep/1/2/3/4/5, depth 6 from the root (1 from the listed directory).
	cs := worker(t, root, "--include", "**", "--max-depth", "5")
	if r := fails(t, cs, "list_directory", map[string]any{"path": "deep/1/2/3/4"}, "directory depth limit exceeded"); r.text != "directory depth limit exceeded" {
		t.Errorf("deep listing: %q", r.text)
	}
	cs = worker(t, root, "--include", "**", "--max-depth", "6")
	ok(t, cs, "list_directory", map[string]any{"path": "deep/1/2/3/4"})
	// The way down is charged: reaching deep/1/2/3 passes 4 directories.
	cs = worker(t, root, "--include", "**", "--max-directories", "3")
	fails(t, cs, "search_files", map[string]any{"query": "f", "path": "deep/1/2/3"}, "directory limit exceeded")
	cs = worker(t, root, "--include", "**", "--max-directories", "6")
	ok(t, cs, "search_files", map[string]any{"query": "f", "path": "deep/1/2/3"})
}

// checkPageText checks that a page's content text is its value as compact
// JSON, keys in the documented order (items, next_cursor, content_hash; an
// item's name, kind, path), and the same value as structuredContent.
func checkPageText(t testing.TB, r *result, es []entryItem) {
	t.Helper()
	var v struct {
		Items       []entryItem `json:"items"`
		NextCursor  *string     `json:"next_cursor"`
		ContentHash string      `json:"content_hash"`
	}
	if err := json.Unmarshal([]byte(r.text), &v); err != nil {
		t.Fatalf("content text %q: %v", r.text, err)
	}
	if again := string(mustJSON(v)); again != r.text {
		t.Errorf("content text\n%s\nis not, in key order and compact,\n%s", r.text, again)
	}
	if !reflect.DeepEqual(v.Items, es) && len(es)+len(v.Items) > 0 || !reflect.DeepEqual(v.NextCursor, r.page.NextCursor) || v.ContentHash != r.page.ContentHash {
		t.Errorf("content text %s differs from structuredContent", r.text)
	}
}

// unpaddedB64URL reports whether s is non-empty unpadded base64url.
func unpaddedB64URL(s string) bool {
	return s != "" && strings.Trim(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") == ""
}

func TestMaxFileBytes(t *testing.T) {
	root := tree(t, map[string]string{"small.txt": "abc", "big.txt": strings.Repeat("x", 100)})
	cs := worker(t, root, "--include", "**", "--max-file-bytes", "10")
	r := ok(t, cs, "list_directory", map[string]any{})
	if got := paths(items[entryItem](t, r)); got != "small.txt:file" {
		t.Errorf("list = %s", got)
	}
	fails(t, cs, "read_text_file", map[string]any{"path": "big.txt"}, "file exceeds the configured size limit")
}

// TestToolDefinitions reads tools/list as raw JSON: every tool has the
// title and all four annotations of docs/reference.md, Tools, spelled out,
// and the read tools' output schemas describe the items listed there.
func TestToolDefinitions(t *testing.T) {
	root := tree(t, map[string]string{"a.txt": "a"})
	p := startRaw(t, workerBin, "--root", root, "--include", "**")
	resp := p.roundTrip(t, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{`+newMeta+`}}`)
	var res struct {
		Result struct {
			Tools []struct {
				Name         string         `json:"name"`
				Title        string         `json:"title"`
				Description  string         `json:"description"`
				Annotations  map[string]any `json:"annotations"`
				OutputSchema struct {
					Properties map[string]struct {
						Items struct {
							Required []string `json:"required"`
						} `json:"items"`
					} `json:"properties"`
				} `json:"outputSchema"`
			} `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal(mustJSON(resp), &res); err != nil {
		t.Fatal(err)
	}
	read := map[string]any{"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false}
	want := map[string]struct {
		title string
		hints map[string]any
		items []string
	}{
		"list_directory":  {"List directory", read, []string{"name", "kind", "path"}},
		"search_files":    {"Search files", read, []string{"path"}},
		"search_text":     {"Search text", read, []string{"path", "line", "text"}},
		"read_text_file":  {"Read text file", read, []string{"byte_offset", "text"}},
		"write_text_file": {"Write text file", map[string]any{"readOnlyHint": false, "destructiveHint": true, "idempotentHint": true, "openWorldHint": false}, nil},
	}
	if len(res.Result.Tools) != len(want) {
		t.Fatalf("%d tools listed, want %d: %v", len(res.Result.Tools), len(want), resp)
	}
	for _, tool := range res.Result.Tools {
		w, found := want[tool.Name]
		if !found {
			t.Errorf("unexpected tool %q", tool.Name)
			continue
		}
		if tool.Title != w.title || tool.Description == "" {
			t.Errorf("%s: title %q, description %q; want title %q and a description", tool.Name, tool.Title, tool.Description, w.title)
		}
		for k, v := range w.hints {
			if got, present := tool.Annotations[k]; !present || got != v {
				t.Errorf("%s: annotation %s = %v (present %v), want %v", tool.Name, k, got, present, v)
			}
		}
		if w.items != nil && !reflect.DeepEqual(tool.OutputSchema.Properties["items"].Items.Required, w.items) {
			t.Errorf("%s: output items require %v, want %v", tool.Name, tool.OutputSchema.Properties["items"].Items.Required, w.items)
		}
	}
}
