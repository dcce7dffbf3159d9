//go:build linux

package e2e

import (
	"encoding/base64"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fsmcp/fsmcp/worker/cursor"
)

// The cursor refusals of docs/reference.md, Cursors.
const (
	invalidCursor  = "cursor is not valid"
	otherTraversal = "cursor was issued for a different traversal"
	badPosition    = "cursor position is not valid"
)

// cursorCase is one paging call of each tool and its first page's cursor.
type cursorCase struct {
	tool string
	args map[string]any
	tok  string
}

func (c cursorCase) with(tok string) map[string]any {
	a := map[string]any{"cursor": tok}
	for k, v := range c.args {
		a[k] = v
	}
	return a
}

func cursorFiles() map[string]string {
	files := map[string]string{"f.txt": strings.Repeat("needle é 0123456789\n", 2000)}
	for i := range 20 {
		files["d/f"+itoa(i)+".txt"] = "needle\n"
	}
	return files
}

// firstCursors takes the first page of each paging tool on cs.
func firstCursors(t *testing.T, cs *mcp.ClientSession) []cursorCase {
	t.Helper()
	cases := []cursorCase{
		{tool: "list_directory", args: map[string]any{"path": "d", "limit": 3}},
		{tool: "search_files", args: map[string]any{"query": "f", "path": "d", "limit": 3}},
		{tool: "search_text", args: map[string]any{"query": "needle", "path": "d", "limit": 3}},
		{tool: "read_text_file", args: map[string]any{"path": "f.txt", "limit": 2}},
	}
	for i := range cases {
		r := ok(t, cs, cases[i].tool, cases[i].args)
		if r.page.NextCursor == nil {
			t.Fatalf("%s: no cursor", cases[i].tool)
		}
		cases[i].tok = *r.page.NextCursor
		ok(t, cs, cases[i].tool, cases[i].with(cases[i].tok)) // it is good as issued
	}
	return cases
}

// respellings are other spellings of tok (<body>.<signature>, each part
// unpadded base64url) that a lenient decoder might take for the same
// bytes, or near misses of it.
func respellings(tok string) map[string]string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	bodyPart, sigPart, _ := strings.Cut(tok, ".")
	body, _ := base64.RawURLEncoding.DecodeString(bodyPart)
	sig, _ := base64.RawURLEncoding.DecodeString(sigPart)
	both := func(enc *base64.Encoding) string { return enc.EncodeToString(body) + "." + enc.EncodeToString(sig) }
	out := map[string]string{
		"padded":         both(base64.URLEncoding),
		"one pad":        tok + "=",
		"pad before dot": bodyPart + "=." + sigPart,
		"std alphabet":   both(base64.StdEncoding),
		"std unpadded":   both(base64.RawStdEncoding),
		"leading space":  " " + tok,
		"trailing space": tok + " ",
		"newline inside": tok[:10] + "\n" + tok[10:],
		"CRLF after":     tok + "\r\n",
		"upper-cased":    strings.ToUpper(tok),
		"truncated":      tok[:len(tok)-1],
		"extended":       tok + "A",
		"doubled":        tok + tok,
		"no dot":         bodyPart + sigPart,
		"two dots":       bodyPart + ".." + sigPart,
		"parts swapped":  sigPart + "." + bodyPart,
		"body only":      bodyPart,
		"signature only": "." + sigPart,
		"percent-quoted": strings.ReplaceAll(strings.ReplaceAll(tok, "-", "%2D"), "_", "%5F"),
		"hex of bytes":   strings.ToUpper(base64.RawURLEncoding.EncodeToString(body[:len(body)/2])),
	}
	// The unused low bits of a part's final character, set: the same
	// bytes to a lenient decoder.
	for name, part := range map[string]string{"body": bodyPart, "signature": sigPart} {
		if len(part)%4 != 0 {
			last := strings.IndexByte(alphabet, part[len(part)-1])
			alt := part[:len(part)-1] + string(alphabet[last|1])
			out["spare bits set in "+name] = strings.Replace(tok, part, alt, 1)
		}
	}
	// Bytes of the body and the signature flipped in turn (a sample).
	for _, i := range []int{0, len(body) / 2, len(body) - 1} {
		b := append([]byte(nil), body...)
		b[i] ^= 0x01
		out["body bit flip at "+itoa(i)] = base64.RawURLEncoding.EncodeToString(b) + "." + sigPart
	}
	for _, i := range []int{0, len(sig) - 1} {
		b := append([]byte(nil), sig...)
		b[i] ^= 0x01
		out["signature bit flip at "+itoa(i)] = bodyPart + "." + base64.RawURLEncoding.EncodeToString(b)
	}
	return out
}

