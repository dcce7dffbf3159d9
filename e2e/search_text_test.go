//go:build linux

package e2e

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// textHit is one search_text item.
type textHit struct {
	Path string `json:"path"`
	Line int    `json:"line"`
	Text string `json:"text"`
}

func (h textHit) String() string { return fmt.Sprintf("%s:%d:%q", h.Path, h.Line, h.Text) }

// maxEvidence is the longest text of a search_text item, in bytes.
const maxEvidence = 1024

// wantEvidence is the reported text of a line: no trailing CR, at most 1024
// bytes, cut on a UTF-8 boundary.
func wantEvidence(line string) string {
	line = strings.TrimSuffix(line, "\r")
	if len(line) > maxEvidence {
		cut := maxEvidence
		for cut > 0 && !utf8.RuneStart(line[cut]) {
			cut--
		}
		line = line[:cut]
	}
	return line
}

// expectHits computes, independently of the server, the matches of terms in
// files (given in path order), all lines being decodable or skipped.
func expectHits(paths []string, files map[string]string, terms []string, fold bool) []textHit {
	var out []textHit
	for _, p := range paths {
		body := files[p]
		lines := strings.Split(body, "\n")
		if strings.HasSuffix(body, "\n") {
			lines = lines[:len(lines)-1]
		}
		for i, l := range lines {
			hay := l
			if fold {
				hay = asciiLower(l)
			}
			hit := false
			for _, term := range terms {
				if fold {
					term = asciiLower(term)
				}
				if strings.Contains(hay, term) {
					hit = true
				}
			}
			// A matching line is reported when its text is UTF-8.
			if ev := wantEvidence(l); hit && utf8.ValidString(ev) {
				out = append(out, textHit{p, i + 1, ev})
			}
		}
	}
	return out
}

func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// searchAll follows search_text cursors to the end, checking every page
// against the result ceiling. It returns the hits, the number of pages and
// the number of empty pages that carried a cursor.
func searchAll(t *testing.T, cs *mcp.ClientSession, args map[string]any, ceiling int) (hits []textHit, pages, empty int) {
	t.Helper()
	a := map[string]any{}
	for k, v := range args {
		a[k] = v
	}
	largest := 0
	defer func() { t.Logf("largest page: %d bytes of %d", largest, ceiling) }()
	for {
		r := ok(t, cs, "search_text", a)
		pages++
		b, err := json.Marshal(r.raw)
		if err != nil {
			t.Fatal(err)
		}
		largest = max(largest, len(b))
		if len(b) > ceiling {
			t.Fatalf("page %d: decoded result is %d bytes, ceiling %d", pages, len(b), ceiling)
		}
		if r.page.ContentHash == "" {
			t.Fatalf("page %d: no content_hash", pages)
		}
		hs := items[textHit](t, r)
		hits = append(hits, hs...)
		if r.page.NextCursor == nil {
			return hits, pages, empty
		}
		if len(hs) == 0 {
			empty++
		}
		if pages > 5000 {
			t.Fatal("no end after 5000 pages")
		}
		a["cursor"] = *r.page.NextCursor
	}
}

func sameHits(t *testing.T, got, want []textHit) {
	t.Helper()
	if slices.Equal(got, want) {
		return
	}
	seen := map[textHit]int{}
	for _, h := range got {
		seen[h]++
		if seen[h] == 2 {
			t.Errorf("duplicate hit %v", h)
		}
	}
	for _, h := range want {
		if seen[h] == 0 {
			t.Errorf("missing hit %v", h)
		}
	}
	t.Fatalf("got %d hits, want %d (first difference shown above, or order differs)\n got %.300v\nwant %.300v", len(got), len(want), got, want)
}

