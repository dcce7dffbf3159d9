//go:build linux

package e2e

import (
	"encoding/json"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type chunkItem struct {
	ByteOffset int64  `json:"byte_offset"`
	Text       string `json:"text"`
}

// readAll pages through a file and checks every page's invariants: chunk
// offsets contiguous, content_hash over the page's text, the whole decoded
// result under the ceiling.
func readAll(t *testing.T, cs *mcp.ClientSession, args map[string]any, ceiling int) (string, int) {
	t.Helper()
	startLine, hasStart := args["start_line"]
	var b strings.Builder
	pages := 0
	var next int64 = -1
	for {
		r := ok(t, cs, "read_text_file", args)
		pages++
		var page strings.Builder
		for _, c := range items[chunkItem](t, r) {
			if next >= 0 && c.ByteOffset != next {
				t.Fatalf("chunk at %d, want %d", c.ByteOffset, next)
			}
			if len(c.Text) > 2048 {
				t.Fatalf("chunk of %d bytes", len(c.Text))
			}
			next = c.ByteOffset + int64(len(c.Text))
			page.WriteString(c.Text)
		}
		if r.page.ContentHash != digest([]byte(page.String())) {
			t.Fatalf("page %d: content_hash is not SHA-256 of its text", pages)
		}
		size, _ := json.Marshal(r.raw)
		if len(size) > ceiling {
			t.Fatalf("page %d: decoded result is %d bytes, ceiling %d", pages, len(size), ceiling)
		}
		b.WriteString(page.String())
		if r.page.NextCursor == nil {
			return b.String(), pages
		}
		args = map[string]any{"path": args["path"], "cursor": *r.page.NextCursor}
		if hasStart {
			args["start_line"] = startLine
		}
	}
}

func TestReadReconstructsExactly(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	var mixed strings.Builder
	for mixed.Len() < 200000 {
		switch rng.Intn(6) {
		case 0:
			mixed.WriteString("plain ascii line\n")
		case 1:
			mixed.WriteString("quotes \" and \\ backslashes <tags> & amps\r\n")
		case 2:
			mixed.WriteString("ctrl \x01\x02\x1f\t\x00 bytes\n")
		case 3:
			mixed.WriteString("ünïcödé – 日本語 😀 \u2028\u2029\n")
		case 4:
			mixed.WriteString(strings.Repeat("😀", rng.Intn(1000)))
		default:
			mixed.WriteString(strings.Repeat("\x00", rng.Intn(3000)))
		}
	}
	files := map[string]string{
		"empty.txt": "",
		"bom.csv":   "\uFEFFname,value\nx,1\n",
		"mixed.txt": mixed.String(),
		"nul.txt":   strings.Repeat("\x00", 50000),
		"emoji.txt": strings.Repeat("😀", 30000),
	}
	root := tree(t, files)
	for _, flags := range [][]string{
		{},
		{"--max-read-bytes", "4"},
		{"--max-read-bytes", "5"},
		{"--max-read-bytes", "1048576"},
		{"--max-read-bytes", "1048576", "--max-result-bytes", "1048576"},
		{"--max-read-bytes", "500000", "--max-result-bytes", "1000000"},
	} {
		ceiling := 48000
		for i, f := range flags {
			if f == "--max-result-bytes" {
				ceiling = atoi(flags[i+1])
			}
		}
		cs := worker(t, root, append([]string{"--include", "**"}, flags...)...)
		for name, want := range files {
			if len(flags) > 0 && atoi(flags[1]) < 10 && len(want) > 20000 {
				continue // four-byte pages over large files take too many round trips
			}
			got, _ := readAll(t, cs, map[string]any{"path": name}, ceiling)
			if got != want {
				t.Errorf("%v %s: reconstruction differs (%d vs %d bytes)", flags, name, len(got), len(want))
			}
		}
	}
}

func TestReadBOMKept(t *testing.T) {
	cs := worker(t, tree(t, map[string]string{"b.csv": "\uFEFFa,b\n"}), "--include", "**")
	r := ok(t, cs, "read_text_file", map[string]any{"path": "b.csv"})
	if got := items[chunkItem](t, r); len(got) != 1 || got[0].Text != "\uFEFFa,b\n" {
		t.Fatalf("BOM file read as %+v", got)
	}
}

func TestReadStartLine(t *testing.T) {
	var b strings.Builder
	b.WriteString("h\xe9ader in latin-1\n")
	for i := 1; i <= 5000; i++ {
		b.WriteString("row ")
		b.WriteString(itoa(i))
		b.WriteString("\n")
	}
	body := b.String()
	root := tree(t, map[string]string{"data.csv": body, "short.txt": "a\nb\n"})
	cs := worker(t, root, "--include", "**", "--max-scan-bytes", "16384")
	// The invalid header is not served when reading from line 2.
	r := ok(t, cs, "read_text_file", map[string]any{"path": "data.csv", "start_line": 2})
	c := items[chunkItem](t, r)
	if len(c) == 0 || !strings.HasPrefix(c[0].Text, "row 1\n") || c[0].ByteOffset != int64(strings.Index(body, "row 1\n")) {
		t.Fatalf("start_line 2 first chunk %+v", c[0])
	}
	got, _ := readAll(t, cs, map[string]any{"path": "data.csv", "start_line": 2}, 48000)
	if got != body[strings.Index(body, "row 1\n"):] {
		t.Fatal("start_line 2 does not reconstruct the rest of the file")
	}
	fails(t, cs, "read_text_file", map[string]any{"path": "data.csv"}, "file is not valid UTF-8")
	// The cursor is bound to start_line.
	fails(t, cs, "read_text_file", map[string]any{"path": "data.csv", "start_line": 3, "cursor": *r.page.NextCursor}, "cursor was issued for a different traversal")
	// Seeking is charged against --max-scan-bytes.
	fails(t, cs, "read_text_file", map[string]any{"path": "data.csv", "start_line": 4900}, "start_line is further into the file than one page may scan")
	// Past the end: the empty page, with no cursor.
	for _, line := range []any{3, 4, 1e15} {
		r := ok(t, cs, "read_text_file", map[string]any{"path": "short.txt", "start_line": line})
		if len(r.page.Items) != 0 || r.page.NextCursor != nil || r.page.ContentHash != emptyDigest {
			t.Errorf("start_line %v past the end = %s, want the empty page", line, r.text)
		}
	}
	fails(t, cs, "read_text_file", map[string]any{"path": "short.txt", "start_line": 0}, "start_line must be a positive integer")
	r = ok(t, cs, "read_text_file", map[string]any{"path": "short.txt", "start_line": 2})
	if c := items[chunkItem](t, r); len(c) != 1 || c[0].Text != "b\n" || c[0].ByteOffset != 2 {
		t.Fatalf("start_line 2 of short.txt = %+v", c)
	}
}

func TestReadInvalidUTF8OnlyWhenServed(t *testing.T) {
	good := strings.Repeat("ok line\n", 4000) // 32000 bytes
	root := tree(t, map[string]string{"tail-bad.txt": good + "bad \xff byte\n"})
	cs := worker(t, root, "--include", "**")
	r := ok(t, cs, "read_text_file", map[string]any{"path": "tail-bad.txt"})
	if r.page.NextCursor == nil {
		t.Fatal("expected more pages")
	}
	args := map[string]any{"path": "tail-bad.txt", "cursor": *r.page.NextCursor}
	for {
		r := call(t, cs, "read_text_file", args)
		if r.isError {
			if r.text != "file is not valid UTF-8" {
				t.Fatalf("error %q", r.text)
			}
			return
		}
		if r.page.NextCursor == nil {
			t.Fatal("an invalid file was served whole")
		}
		args["cursor"] = *r.page.NextCursor
	}
}

func TestReadCursorStateBinding(t *testing.T) {
	body := strings.Repeat("0123456789abcdef", 4096)
	root := tree(t, map[string]string{"f.txt": body, "other.txt": "o"})
	cs := worker(t, root, "--include", "**")
	r := ok(t, cs, "read_text_file", map[string]any{"path": "f.txt"})
	tok := *r.page.NextCursor
	os.WriteFile(filepath.Join(root, "other.txt"), []byte("changed"), 0o644)
	ok(t, cs, "read_text_file", map[string]any{"path": "f.txt", "cursor": tok})
	fails(t, cs, "read_text_file", map[string]any{"path": "other.txt", "cursor": tok}, "cursor was issued for a different traversal")
	// Same bytes, new file: physical identity changed, so the cursor fails
	// in the default mode.
	tmp := filepath.Join(root, "f.new")
	os.WriteFile(tmp, []byte(body), 0o644)
	os.Rename(tmp, filepath.Join(root, "f.txt"))
	fails(t, cs, "read_text_file", map[string]any{"path": "f.txt", "cursor": tok}, changed)
}

func TestReadRefusals(t *testing.T) {
	root := tree(t, map[string]string{"a.txt": "a", "dir/b.txt": "b", ".env": "S=1", "lib/x.go": "x", "docs/d.md": "d"})
	os.Symlink(filepath.Join(root, "a.txt"), filepath.Join(root, "link.txt"))
	os.Symlink(filepath.Join(root, "dir"), filepath.Join(root, "linkdir"))
	cs := worker(t, root, "--include", "*.txt", "--include", "dir/**", "--include", "lib/**", "--include", "linkdir/**", "--exclude", "lib/**")
	for _, tt := range []struct{ path, want string }{
		{"missing.txt", "path is not a readable regular file"},
		{"dir", "path is not served by this root"},
		{"dir/missing.txt", "path is not a readable regular file"},
		{"link.txt", "path is not a readable regular file"},
		{".env", "path matches an --exclude pattern of this root"},
		{"lib/x.go", "path matches an --exclude pattern of this root"},
		{"lib/missing.go", "path matches an --exclude pattern of this root"},
		{"docs/d.md", "path is not served by this root"},
		{"linkdir/b.txt", "path is not served by this root"},
		{"../a.txt", "path is not a relative path inside the root"},
		{"/etc/passwd", "path is not a relative path inside the root"},
	} {
		r := fails(t, cs, "read_text_file", map[string]any{"path": tt.path}, tt.want)
		if r.text != tt.want {
			t.Errorf("read %q: %q, want exactly %q", tt.path, r.text, tt.want)
		}
	}
	// A trailing slash is dropped, as everywhere.
	ok(t, cs, "read_text_file", map[string]any{"path": "a.txt/"})
	for _, bad := range []map[string]any{{}, {"path": ""}, {"path": 1}, {"path": "a.txt", "limit": 0}, {"path": "a.txt", "limit": 9}, {"path": "a.txt", "limit": nil}} {
		fails(t, cs, "read_text_file", bad, "Input validation error: Invalid arguments for tool read_text_file: ")
	}
	// The read limit defaults to, and is bounded by, ceil(--max-read-bytes/2048).
	cs = worker(t, tree(t, map[string]string{"big.txt": strings.Repeat("x", 20000)}), "--include", "**", "--max-read-bytes", "5000")
	if r := ok(t, cs, "read_text_file", map[string]any{"path": "big.txt"}); len(r.page.Items) != 3 {
		t.Errorf("default limit gave %d chunks, want 3", len(r.page.Items))
	}
	ok(t, cs, "read_text_file", map[string]any{"path": "big.txt", "limit": 3})
	fails(t, cs, "read_text_file", map[string]any{"path": "big.txt", "limit": 4}, "Input validation error: Invalid arguments for tool read_text_file: limit")
}

// TestResultCeilingWorstCase fills a page with characters that escape the
// most, for the smallest ceiling and the largest read budget.
func TestResultCeilingWorstCase(t *testing.T) {
	body := strings.Repeat("\x00\"<\\\u2028", 40000)
	if !utf8.ValidString(body) {
		t.Fatal("test body is not UTF-8")
	}
	root := tree(t, map[string]string{"w.txt": body})
	cs := worker(t, root, "--include", "**", "--max-read-bytes", "1048576")
	got, pages := readAll(t, cs, map[string]any{"path": "w.txt"}, 48000)
	if got != body {
		t.Fatal("worst-case file does not reconstruct")
	}
	t.Logf("%d bytes in %d pages", len(body), pages)
}
