//go:build linux

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// splitTree is a tree big enough that the worker inventories it on two
// goroutines (over 1,000 entries in 48 subtrees; see worker/walk/split.go):
// names that sort around a directory's '/' ('-' and '.' before it, '0'
// after) at every level, files beside directories, and a line naming each
// file's path. It returns the root and the hits of "needle" in path order.
func splitTree(t *testing.T) (string, []textHit) {
	files := map[string]string{}
	for i := range 48 {
		for _, n := range []string{"x-1", "x.go", "x0", "x.e", "x/y0", "x/y.go", "x/y-", "x.d/a", "x-d/a", "x0d/a"} {
			files[fmt.Sprintf("p%02d/%s", i, n)] = ""
		}
		for j := range 30 {
			files[fmt.Sprintf("p%02d/x/y/z%02d", i, j)] = ""
		}
	}
	var want []textHit
	for p := range files {
		files[p] = "needle " + p + "\n"
		want = append(want, textHit{p, 1, "needle " + p})
	}
	slices.SortFunc(want, byPath)
	return tree(t, files), want
}

// TestSearchTextSplitWalk: a whole-tree search_text whose scope the worker
// walks on two goroutines gives every hit in path order, again on a second
// search; a change in the last subtree is seen by the next search; the
// file ceiling fails the call with its exact text one file short of the
// tree, and passes at the tree's size.
func TestSearchTextSplitWalk(t *testing.T) {
	root, want := splitTree(t)
	cs := worker(t, root, "--include", "**")
	hits, _, _ := searchAll(t, cs, map[string]any{"query": "needle"}, 1<<20)
	sameHits(t, hits, want)
	// again, walked again with the inventory of the first kept
	hits, _, _ = searchAll(t, cs, map[string]any{"query": "needle"}, 1<<20)
	sameHits(t, hits, want)

	last := "p47/x/y/z29"
	if err := os.WriteFile(filepath.Join(root, last), []byte("needle "+last+"\nneedle again\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	want = append(want, textHit{last, 2, "needle again"})
	slices.SortFunc(want, byPath)
	hits, _, _ = searchAll(t, cs, map[string]any{"query": "needle"}, 1<<20)
	sameHits(t, hits, want)

	n := len(want) - 1 // files
	for _, max := range []int{n - 1, n} {
		cs := worker(t, root, "--include", "**", "--max-files", strconv.Itoa(max))
		if max < n {
			if r := fails(t, cs, "search_text", map[string]any{"query": "needle"}, "file limit exceeded"); r.text != "file limit exceeded" {
				t.Fatalf("--max-files %d: %q", max, r.text)
			}
			continue
		}
		hits, _, _ := searchAll(t, cs, map[string]any{"query": "needle"}, 1<<20)
		sameHits(t, hits, want)
	}
}

// byPath orders hits as a search gives them: by path in byte order (a
// walk's order, a directory sorting as its name and '/'), then by line.
func byPath(a, b textHit) int {
	if c := strings.Compare(a.Path, b.Path); c != 0 {
		return c
	}
	return a.Line - b.Line
}
