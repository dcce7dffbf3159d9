//go:build !linux || fsmcp_portable

package walk

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fsmcp/fsmcp/internal/limits"
	"github.com/fsmcp/fsmcp/worker/watch"
)

// TestNoInventoryWithoutWatches: the portable backend cannot watch, so no
// scope is kept (a later page could not tell whether the tree changed):
// every page walks, a later one too, and sees a change made between two
// pages.
func TestNoInventoryWithoutWatches(t *testing.T) {
	dir := t.TempDir()
	for i := range 4 {
		writeTree(t, dir, "needle\n", fmt.Sprintf("d%d/f%d.txt", i%2, i))
	}
	tree := openTree(t, dir, limits.Default)
	c := NewInventories(watch.NewBudget(1<<15), time.Minute)
	t.Cleanup(c.Close)
	for round, want := range []int{4, 5} {
		w := tree.Walk(context.Background())
		sc, err := w.OpenScope("", true)
		if err != nil {
			t.Fatal(err)
		}
		inv, _, err := c.Take(w, sc, func(files []File) (string, error) { return "", nil })
		sc.Close()
		if err != nil {
			t.Fatal(err)
		}
		if got := len(inv.Files); got != want {
			t.Fatalf("page %d: %d files, want %d", round+1, got, want)
		}
		if n := len(c.scopes); n != 0 {
			t.Fatalf("page %d kept %d scopes, want none", round+1, n)
		}
		if n := c.set.Len(); n != 0 {
			t.Fatalf("page %d holds %d watches, want none", round+1, n)
		}
		if err := os.WriteFile(filepath.Join(dir, "d0", "new.txt"), []byte("needle\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