func TestSearchTextItems(t *testing.T) {
	long := "x" + strings.Repeat("é", 600) + " needle" // cut at 1024 falls inside é
	files := map[string]string{
		"a.txt":     "one needle\ntwo\nthree NEEDLE\nneedle pin and pin needle\n",
		"b.txt":     "crlf needle\r\nbare cr\rneedle\r\nno newline at end needle",
		"b/c.txt":   "pin\n" + long + "\n",
		"b/d/e.txt": "\n\n\nneedle on four\n",
		"c.md":      "CAFÉ needle? no: CAFÉ\ncafé\nCafÉ\n",
		"z.txt":     "nothing here\n",
		"empty.txt": "",
	}
	root := tree(t, files)
	cs := worker(t, root, "--include", "**")
	order := []string{"a.txt", "b.txt", "b/c.txt", "b/d/e.txt", "c.md", "empty.txt", "z.txt"}

	tests := []struct {
		name  string
		args  map[string]any
		terms []string
		fold  bool
		want  []textHit
	}{
		{"query", map[string]any{"query": "needle"}, []string{"needle"}, false, []textHit{
			{"a.txt", 1, "one needle"},
			{"a.txt", 4, "needle pin and pin needle"},
			{"b.txt", 1, "crlf needle"},
			{"b.txt", 2, "bare cr\rneedle"},
			{"b.txt", 3, "no newline at end needle"},
			{"b/c.txt", 2, long[:1023]},
			{"b/d/e.txt", 4, "needle on four"},
			{"c.md", 1, "CAFÉ needle? no: CAFÉ"},
		}},
		{"any_of once per line", map[string]any{"any_of": []string{"pin", "needle", "and"}}, []string{"pin", "needle", "and"}, false, nil},
		{"folded", map[string]any{"query": "NeEdLe", "case_insensitive": true}, []string{"NeEdLe"}, true, nil},
		{"ascii-only fold", map[string]any{"query": "cafÉ", "case_insensitive": true}, []string{"cafÉ"}, true, []textHit{
			{"c.md", 1, "CAFÉ needle? no: CAFÉ"},
			{"c.md", 3, "CafÉ"},
		}},
		{"exact case", map[string]any{"query": "CAFÉ"}, []string{"CAFÉ"}, false, []textHit{{"c.md", 1, "CAFÉ needle? no: CAFÉ"}}},
		{"prefix", map[string]any{"query": "needle", "path": "b"}, nil, false, []textHit{
			{"b/c.txt", 2, long[:1023]},
			{"b/d/e.txt", 4, "needle on four"},
		}},
		{"no match", map[string]any{"query": "absent"}, []string{"absent"}, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := tt.want
			if want == nil && tt.terms != nil {
				want = expectHits(order, files, tt.terms, tt.fold)
			}
			if tt.want != nil && tt.terms != nil {
				sameHits(t, expectHits(order, files, tt.terms, tt.fold), tt.want) // the oracle agrees
			}
			got, _, _ := searchAll(t, cs, tt.args, 48000)
			if want == nil {
				want = []textHit{}
			}
			if got == nil {
				got = []textHit{}
			}
			sameHits(t, got, want)
			for _, h := range got {
				if len(h.Text) > maxEvidence || !utf8.ValidString(h.Text) || strings.HasSuffix(h.Text, "\r") {
					t.Errorf("bad evidence %v", h)
				}
			}
		})
	}
	// One page, items exactly as listed, hash over them.
	r := ok(t, cs, "search_text", map[string]any{"query": "pin"})
	if r.page.NextCursor != nil || len(r.page.Items) != 2 {
		t.Fatalf("pin: %d items, cursor %v", len(r.page.Items), r.page.NextCursor)
	}
	if got := fmt.Sprint(items[textHit](t, r)); got != `[a.txt:4:"needle pin and pin needle" b/c.txt:1:"pin"]` {
		t.Fatalf("pin: %s", got)
	}
	if len(r.obj) != 3 {
		t.Fatalf("envelope keys %v, want items, next_cursor, content_hash", r.obj)
	}
	// content_hash: path NUL line NUL text LF per item.
	if want := digest([]byte("a.txt\x004\x00needle pin and pin needle\nb/c.txt\x001\x00pin\n")); r.page.ContentHash != want {
		t.Fatalf("content_hash %s, want %s", r.page.ContentHash, want)
	}
	// path may name one file; a missing, excluded or linked prefix gives
	// the empty page.
	if got, _, _ := searchAll(t, cs, map[string]any{"query": "needle", "path": "b.txt"}, 48000); len(got) != 3 || got[0].Path != "b.txt" {
		t.Fatalf("search of one file: %v", got)
	}
	os.Symlink(filepath.Join(root, "b"), filepath.Join(root, "blink"))
	for _, p := range []string{"nope", "blink", "blink/c.txt", "b/nope/deeper", "node_modules"} {
		r := ok(t, cs, "search_text", map[string]any{"query": "needle", "path": p})
		if len(r.page.Items) != 0 || r.page.NextCursor != nil || r.page.ContentHash != emptyDigest {
			t.Errorf("search under %q = %s, want the empty page", p, r.text)
		}
	}
}

