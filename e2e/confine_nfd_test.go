//go:build linux

package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsmcp/fsmcp/e2e/internal/fusefs"
)

// TestDecomposedNamesServedAsListed: a name is served only as its directory
// lists it. HFS+ stores names decomposed (NFD) and finds an entry whatever
// the normalization of the name asked for, so a file created as "café.txt"
// (precomposed) is listed, found and read as "cafe\u0301.txt"; asked for
// by its precomposed spelling, the worker answers as for a missing file.
// The same holds where names are bytes (ext4, tmpfs): there the
// precomposed spelling names nothing.
func TestDecomposedNamesServedAsListed(t *testing.T) {
	const nfc, nfd = "caf\u00e9.txt", "cafe\u0301.txt"
	const body = "croissant\n"
	for _, tc := range []struct {
		name  string
		mount bool // through a filesystem that stores names decomposed
	}{
		{"decomposing FUSE, as HFS+", true},
		{"byte-exact names", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			host := t.TempDir()
			root := host
			if tc.mount {
				root = t.TempDir()
				fusefs.Mount(t, root, fusefs.NewDecomposing(host))
				if err := os.WriteFile(filepath.Join(root, nfc), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
				// The filesystem must behave as HFS+, or the cases
				// below prove nothing.
				if b, err := os.ReadFile(filepath.Join(root, nfc)); err != nil || string(b) != body {
					t.Fatalf("reading %q through the mount: %q, %v", nfc, b, err)
				}
				if _, err := os.Lstat(filepath.Join(host, nfd)); err != nil {
					t.Fatalf("the mount did not store %q decomposed: %v", nfc, err)
				}
			} else if err := os.WriteFile(filepath.Join(root, nfd), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			cs := worker(t, root, "--include", "**")
			var listed []struct {
				Name string `json:"name"`
			}
			r := ok(t, cs, "list_directory", map[string]any{"path": ""})
			if err := json.Unmarshal(mustJSON(r.page.Items), &listed); err != nil {
				t.Fatal(err)
			}
			if len(listed) != 1 || listed[0].Name != nfd {
				t.Fatalf("listed %s, want the one entry %q", mustJSON(r.page.Items), nfd)
			}
			if r := ok(t, cs, "read_text_file", map[string]any{"path": nfd}); !strings.Contains(string(mustJSON(r.page.Items)), "croissant") {
				t.Errorf("reading %q: %s", nfd, mustJSON(r.page.Items))
			}
			for _, tool := range []string{"search_files", "search_text"} {
				query := "caf"
				if tool == "search_text" {
					query = "croissant"
				}
				r := ok(t, cs, tool, map[string]any{"query": query})
				if got := string(mustJSON(r.page.Items)); !strings.Contains(got, `"path":"`+nfd+`"`) || strings.Contains(got, nfc) {
					t.Errorf("%s: %s, want the path %q as listed", tool, got, nfd)
				}
			}
			missing := call(t, cs, "read_text_file", map[string]any{"path": "nosuch.txt"})
			precomposed := call(t, cs, "read_text_file", map[string]any{"path": nfc})
			if !precomposed.isError || precomposed.text != strings.ReplaceAll(missing.text, "nosuch.txt", nfc) {
				t.Errorf("reading %q: %v %q, want a missing file's answer %q", nfc, precomposed.isError, precomposed.text, missing.text)
			}
			if r := call(t, cs, "search_text", map[string]any{"query": "croissant", "path": nfc}); r.isError || len(r.page.Items) != 0 {
				t.Errorf("search_text in %q: %v %s, want an empty page", nfc, r.isError, mustJSON(r.page.Items))
			}
		})
	}
}