// TestAttackCursorSpellings: any spelling of a cursor but the issued one
// is refused with the exact invalid-cursor error, for every paging tool,
// and the issued one still works after all of them.
func TestAttackCursorSpellings(t *testing.T) {
	root := tree(t, cursorFiles())
	cs := worker(t, root, "--include", "**", "--max-scan-bytes", "16384", "--max-read-bytes", "4096")
	tried := 0
	for _, c := range firstCursors(t, cs) {
		for name, tok := range respellings(c.tok) {
			if tok == c.tok {
				continue
			}
			tried++
			if r := call(t, cs, c.tool, c.with(tok)); r.text != invalidCursor {
				t.Errorf("%s, cursor %s: isError=%v %q", c.tool, name, r.isError, r.text)
			}
		}
		ok(t, cs, c.tool, c.with(c.tok))
	}
	t.Logf("figures: cursor re-spellings: %d refused exactly, 0 accepted", tried)
}

// TestAttackCursorCrossBinding: a cursor is refused by every other tool,
// by the same tool with other arguments, by a worker with another root
// name (same key, same tree), by another process (default mode, and a
// restart), by the other root behind one supervisor, and when oversized.
func TestAttackCursorCrossBinding(t *testing.T) {
	files := cursorFiles()
	root := tree(t, files)
	key := newKey(t, 32)
	args := []string{"--max-scan-bytes", "16384", "--max-read-bytes", "4096"}
	a := detWorker(t, root, key, append(args, "--name", "alpha")...)
	cases := firstCursors(t, a)
	tried := 0
	refusedAs := func(want string, cs *mcp.ClientSession, tool string, args map[string]any, why string) {
		t.Helper()
		tried++
		if r := call(t, cs, tool, args); r.text != want {
			t.Errorf("%s: %s: isError=%v %q, want %q", why, tool, r.isError, r.text, want)
		}
	}
	refused := func(cs *mcp.ClientSession, tool string, args map[string]any, why string) {
		t.Helper()
		refusedAs(invalidCursor, cs, tool, args, why)
	}
	// Every other tool, its arguments made to fit.
	for _, c := range cases {
		for _, other := range cases {
			if other.tool != c.tool {
				refusedAs(otherTraversal, a, other.tool, other.with(c.tok), "cursor of "+c.tool)
			}
		}
	}
	// The same tool, other arguments.
	for _, tc := range []struct {
		c    int
		args map[string]any
	}{
		{0, map[string]any{"path": ""}},
		{0, map[string]any{"path": "."}},
		{1, map[string]any{"query": "F", "path": "d"}},
		{1, map[string]any{"query": "f", "path": "d", "case_insensitive": true}},
		{1, map[string]any{"any_of": []string{"f", "g"}, "path": "d"}},
		{2, map[string]any{"query": "needl", "path": "d"}},
		{2, map[string]any{"query": "needle", "path": ""}},
		{3, map[string]any{"path": "f.txt", "start_line": 2}},
		{3, map[string]any{"path": "d/f1.txt"}},
	} {
		c := cases[tc.c]
		tc.args["cursor"] = c.tok
		refusedAs(otherTraversal, a, c.tool, tc.args, "other arguments")
	}
	// Another root name with the same key on the same tree.
	b := detWorker(t, root, key, append(args, "--name", "beta")...)
	for _, c := range cases {
		refusedAs(otherTraversal, b, c.tool, c.with(c.tok), "another root name")
	}
	// The same name and key in another process: deterministic cursors
	// resume (that is their point).
	a2 := detWorker(t, root, key, append(args, "--name", "alpha")...)
	for _, c := range cases {
		ok(t, a2, c.tool, c.with(c.tok))
	}
	// Default mode: another process, or the same command restarted.
	p1 := worker(t, root, append([]string{"--include", "**"}, args...)...)
	pc := firstCursors(t, p1)
	for range 2 {
		p2 := worker(t, root, append([]string{"--include", "**"}, args...)...)
		for _, c := range pc {
			refused(p2, c.tool, c.with(c.tok), "another process")
		}
		p2.Close()
	}
	// Oversized: just over the bound, and far over it.
	for _, n := range []int{cursor.MaxLen + 1, 1 << 20} {
		big := strings.Repeat("A", n)
		for _, c := range cases {
			refused(a, c.tool, c.with(big), "oversized")
		}
	}
	ok(t, a, cases[0].tool, cases[0].with(cases[0].tok))

	// Behind one supervisor, one root's cursor is refused by the other.
	bins := buildSupervisorBins(t)
	dir := t.TempDir()
	for p, body := range files {
		writeFile(t, filepath.Join(dir, "workspace", p), body)
	}
	file := filepath.Join(dir, "fsmcp.yaml")
	manifest := "version: 1\nroots:\n" +
		"  - {name: one, path: workspace, include: ['**'], tools: read, limits: {max_scan_bytes: 16384, max_read_bytes: 4096}}\n" +
		"  - {name: two, path: workspace, include: ['**'], tools: read, limits: {max_scan_bytes: 16384, max_read_bytes: 4096}}\n"
	writeFile(t, file, manifest)
	sp := startSupervisor(t, file, bins.worker)
	for _, c := range cases {
		res := callTool(t, sp.session, "one_"+c.tool, c.args)
		var page struct {
			NextCursor *string `json:"next_cursor"`
		}
		json.Unmarshal(mustJSON(res.StructuredContent), &page)
		if res.IsError || page.NextCursor == nil {
			t.Fatalf("one_%s: %s", c.tool, resultText(res))
		}
		tried++
		if r := callTool(t, sp.session, "two_"+c.tool, c.with(*page.NextCursor)); resultText(r) != invalidCursor {
			t.Errorf("root two took root one's %s cursor: %q", c.tool, resultText(r))
		}
		if r := callTool(t, sp.session, "one_"+c.tool, c.with(*page.NextCursor)); r.IsError {
			t.Errorf("root one refused its own %s cursor: %q", c.tool, resultText(r))
		}
	}
	t.Logf("figures: cross-bound cursors: %d refused exactly, 0 accepted", tried)
}