func TestSearchTextNotUTF8(t *testing.T) {
	pad := strings.Repeat("filler line\n", 800) // > 8 KiB
	files := map[string]string{
		"bad-line.txt":     "needle ok\nneedle \xff bad\nneedle after\n",
		"nul-and-bad.txt":  "needle \x00 nul\nneedle \xfe bad\nneedle three\n",
		"nul-bad-same.bin": "head\nneedle \x00\xff\nneedle text\n",
		"nul-only.txt":     "needle \x00 zero\n",
		"late-binary.txt":  pad + "needle \x00\xff\nneedle late\n",
		"latin1.csv":       "needle,caf\xe9\nneedle,plain\n",
		"split-rune.txt":   "needle \xe2\x82\n",
		// NUL in the head on a line whose rune is cut by the 8 KiB mark.
		"head-cut.txt": "needle " + strings.Repeat("a", 8190-7) + "\x00\xc3\xa9 tail\nneedle two\n",
		// NUL in the head, the bad byte on the same line past 8 KiB: the
		// file is text, and the line's reported text is UTF-8.
		"bad-past-head.txt": "needle \x00 " + strings.Repeat("x", 9000) + "\xff\nneedle ok\n",
		// The bad byte within the reported text loses the line.
		"bad-in-evidence.txt": "needle " + strings.Repeat("x", 1000) + "\xff" + strings.Repeat("x", 2000) + "\nneedle ok\n",
	}
	root := tree(t, files)
	cs := worker(t, root, "--include", "**")
	got, _, _ := searchAll(t, cs, map[string]any{"query": "needle"}, 48000)
	want := []textHit{
		{"bad-in-evidence.txt", 2, "needle ok"},
		{"bad-line.txt", 1, "needle ok"},
		{"bad-line.txt", 3, "needle after"},
		{"bad-past-head.txt", 1, wantEvidence(files["bad-past-head.txt"])},
		{"bad-past-head.txt", 2, "needle ok"},
		{"head-cut.txt", 1, wantEvidence(files["head-cut.txt"])},
		{"head-cut.txt", 2, "needle two"},
		{"late-binary.txt", 802, "needle late"},
		{"latin1.csv", 2, "needle,plain"},
		{"nul-and-bad.txt", 1, "needle \x00 nul"},
		{"nul-and-bad.txt", 3, "needle three"},
		{"nul-only.txt", 1, "needle \x00 zero"},
	}
	sameHits(t, got, want)
}

// TestSearchTextGiantLine: a line longer than several scan budgets and read
// buffers, with matches straddling the buffer edges, is reported once, with
// the first 1024 bytes of the line, under a small and a large scan budget.
func TestSearchTextGiantLine(t *testing.T) {
	const w = 1 << 18
	giant := strings.Repeat("a", w-3) + "needle" + strings.Repeat("b", w/2) + "needle" + strings.Repeat("c", 3*w) + "\n"
	root := tree(t, map[string]string{"g.txt": "needle first\n" + giant + "needle last\n"})
	want := []textHit{{"g.txt", 1, "needle first"}, {"g.txt", 2, strings.Repeat("a", maxEvidence)}, {"g.txt", 3, "needle last"}}
	for _, scan := range []string{"16384", "4194304"} {
		cs := worker(t, root, "--include", "**", "--max-scan-bytes", scan)
		got, _, _ := searchAll(t, cs, map[string]any{"query": "needle"}, 48000)
		sameHits(t, got, want)
	}
}

