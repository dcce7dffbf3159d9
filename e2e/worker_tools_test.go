package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
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

type entryItem struct {
	Path string `json:"path"`
	Type string `json:"type"`
}

func paths(es []entryItem) string {
	var s []string
	for _, e := range es {
		s = append(s, e.Path+":"+e.Type)
	}
	return strings.Join(s, " ")
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
	tests := []struct {
		path, want string
	}{
		{"", "a.txt:file a:directory b.md:file lib:directory"},
		{".", "a.txt:file a:directory b.md:file lib:directory"},
		{"lib", "lib/deep:directory lib/x.ts:file"},
		{"lib/deep", "lib/deep/y.ts:file"},
	}
	for _, tt := range tests {
		r := ok(t, cs, "list_directory", map[string]any{"path": tt.path})
		if got := paths(items[entryItem](t, r)); got != tt.want {
			t.Errorf("list %q = %s, want %s", tt.path, got, tt.want)
		}
		if r.page.NextCursor != nil {
			t.Errorf("list %q has a next cursor", tt.path)
		}
		b, _ := json.Marshal(r.page.Items)
		if r.page.ContentHash != sha(b) {
			t.Errorf("content_hash %s is not the SHA-256 of the items", r.page.ContentHash)
		}
	}
	// Unserved, excluded, empty and missing directories all answer alike.
	for _, p := range []string{"empty", "void", "node_modules", "NODE_MODULES", "secrets", ".git", "only-excluded", "nope", "a.txt"} {
		fails(t, cs, "list_directory", map[string]any{"path": p}, "no served directory")
	}
	for _, p := range []string{"../x", "/etc", "./lib", "lib/.", `lib\deep`, "lib//deep", "C:/x", "a\x00b"} {
		r := call(t, cs, "list_directory", map[string]any{"path": p})
		if !r.isError || strings.Contains(r.text, root) {
			t.Errorf("list %q: %v %q", p, r.isError, r.text)
		}
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
		if all[i-1].Path >= all[i].Path {
			t.Fatalf("not sorted at %d: %q >= %q", i, all[i-1].Path, all[i].Path)
		}
	}
	first := ok(t, cs, "list_directory", map[string]any{"path": "d", "limit": 10})
	tok := *first.page.NextCursor
	// Bound to tool, arguments and root.
	fails(t, cs, "list_directory", map[string]any{"path": "", "cursor": tok}, "invalid cursor")
	fails(t, cs, "search_files", map[string]any{"query": "f", "cursor": tok}, "invalid cursor")
	fails(t, cs, "list_directory", map[string]any{"path": "d", "cursor": tok + "A"}, "invalid cursor")
	fails(t, cs, "list_directory", map[string]any{"path": "d", "cursor": strings.TrimRight(tok, "A") + "="}, "invalid cursor")
	other := worker(t, root, "--include", "**", "--name", "alpha")
	fails(t, other, "list_directory", map[string]any{"path": "d", "cursor": tok}, "invalid cursor")
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
	many := make([]string, 17)
	for i := range many {
		many[i] = "x"
	}
	for _, bad := range []map[string]any{
		{},
		{"query": ""},
		{"any_of": []string{}},
		{"any_of": many},
		{"any_of": []string{"a", ""}},
		{"query": "a", "any_of": []string{"b"}},
		{"query": "a\nb"},
		{"query": strings.Repeat("q", 1025)},
		{"query": 5},
		{"query": "a", "bogus": true},
	} {
		if r := call(t, cs, "search_files", bad); !r.isError {
			t.Errorf("search_files %v accepted", bad)
		}
	}
	// The matching set is bound; a matched file's contents are not.
	r := ok(t, cs, "search_files", map[string]any{"query": "main", "case_insensitive": true, "limit": 1})
	os.WriteFile(filepath.Join(root, "src", "Main.go"), []byte("package main"), 0o644)
	ok(t, cs, "search_files", map[string]any{"query": "main", "case_insensitive": true, "limit": 1, "cursor": *r.page.NextCursor})
	fails(t, cs, "search_files", map[string]any{"query": "main", "cursor": *r.page.NextCursor}, "invalid cursor")
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
		{[]string{"--max-files", "5"}, "--max-files"},
		{[]string{"--max-directories", "5"}, "--max-directories"},
		{[]string{"--max-entries", "10"}, "--max-entries"},
		{[]string{"--max-depth", "3"}, "--max-depth"},
	}
	for _, tt := range tests {
		cs := worker(t, root, append([]string{"--include", "**"}, tt.flags...)...)
		fails(t, cs, "search_files", map[string]any{"query": "f"}, tt.want)
	}
}

func TestMaxFileBytes(t *testing.T) {
	root := tree(t, map[string]string{"small.txt": "abc", "big.txt": strings.Repeat("x", 100)})
	cs := worker(t, root, "--include", "**", "--max-file-bytes", "10")
	r := ok(t, cs, "list_directory", nil)
	if got := paths(items[entryItem](t, r)); got != "small.txt:file" {
		t.Errorf("list = %s", got)
	}
	fails(t, cs, "read_text_file", map[string]any{"path": "big.txt"}, "--max-file-bytes")
}
