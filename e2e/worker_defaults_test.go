//go:build linux

package e2e

import (
	"strings"
	"testing"
)

// TestDefaults checks the documented defaults where they are observable
// without building enormous trees.
func TestDefaults(t *testing.T) {
	deep := strings.Repeat("d/", 64) + "f.txt"
	deeper := strings.Repeat("e/", 65) + "f.txt"
	root := tree(t, map[string]string{
		"big.txt": strings.Repeat("0123456789", 5000),
		deep:      "at depth 64",
		deeper:    "at depth 65",
	})
	cs := worker(t, root, "--include", "**")

	r := ok(t, cs, "read_text_file", map[string]any{"path": "big.txt"})
	n := 0
	for _, c := range items[chunkItem](t, r) {
		n += len(c.Text)
	}
	if n != 16384 {
		t.Errorf("default read page holds %d bytes, want 16384 (--max-read-bytes)", n)
	}
	ok(t, cs, "write_text_file", map[string]any{"path": "w.txt", "content": strings.Repeat("x", 65536)})
	fails(t, cs, "write_text_file", map[string]any{"path": "w.txt", "content": strings.Repeat("x", 65537)}, "content exceeds the 65536-byte write limit")

	ok(t, cs, "read_text_file", map[string]any{"path": deep})
	fails(t, cs, "search_files", map[string]any{"query": "f.txt"}, "directory depth limit exceeded")
	cs = worker(t, root, "--include", "**", "--max-depth", "70")
	r = ok(t, cs, "search_files", map[string]any{"query": "f.txt"})
	if len(r.page.Items) != 2 {
		t.Errorf("found %d deep files with --max-depth 70", len(r.page.Items))
	}
}