func TestSearchTextQueryRules(t *testing.T) {
	root := tree(t, map[string]string{"a.txt": "needle\n"})
	cs := worker(t, root, "--include", "**")
	many := make([]string, 17)
	for i := range many {
		many[i] = fmt.Sprintf("t%d", i)
	}
	tests := []struct {
		name string
		args map[string]any
		want string
	}{
		{"nothing", map[string]any{}, "query must be a non-empty string"},
		{"empty query", map[string]any{"query": ""}, "query must be a non-empty string"},
		{"both", map[string]any{"query": "a", "any_of": []string{"b"}}, "pass either query or any_of, not both"},
		{"empty any_of", map[string]any{"any_of": []string{}}, "any_of must be a non-empty array of strings"},
		{"17 terms", map[string]any{"any_of": many}, "any_of accepts at most 16 terms"},
		{"empty term", map[string]any{"any_of": []string{"a", ""}}, "query must be a non-empty string"},
		{"newline", map[string]any{"query": "a\nb"}, "query must be one line of at most 256 UTF-8 bytes"},
		{"cr", map[string]any{"query": "a\rb"}, "query must be one line of at most 256 UTF-8 bytes"},
		{"newline in any_of", map[string]any{"any_of": []string{"a", "b\n"}}, "query must be one line of at most 256 UTF-8 bytes"},
		{"too long", map[string]any{"query": strings.Repeat("q", 257)}, "query must be one line of at most 256 UTF-8 bytes"},
		{"too long in any_of", map[string]any{"any_of": []string{"a", strings.Repeat("é", 129)}}, "query must be one line of at most 256 UTF-8 bytes"},
		{"bad limit", map[string]any{"query": "a", "limit": 0}, "Input validation error: Invalid arguments for tool search_text: limit"},
		{"garbage cursor", map[string]any{"query": "a", "cursor": "xyz"}, "cursor is not valid"},
		{"escaping path", map[string]any{"query": "a", "path": "../x"}, "path is not a relative path inside the root"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if r := fails(t, cs, "search_text", tt.args, tt.want); !strings.HasPrefix(tt.want, "Input") && r.text != tt.want {
				t.Errorf("%q, want exactly %q", r.text, tt.want)
			}
		})
	}
	// The bounds themselves are accepted.
	ok(t, cs, "search_text", map[string]any{"query": strings.Repeat("é", 128)})
	ok(t, cs, "search_text", map[string]any{"any_of": many[:16]})
}

