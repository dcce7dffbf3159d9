//go:build linux

package e2e

import (
	"crypto/rand"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const keyVar = "FSMCP_E2E_CURSOR_KEY"

func newKey(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// detWorker starts a worker with deterministic cursors keyed by key.
func detWorker(t *testing.T, root, key string, args ...string) *mcp.ClientSession {
	t.Helper()
	return connect(t, []string{keyVar + "=" + key}, workerBin,
		append([]string{"--root", root, "--include", "**", "--cursor-key-env", keyVar}, args...)...)
}

// replaceSame writes body to a new file and renames it over path: new
// physical identity, same bytes.
func replaceSame(t *testing.T, path, body string) {
	t.Helper()
	tmp := filepath.Join(t.TempDir(), "new")
	if err := os.WriteFile(tmp, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func TestDeterministicKeyRefused(t *testing.T) {
	root := tree(t, map[string]string{"a.txt": "x"})
	raw32 := make([]byte, 32)
	rand.Read(raw32)
	good := base64.RawURLEncoding.EncodeToString(raw32)
	// 32 bytes leave 2 spare bits in the last character, zero when
	// canonical: setting one spells the same bytes non-canonically.
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	last := strings.IndexByte(alphabet, good[len(good)-1])
	nonCanon := good[:len(good)-1] + string(alphabet[last|1])
	// The contract's two texts: one for a value that is absent or not in
	// the unpadded base64url alphabet, one for a value in it that does not
	// decode canonically to at least 32 bytes. Neither shows the value.
	const (
		notThere = "cursor key environment variable is missing, empty, or malformed"
		notKey   = "cursor key environment variable is malformed or contains fewer than 32 bytes"
	)
	tests := []struct {
		name string
		env  []string
		val  string
		want string
	}{
		{"missing", []string{}, "", notThere},
		{"empty", []string{keyVar + "="}, "", notThere},
		{"malformed", []string{keyVar + "=" + "secret*value*that*is*not*base64url*at*all"}, "secret*value*that*is*not*base64url*at*all", notThere},
		{"standard alphabet", []string{keyVar + "=" + strings.Repeat("+/", 22)}, strings.Repeat("+/", 22), notThere},
		{"padded", []string{keyVar + "=" + base64.URLEncoding.EncodeToString(raw32)}, base64.URLEncoding.EncodeToString(raw32), notThere},
		{"whitespace", []string{keyVar + "=" + good + "\n"}, good, notThere},
		{"short", []string{keyVar + "=" + base64.RawURLEncoding.EncodeToString(raw32[:31])}, base64.RawURLEncoding.EncodeToString(raw32[:31]), notKey},
		{"non-canonical", []string{keyVar + "=" + nonCanon}, nonCanon, notKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runWorker(t, tt.env, "--root", root, "--include", "**", "--cursor-key-env", keyVar)
			if code != 64 {
				t.Fatalf("exit %d, want 64 (stderr %q)", code, stderr)
			}
			if stdout != "" {
				t.Errorf("stdout %q", stdout)
			}
			if want := "fsmcp-worker: " + tt.want + "\n"; stderr != want {
				t.Errorf("stderr %q, want %q", stderr, want)
			}
			if tt.val != "" && strings.Contains(stderr, tt.val) {
				t.Errorf("stderr leaks the value: %q", stderr)
			}
			if len(tt.val) > 8 && strings.Contains(stderr, tt.val[:8]) {
				t.Errorf("stderr leaks part of the value: %q", stderr)
			}
		})
	}
	cs := detWorker(t, root, good)
	ok(t, cs, "read_text_file", map[string]any{"path": "a.txt"})
}

// TestDeterministicPathOnlyListings: list_directory and search_files
// cursors bind paths only, and resume in another process with the key.
func TestDeterministicPathOnlyListings(t *testing.T) {
	files := map[string]string{}
	for i := 0; i < 30; i++ {
		files["d/f"+itoa(100+i)+".txt"] = "body " + itoa(i)
	}
	root := tree(t, files)
	key := newKey(t, 32)
	a, b := detWorker(t, root, key), detWorker(t, root, key)
	other := detWorker(t, root, newKey(t, 32))
	plain := worker(t, root, "--include", "**")
	for _, tc := range []struct {
		tool string
		args map[string]any
	}{
		{"list_directory", map[string]any{"path": "d", "limit": 5}},
		{"search_files", map[string]any{"query": "f1", "limit": 5}},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			r := ok(t, a, tc.tool, tc.args)
			tok := *r.page.NextCursor
			// Contents change; paths do not.
			os.WriteFile(filepath.Join(root, "d/f101.txt"), []byte("other and longer contents"), 0o644)
			replaceSame(t, filepath.Join(root, "d/f120.txt"), "changed")
			resume := map[string]any{"cursor": tok}
			for k, v := range tc.args {
				resume[k] = v
			}
			ra := ok(t, a, tc.tool, resume)
			rb := ok(t, b, tc.tool, resume)
			if string(ra.page.Items[0]) != string(rb.page.Items[0]) || ra.page.ContentHash != rb.page.ContentHash {
				t.Fatalf("processes disagree: %s vs %s", ra.page.Items[0], rb.page.Items[0])
			}
			fails(t, other, tc.tool, resume, "cursor is not valid")
			fails(t, plain, tc.tool, resume, "cursor is not valid")
			// A path change fails it.
			os.WriteFile(filepath.Join(root, "d/f1000.txt"), []byte("x"), 0o644)
			fails(t, b, tc.tool, resume, changed)
			os.Remove(filepath.Join(root, "d/f1000.txt"))
			ok(t, b, tc.tool, resume)
		})
	}
}

func TestDeterministicReadBinding(t *testing.T) {
	body := strings.Repeat("0123456789abcdef\n", 3000) // several read pages
	root := tree(t, map[string]string{"f.txt": body, "g.txt": "other"})
	path := filepath.Join(root, "f.txt")
	key := newKey(t, 48)
	a := detWorker(t, root, key)
	first := func(t *testing.T) string {
		t.Helper()
		replaceSame(t, path, body)
		r := ok(t, a, "read_text_file", map[string]any{"path": "f.txt"})
		if r.page.NextCursor == nil {
			t.Fatal("no cursor")
		}
		return *r.page.NextCursor
	}
	args := func(tok string) map[string]any { return map[string]any{"path": "f.txt", "cursor": tok} }

	t.Run("identical replacement keeps it", func(t *testing.T) {
		tok := first(t)
		replaceSame(t, path, body)
		r := ok(t, a, "read_text_file", args(tok))
		// Another process with the same key resumes it too, to the end.
		b := detWorker(t, root, key)
		r2 := ok(t, b, "read_text_file", args(tok))
		if r.page.ContentHash != r2.page.ContentHash {
			t.Fatal("processes disagree")
		}
		got := ""
		for {
			for _, c := range items[chunkItem](t, r2) {
				got += c.Text
			}
			if r2.page.NextCursor == nil {
				break
			}
			r2 = ok(t, b, "read_text_file", args(*r2.page.NextCursor))
		}
		if !strings.HasSuffix(body, got) || len(got) >= len(body) {
			t.Fatalf("resumed read returned %d bytes, not a suffix of the file", len(got))
		}
		os.WriteFile(filepath.Join(root, "g.txt"), []byte("other file changed"), 0o644)
		ok(t, a, "read_text_file", args(tok))
	})
	t.Run("one changed byte rejects it", func(t *testing.T) {
		tok := first(t)
		bad := []byte(body)
		bad[len(bad)-2] = 'X' // same size, beyond the first page
		replaceSame(t, path, string(bad))
		fails(t, a, "read_text_file", args(tok), changed)
		fails(t, detWorker(t, root, key), "read_text_file", args(tok), changed)
	})
	t.Run("in-place edit of one byte rejects it", func(t *testing.T) {
		tok := first(t)
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteAt([]byte("Z"), 5)
		f.Close()
		fails(t, a, "read_text_file", args(tok), changed)
	})
	t.Run("other key or default mode refuses it", func(t *testing.T) {
		tok := first(t)
		fails(t, detWorker(t, root, newKey(t, 32)), "read_text_file", args(tok), "cursor is not valid")
		fails(t, worker(t, root, "--include", "**"), "read_text_file", args(tok), "cursor is not valid")
	})
}

func TestDeterministicSearchTextBinding(t *testing.T) {
	big := strings.Repeat("needle with some padding text around it\n", 1500) // > 16 KiB
	files := map[string]string{"s/a.txt": big, "s/b.txt": big, "s/c.txt": big, "x/out.txt": "needle\n"}
	key := newKey(t, 32)
	args := map[string]any{"query": "needle", "path": "s", "limit": 40}
	setup := func(t *testing.T) (string, *mcp.ClientSession, map[string]any) {
		t.Helper()
		root := tree(t, files)
		a := detWorker(t, root, key, "--max-scan-bytes", "16384")
		r := ok(t, a, "search_text", args)
		resume := map[string]any{"cursor": *r.page.NextCursor}
		for k, v := range args {
			resume[k] = v
		}
		return root, a, resume
	}
	t.Run("resumes in another process", func(t *testing.T) {
		root, a, resume := setup(t)
		b := detWorker(t, root, key, "--max-scan-bytes", "16384")
		ra, rb := ok(t, a, "search_text", resume), ok(t, b, "search_text", resume)
		if ra.page.ContentHash != rb.page.ContentHash || *ra.page.NextCursor != *rb.page.NextCursor {
			t.Fatal("processes disagree on the resumed page")
		}
		// Follow to the end in b: the union from the cursor on is exact.
		hits, _, _ := searchAll(t, b, resume, 48000)
		if len(hits) != 3*1500-40 {
			t.Fatalf("%d hits after the first page, want %d", len(hits), 3*1500-40)
		}
		fails(t, detWorker(t, root, newKey(t, 32)), "search_text", resume, "cursor is not valid")
		fails(t, worker(t, root, "--include", "**"), "search_text", resume, "cursor is not valid")
	})
	edits := []struct {
		name    string
		edit    func(t *testing.T, root string)
		survive bool
	}{
		{"identical replacement", func(t *testing.T, root string) { replaceSame(t, filepath.Join(root, "s/b.txt"), big) }, true},
		{"identical replacement of the scanned file", func(t *testing.T, root string) { replaceSame(t, filepath.Join(root, "s/a.txt"), big) }, true},
		{"change outside the prefix", func(t *testing.T, root string) {
			os.WriteFile(filepath.Join(root, "x/out.txt"), []byte("changed"), 0o644)
		}, true},
		{"one byte, same size", func(t *testing.T, root string) {
			replaceSame(t, filepath.Join(root, "s/c.txt"), strings.Replace(big, "padding", "paddinG", 1))
		}, false},
		{"size", func(t *testing.T, root string) { replaceSame(t, filepath.Join(root, "s/c.txt"), big+"\n") }, false},
		{"path renamed, same bytes", func(t *testing.T, root string) {
			os.Rename(filepath.Join(root, "s/c.txt"), filepath.Join(root, "s/d.txt"))
		}, false},
		{"file added", func(t *testing.T, root string) { os.WriteFile(filepath.Join(root, "s/0.txt"), nil, 0o644) }, false},
	}
	for _, e := range edits {
		t.Run(e.name, func(t *testing.T) {
			root, a, resume := setup(t)
			e.edit(t, root)
			b := detWorker(t, root, key, "--max-scan-bytes", "16384")
			for _, cs := range []*mcp.ClientSession{a, b} {
				if e.survive {
					ok(t, cs, "search_text", resume)
				} else {
					fails(t, cs, "search_text", resume, changed)
				}
			}
		})
	}
}

func TestDeterministicHashBudget(t *testing.T) {
	root := tree(t, map[string]string{
		"big/a.txt":   strings.Repeat("needle\n", 1000), // 7000 bytes
		"big/b.txt":   strings.Repeat("needle\n", 1000),
		"small/c.txt": "needle\n",
	})
	key := newKey(t, 32)
	limited := func() *mcp.ClientSession {
		return detWorker(t, root, key, "--max-cursor-hash-bytes", "10000", "--max-read-bytes", "1024")
	}
	cs := limited()
	r := fails(t, cs, "search_text", map[string]any{"query": "needle"}, "deterministic cursor hashing exceeds the configured byte ceiling")
	if strings.Contains(r.text, root) {
		t.Fatalf("error leaks the host path: %q", r.text)
	}
	// A refused call hashes (and caches) nothing: retrying fails alike,
	// and so does the narrower scope that still exceeds the budget.
	fails(t, cs, "search_text", map[string]any{"query": "needle"}, "deterministic cursor hashing exceeds the configured byte ceiling")
	fails(t, cs, "search_text", map[string]any{"query": "needle", "path": "big"}, "deterministic cursor hashing exceeds the configured byte ceiling")
	ok(t, cs, "search_text", map[string]any{"query": "needle", "path": "small"})
	// The budget counts uncached hashing: once big/a.txt's digest is
	// cached by a read, the whole root needs only b.txt and c.txt hashed
	// (7007 <= 10000 bytes).
	cs = limited()
	ok(t, cs, "read_text_file", map[string]any{"path": "big/a.txt"})
	ok(t, cs, "search_text", map[string]any{"query": "needle"})
	// A single file larger than the budget cannot be read with a cursor.
	cs2 := detWorker(t, root, key, "--max-cursor-hash-bytes", "5000", "--max-read-bytes", "1024")
	fails(t, cs2, "read_text_file", map[string]any{"path": "big/a.txt"}, "deterministic cursor hashing exceeds the configured byte ceiling")
	ok(t, cs2, "read_text_file", map[string]any{"path": "small/c.txt"})
	// Path-only listings hash nothing.
	ok(t, cs2, "list_directory", map[string]any{"path": "big"})
	ok(t, cs2, "search_files", map[string]any{"query": "a"})
}

// TestDefaultCursorsProcessAffine: without a key, a cursor from one process
// is refused by another on the same root, for every paging tool.
func TestDefaultCursorsProcessAffine(t *testing.T) {
	files := map[string]string{"f.txt": strings.Repeat("needle 0123456789\n", 2000)}
	for i := 0; i < 20; i++ {
		files["d/f"+itoa(i)+".txt"] = "x"
	}
	root := tree(t, files)
	a := worker(t, root, "--include", "**", "--max-scan-bytes", "16384")
	b := worker(t, root, "--include", "**", "--max-scan-bytes", "16384")
	for _, tc := range []struct {
		tool string
		args map[string]any
	}{
		{"list_directory", map[string]any{"path": "d", "limit": 3}},
		{"search_files", map[string]any{"query": "f", "limit": 3}},
		{"read_text_file", map[string]any{"path": "f.txt"}},
		{"search_text", map[string]any{"query": "needle", "limit": 3}},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			r := ok(t, a, tc.tool, tc.args)
			resume := map[string]any{"cursor": *r.page.NextCursor}
			for k, v := range tc.args {
				resume[k] = v
			}
			ok(t, a, tc.tool, resume)
			fails(t, b, tc.tool, resume, "cursor is not valid")
		})
	}
}