// TestAttackCursorForged signs cursors with the root's own key (as whoever
// holds the key could) but with positions no page could have issued: each
// is refused, and the worker keeps serving. Without the key, a re-signed
// body is refused like any other bad cursor.
func TestAttackCursorForged(t *testing.T) {
	root := tree(t, cursorFiles())
	keyText := newKey(t, 32)
	key, _ := base64.RawURLEncoding.DecodeString(keyText)
	cs := detWorker(t, root, keyText, "--max-scan-bytes", "16384", "--max-read-bytes", "4096")
	cases := firstCursors(t, cs)
	codec, _ := cursor.New(key, "root")
	thief, _ := cursor.New(cursor.RandomKey(), "root")
	// The scopes the worker binds, as it builds them.
	scopes := map[string]cursor.Scope{
		"list_directory": {Tool: "list_directory", Args: map[string]string{"path": "d"}},
		"search_files":   {Tool: "search_files", Args: map[string]any{"path": "d", "terms": []string{"f"}, "case_insensitive": false}},
		"search_text":    {Tool: "search_text", Args: map[string]any{"path": "d", "terms": []string{"needle"}, "case_insensitive": false}},
		"read_text_file": {Tool: "read_text_file", Args: map[string]any{"path": "f.txt", "start_line": 1}},
	}
	// Body fields in the order the worker writes them.
	order := map[string][]string{"list_directory": {"n", "s"}, "search_files": {"n", "s"}, "search_text": {"f", "o", "l", "ls", "k", "s"}, "read_text_file": {"o", "s"}}
	sign := func(c *cursor.Codec, tool string, b map[string]any) string {
		var parts []string
		for _, k := range order[tool] {
			if v, ok := b[k]; ok {
				parts = append(parts, mustJSONString(k)+":"+string(mustJSON(v)))
			}
		}
		tok, err := c.Encode(scopes[tool], json.RawMessage("{"+strings.Join(parts, ",")+"}"))
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	// Re-signing the issued body reproduces the issued cursor: the scopes
	// above are the worker's, so the forgeries below reach its checks.
	for _, c := range cases {
		if got := sign(codec, c.tool, cursorPosition(t, c.tok)); got != c.tok {
			t.Fatalf("%s: re-signed cursor differs from the issued one", c.tool)
		}
	}
	edit := func(c cursorCase, kv ...any) map[string]any {
		b := cursorPosition(t, c.tok)
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == nil {
				delete(b, kv[i].(string))
			} else {
				b[kv[i].(string)] = kv[i+1]
			}
		}
		return b
	}
	size := len(cursorFiles()["f.txt"])
	tried := 0
	for _, tc := range []struct {
		c    int
		body map[string]any
		want string
	}{
		{0, edit(cases[0], "n", 21), badPosition},
		{0, edit(cases[0], "n", -1), badPosition},
		{0, edit(cases[0], "n", 1e18), badPosition},
		{0, edit(cases[0], "s", "0"), changed},
		{0, edit(cases[0], "n", "3"), invalidCursor},
		{1, edit(cases[1], "n", 1<<40), badPosition},
		{2, edit(cases[2], "f", 999), badPosition},
		{2, edit(cases[2], "f", -1), badPosition},
		{2, edit(cases[2], "o", -5), badPosition},
		{2, edit(cases[2], "o", 1<<40), badPosition},
		{2, edit(cases[2], "l", -7), badPosition},
		{2, edit(cases[2], "ls", 1<<40), badPosition},
		{2, edit(cases[2], "s", nil), changed},
		{3, edit(cases[3], "o", size+1), badPosition},
		{3, edit(cases[3], "o", -1), badPosition},
		{3, edit(cases[3], "o", 1<<62), badPosition},
		// Inside "é": the bytes there are not text, so none is served.
		{3, edit(cases[3], "o", 8), "file is not valid UTF-8"},
		{3, edit(cases[3], "s", "1:"+strings.Repeat("0", 64)), changed},
	} {
		c := cases[tc.c]
		tried++
		if r := call(t, cs, c.tool, c.with(sign(codec, c.tool, tc.body))); r.text != tc.want {
			t.Errorf("%s forged %v: isError=%v %q, want %q", c.tool, tc.body, r.isError, r.text, tc.want)
		}
		// Without the key the same body is just an invalid cursor.
		tried++
		if r := call(t, cs, c.tool, c.with(sign(thief, c.tool, tc.body))); r.text != invalidCursor {
			t.Errorf("%s re-signed without the key: %q", c.tool, r.text)
		}
	}
	for _, c := range cases {
		ok(t, cs, c.tool, c.with(c.tok))
	}
	t.Logf("figures: forged cursors: %d refused exactly, 0 accepted", tried)
}