// pagingFiles builds files bigger than a 16 KiB scan budget, dense with
// matches (some straddling the first budget boundary), heavy with JSON
// escaping, and one sparse file that needs empty progress pages.
func pagingFiles() (map[string]string, []string) {
	rng := rand.New(rand.NewPCG(1, 2))
	escapes := []string{`"`, `\`, "<", ">", "&", "\x01", "\x1f", "\t", "\x7f", "'", "\u2028", "é", "😀"}
	line := func(i int) string {
		var b strings.Builder
		n := rng.IntN(400)
		for b.Len() < n {
			if rng.IntN(3) == 0 {
				b.WriteString(escapes[rng.IntN(len(escapes))])
			} else {
				b.WriteByte(byte('a' + rng.IntN(26)))
			}
		}
		s := b.String()
		switch rng.IntN(7) {
		case 0:
			s = s[:len(s)/2] + "needle" + s[len(s)/2:]
		case 1:
			s = "NEEDLE" + s + "Pin"
		case 2:
			s += "pin\r"
		}
		if !utf8.ValidString(s) {
			s = strings.ToValidUTF8(s, "?")
		}
		return s
	}
	files := map[string]string{}
	var paths []string
	for f := 0; f < 5; f++ {
		var b strings.Builder
		target := 30000 + f*9000
		for i := 0; b.Len() < target; i++ {
			if f == 0 && b.Len() > 16000 && b.Len() < 16384 {
				// A line holding the term across offset 16384.
				b.WriteString(strings.Repeat("q", 16384-3-b.Len()) + "needle straddles\n")
				continue
			}
			b.WriteString(line(i) + "\n")
		}
		p := fmt.Sprintf("d%d/f%d.txt", f%2, f)
		files[p] = b.String()
		paths = append(paths, p)
	}
	// Every line matching and full of escapes: the result ceiling cuts pages.
	var heavy strings.Builder
	for i := 0; i < 300; i++ {
		heavy.WriteString("needle" + strings.Repeat("\"\\<>&\x01\x02\x1b", 40) + "\n")
	}
	files["heavy.txt"] = heavy.String()
	paths = append(paths, "heavy.txt")
	files["sparse.txt"] = strings.Repeat("nothing to see on this line\n", 4000) + "needle at the end"
	paths = append(paths, "sparse.txt")
	slices.Sort(paths)
	return files, paths
}

func TestSearchTextPagingUnion(t *testing.T) {
	files, paths := pagingFiles()
	if !strings.Contains(files["d0/f0.txt"][16381:16387], "ne") {
		t.Fatal("fixture: no match straddling offset 16384")
	}
	root := tree(t, files)
	const ceiling = 48000
	cs := worker(t, root, "--include", "**", "--max-scan-bytes", "16384", "--max-result-bytes", itoa(ceiling))
	for _, tt := range []struct {
		name  string
		args  map[string]any
		terms []string
		fold  bool
	}{
		{"query", map[string]any{"query": "needle"}, []string{"needle"}, false},
		{"folded any_of", map[string]any{"any_of": []string{"needle", "pin"}, "case_insensitive": true}, []string{"needle", "pin"}, true},
		{"limit 3", map[string]any{"query": "NEEDLE", "limit": 3}, []string{"NEEDLE"}, false},
		{"escape-heavy term", map[string]any{"query": `"\<`}, []string{`"\<`}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			want := expectHits(paths, files, tt.terms, tt.fold)
			got, pages, empty := searchAll(t, cs, tt.args, ceiling)
			sameHits(t, got, want)
			if pages < 10 {
				t.Errorf("%d pages; the scan budget should force many", pages)
			}
			if tt.name == "query" && empty == 0 {
				t.Errorf("no empty progress page over the sparse file")
			}
			t.Logf("%d hits in %d pages (%d empty with a cursor)", len(got), pages, empty)
		})
	}
	// The straddling match is reported exactly once.
	got, _, _ := searchAll(t, cs, map[string]any{"query": "straddles"}, ceiling)
	if len(got) != 1 {
		t.Fatalf("straddling match reported %d times", len(got))
	}
}

func TestSearchTextCursorBinding(t *testing.T) {
	big := strings.Repeat("needle line padding padding padding\n", 2000) // > 16 KiB
	files := map[string]string{
		"in/a.txt":  big,
		"in/b.txt":  big,
		"out/c.txt": "needle\n",
		"top.txt":   "needle\n",
	}
	base := map[string]any{"query": "needle", "path": "in", "limit": 5}
	first := func(t *testing.T) (*mcp.ClientSession, string, string) {
		root := tree(t, files)
		cs := worker(t, root, "--include", "**", "--max-scan-bytes", "16384")
		r := ok(t, cs, "search_text", base)
		if r.page.NextCursor == nil {
			t.Fatal("no cursor")
		}
		return cs, root, *r.page.NextCursor
	}
	with := func(tok string, kv ...any) map[string]any {
		a := map[string]any{"cursor": tok}
		for k, v := range base {
			a[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			a[kv[i].(string)] = kv[i+1]
			if kv[i+1] == nil {
				delete(a, kv[i].(string))
			}
		}
		return a
	}
	t.Run("other terms or folding refused", func(t *testing.T) {
		cs, _, tok := first(t)
		for _, a := range []map[string]any{
			with(tok, "query", "needl"),
			with(tok, "query", "NEEDLE"),
			with(tok, "case_insensitive", true),
			with(tok, "query", nil, "any_of", []string{"needle", "x"}),
			with(tok, "path", ""),
		} {
			fails(t, cs, "search_text", a, "cursor was issued for a different traversal")
		}
		// The same terms spelled differently are the same search.
		ok(t, cs, "search_text", with(tok, "query", nil, "any_of", []string{"needle"}))
		fails(t, cs, "search_files", map[string]any{"query": "needle", "cursor": tok}, "cursor was issued for a different traversal")
		ok(t, cs, "search_text", with(tok)) // still good
	})
	t.Run("limit may change", func(t *testing.T) {
		cs, _, tok := first(t)
		ok(t, cs, "search_text", with(tok, "limit", 50))
	})
	edits := []struct {
		name    string
		edit    func(root string)
		survive bool
	}{
		{"outside the prefix", func(root string) {
			os.WriteFile(filepath.Join(root, "out/c.txt"), []byte("changed needle\n"), 0o644)
			os.WriteFile(filepath.Join(root, "top.txt"), []byte("x"), 0o644)
			os.WriteFile(filepath.Join(root, "out/new.txt"), []byte("needle"), 0o644)
		}, true},
		{"already scanned file", func(root string) {
			os.WriteFile(filepath.Join(root, "in/a.txt"), []byte(strings.Replace(big, "needle", "NEEDLE", 1)), 0o644)
		}, false},
		{"file not yet scanned", func(root string) {
			os.WriteFile(filepath.Join(root, "in/b.txt"), []byte(big+"x"), 0o644)
		}, false},
		{"no-match content", func(root string) {
			os.WriteFile(filepath.Join(root, "in/b.txt"), []byte(strings.Replace(big, "padding", "paddinG", 1)), 0o644)
		}, false},
		{"file added in scope", func(root string) {
			os.WriteFile(filepath.Join(root, "in/c.txt"), []byte("nothing"), 0o644)
		}, false},
		{"file removed in scope", func(root string) { os.Remove(filepath.Join(root, "in/b.txt")) }, false},
		{"file renamed in scope", func(root string) {
			os.Rename(filepath.Join(root, "in/b.txt"), filepath.Join(root, "in/bb.txt"))
		}, false},
		{"identical bytes, new file (default mode)", func(root string) {
			tmp := filepath.Join(t.TempDir(), "x")
			os.WriteFile(tmp, []byte(big), 0o644)
			os.Rename(tmp, filepath.Join(root, "in/b.txt"))
		}, false},
	}
	for _, e := range edits {
		t.Run(e.name, func(t *testing.T) {
			cs, root, tok := first(t)
			// A second page, whose scope the worker may have kept since
			// the first: the edit must be seen all the same.
			r := ok(t, cs, "search_text", with(tok))
			if r.page.NextCursor == nil {
				t.Fatal("no cursor after the second page")
			}
			tok = *r.page.NextCursor
			e.edit(root)
			if e.survive {
				hits, _, _ := searchAll(t, cs, with(tok), 48000)
				if len(hits) == 0 {
					t.Fatal("no hits after resuming")
				}
				return
			}
			fails(t, cs, "search_text", with(tok), changed)
		})
	}
}

// TestSearchTextNestedScope pages through a scope two levels down and then
// changes the tree, for each kind of change a worker must notice between
// pages: the first page scans one.txt whole and stops inside two.txt, the
// second goes on inside two.txt, and the change then touches only what is
// behind the cursor (one.txt, or the directories on the way down), never
// the file the next page resumes in. A change beside the way down leaves
// the cursor good.
func TestSearchTextNestedScope(t *testing.T) {
	pad := strings.Repeat("padding line of no interest to the search\n", 100) // 4.3 KB
	one := pad + "needle one\n" + pad
	two := strings.Repeat(pad+"needle two\n", 20) // 87 KB
	files := map[string]string{
		"a/b/one.txt": one,
		"a/b/two.txt": two,
		"a/side.txt":  "needle\n",
		"top.txt":     "needle\n",
	}
	args := map[string]any{"query": "needle", "path": "a/b", "limit": 1000}
	at := func(root, p string) string { return filepath.Join(root, filepath.FromSlash(p)) }
	// link is one.txt's second name, outside the root, in the cases
	// marked linked (made before the first page).
	var link string
	for _, e := range []struct {
		name   string
		edit   func(t *testing.T, root string)
		want   string // the next page's error; "" if it succeeds
		linked bool
	}{
		{"beside the way down", func(t *testing.T, root string) {
			os.WriteFile(at(root, "a/side.txt"), []byte("changed needle\n"), 0o644)
			os.WriteFile(at(root, "a/new.txt"), []byte("needle\n"), 0o644)
			os.Mkdir(at(root, "a/c"), 0o755)
			os.WriteFile(at(root, "top.txt"), []byte("x"), 0o644)
		}, "", false},
		{"scope renamed away and back", func(t *testing.T, root string) {
			os.Rename(at(root, "a/b"), at(root, "a/b2"))
			os.Rename(at(root, "a/b2"), at(root, "a/b"))
		}, "", false}, // the same directory and files: the same state
		{"scanned file rewritten", func(t *testing.T, root string) {
			os.WriteFile(at(root, "a/b/one.txt"), []byte(strings.Replace(one, "needle", "NEEDLE", 1)), 0o644)
		}, changed, false},
		// A write through a hard link outside the root reaches the file
		// without going through its directory: a file with a second link
		// when the scope is walked has a watch of its own.
		{"scanned file written through a hard link outside the root", func(t *testing.T, root string) {
			writeThrough(t, link, int64(len(pad)))
		}, changed, true},
		// A link made after the walk, written before its file is read:
		// no watch sees it, but the page that opens the file sees its
		// identity (ctime) moved since the walk.
		{"file linked outside the root after the walk and written", func(t *testing.T, root string) {
			later := filepath.Join(t.TempDir(), "link")
			if err := os.Link(at(root, "a/b/two.txt"), later); err != nil {
				t.Fatal(err)
			}
			writeThrough(t, later, int64(len(two)-2))
		}, changed, false},
		{"scanned file's mode changed", func(t *testing.T, root string) {
			os.Chmod(at(root, "a/b/one.txt"), 0o600)
		}, changed, false},
		{"scanned file's mtime changed", func(t *testing.T, root string) {
			os.Chtimes(at(root, "a/b/one.txt"), time.Time{}, time.Unix(1e9, 0))
		}, changed, false},
		{"file added deeper in scope", func(t *testing.T, root string) {
			os.MkdirAll(at(root, "a/b/deep"), 0o755)
			os.WriteFile(at(root, "a/b/deep/x.txt"), []byte("x"), 0o644)
		}, changed, false},
		// The way down replaced: a new a/b holding the very file the
		// cursor resumes in (a hard link, same identity) and a different
		// one.txt.
		{"ancestor replaced", func(t *testing.T, root string) {
			if err := os.Rename(at(root, "a"), at(root, "a-old")); err != nil {
				t.Fatal(err)
			}
			os.MkdirAll(at(root, "a/b"), 0o755)
			os.WriteFile(at(root, "a/b/one.txt"), []byte("needle elsewhere\n"), 0o644)
			if err := os.Link(at(root, "a-old/b/two.txt"), at(root, "a/b/two.txt")); err != nil {
				t.Fatal(err)
			}
		}, changed, false},
	} {
		t.Run(e.name, func(t *testing.T) {
			root := tree(t, files)
			if e.linked {
				link = filepath.Join(t.TempDir(), "link")
				if err := os.Link(at(root, "a/b/one.txt"), link); err != nil {
					t.Fatal(err)
				}
			}
			cs := worker(t, root, "--include", "**", "--max-scan-bytes", "16384")
			tok := ""
			var seen []textHit
			for range 2 {
				a := maps.Clone(args)
				if tok != "" {
					a["cursor"] = tok
				}
				r := ok(t, cs, "search_text", a)
				if r.page.NextCursor == nil {
					t.Fatal("no cursor")
				}
				tok = *r.page.NextCursor
				seen = append(seen, items[textHit](t, r)...)
			}
			if len(seen) < 2 || seen[0].Path != "a/b/one.txt" || seen[len(seen)-1].Path != "a/b/two.txt" {
				t.Fatalf("the first two pages found %v; want one.txt's match and then two.txt's", seen)
			}
			e.edit(t, root)
			a := maps.Clone(args)
			a["cursor"] = tok
			if e.want != "" {
				fails(t, cs, "search_text", a, e.want)
				return
			}
			hits, _, _ := searchAll(t, cs, a, 48000)
			if len(hits) == 0 {
				t.Fatal("no hits after resuming")
			}
			for _, h := range hits {
				if h.Path != "a/b/two.txt" {
					t.Fatalf("hit %v after resuming in a/b/two.txt", h)
				}
			}
		})
	}
}

// writeThrough writes one byte at off of the file at path, in place.
func writeThrough(t *testing.T, path string, off int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt([]byte("N"), off); err != nil {
		t.Fatal(err)
	}
}

// TestSearchTextConcurrentChange pages through search_text while another
// goroutine keeps rewriting (truncating, then writing) an in-scope file:
// every call succeeds or fails with the changed-state error, nothing else,
// with small and large scan budgets and in both cursor modes.
func TestSearchTextConcurrentChange(t *testing.T) {
	const evidence = "needle among some words of text"
	big := strings.Repeat(evidence+"\n", 8000) // 256 KB
	for _, tc := range []struct {
		name string
		det  bool
		scan string
	}{
		{"default mode, small budget", false, "16384"},
		{"default mode, large budget", false, "4194304"},
		{"deterministic, small budget", true, "16384"},
		{"deterministic, large budget", true, "4194304"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := tree(t, map[string]string{"a.txt": big[:48000], "b.txt": big, "c.txt": big[:48000]})
			var cs *mcp.ClientSession
			if tc.det {
				cs = detWorker(t, root, newKey(t, 32), "--max-scan-bytes", tc.scan)
			} else {
				cs = worker(t, root, "--include", "**", "--max-scan-bytes", tc.scan)
			}
			target := filepath.Join(root, "b.txt")
			stop := make(chan struct{})
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 2000; i++ {
					select {
					case <-stop:
						return
					default:
					}
					os.WriteFile(target, []byte(big[:len(big)-32*(i%50)]), 0o644)
				}
			}()
			var okCalls, changedCalls int
			var cursor string
			for i := 0; i < 80; i++ {
				a := map[string]any{"query": "needle", "limit": 1000}
				if cursor != "" {
					a["cursor"] = cursor
				}
				r := call(t, cs, "search_text", a)
				switch {
				case !r.isError:
					okCalls++
					cursor = ""
					if r.page.NextCursor != nil {
						cursor = *r.page.NextCursor
					}
					for _, h := range items[textHit](t, r) {
						if h.Text != evidence {
							t.Fatalf("torn evidence %v", h)
						}
					}
				case refusedAsChanged(r.text):
					changedCalls++
					cursor = ""
				default:
					t.Fatalf("call %d: unexpected error %q", i, r.text)
				}
			}
			close(stop)
			wg.Wait()
			t.Logf("%d pages served, %d changed-state refusals", okCalls, changedCalls)
			if okCalls == 0 {
				t.Fatal("no call succeeded")
			}
			// Once quiet, a full traversal completes.
			os.WriteFile(target, []byte(big), 0o644)
			hits, _, _ := searchAll(t, cs, map[string]any{"query": "needle", "path": ""}, 48000)
			if want := 2*1500 + 8000; len(hits) != want {
				t.Fatalf("%d hits, want %d", len(hits), want)
			}
		})
	}
}

// TestSearchTextExactScanBudget: one 600,000-byte line whose only match
// sits at its end, under --max-scan-bytes 16384. No page scans past the
// budget, even inside the line, so the pages before the match come back
// empty with a cursor (at least 600,000/16,384 of them), and then exactly
// one hit follows, on the right line, its text the line's first 1024 bytes.
func TestSearchTextExactScanBudget(t *testing.T) {
	line := strings.Repeat("x", 600000-len("needle")) + "needle"
	root := tree(t, map[string]string{"huge.txt": "first line\n" + line + "\nlast line\n"})
	cs := worker(t, root, "--include", "**", "--max-scan-bytes", "16384")
	hits, pages, empty := searchAll(t, cs, map[string]any{"query": "needle"}, 48000)
	sameHits(t, hits, []textHit{{"huge.txt", 2, strings.Repeat("x", maxEvidence)}})
	if min := 600000 / 16384; empty < min {
		t.Errorf("%d empty progress pages of %d, want at least %d: a page scanned past --max-scan-bytes", empty, pages, min)
	}
	t.Logf("%d pages, %d of them empty", pages, empty)
}

// TestSearchTextHeadRead: the binary check's read of a file's opening (the
// first 8 KiB judged, up to 128 KiB read, the page's budget allowing) is
// the start of the file's scan, not a read apart: files around those sizes,
// terms across their boundaries, a NUL and an invalid byte on one line past
// the first 8 KiB (text) and within them (binary, skipped), under the
// smallest scan budget and the default one. Every match is found once, on
// its line, and no page scans past --max-scan-bytes.
func TestSearchTextHeadRead(t *testing.T) {
	// size bytes of short lines, "needle" written at each of at.
	text := func(size int, at ...int) string {
		const line = "func scan(buf []byte) int { return 0 }\n"
		b := []byte(strings.Repeat(line, size/len(line)+1)[:size])
		for _, a := range at {
			copy(b[a:], "needle")
		}
		return string(b)
	}
	const head, headRead, round = 8 << 10, 128 << 10, 256 << 10
	files := map[string]string{
		"a-head-1.txt":        text(head-1, head-7),
		"b-head.txt":          text(head, head-6),
		"c-head+100.txt":      text(head+100, head-3),
		"d-read-1.txt":        text(headRead-1, 100, headRead-7),
		"e-read.txt":          text(headRead, headRead-6),
		"f-read+100.txt":      text(headRead+100, head+10, headRead-3),
		"g-round+300.txt":     text(round+300, round-2, round+200),
		"h-late-binary.txt":   text(3*head, 50, head+50) + "needle \x00\xff\n" + text(head, 0),
		"i-binary.bin":        "\x00\xff\n" + text(3*head, 50, head-2),
		"j-binary-large.bin":  "\x00\xff\n" + text(2*headRead, 50, headRead),
		"k-binary-at-end.bin": text(head-3, 40) + "\x00\xff",
	}
	paths := slices.Sorted(maps.Keys(files))
	var textPaths []string
	for _, p := range paths {
		if !strings.HasSuffix(p, ".bin") {
			textPaths = append(textPaths, p)
		}
	}
	want := expectHits(textPaths, files, []string{"needle"}, false)
	if len(want) != 13 {
		t.Fatalf("the tree holds %d matches in text files, want 13: %v", len(want), want)
	}
	root := tree(t, files)
	for _, scan := range []int{16384, 4194304} {
		cs := worker(t, root, "--include", "**", "--max-scan-bytes", strconv.Itoa(scan))
		got, pages, _ := searchAll(t, cs, map[string]any{"query": "needle"}, 48000)
		sameHits(t, got, want)
		// The text files' bytes, each page scanning at most scan of them
		// (a binary file's bytes count against no budget).
		var textBytes int
		for _, p := range textPaths {
			textBytes += len(files[p])
		}
		if least := (textBytes + scan - 1) / scan; pages < least {
			t.Errorf("--max-scan-bytes %d: %d pages for %d bytes of text: a page scanned past its budget", scan, pages, textBytes)
		}
	}
}
