package worker

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fsmcp/fsmcp/worker/walk"
	"github.com/fsmcp/fsmcp/worker/watch"
)

// searchPages follows search_text's cursors from the start and returns
// the items' evidence in order.
func searchPages(t *testing.T, r *Root, query string) []string {
	t.Helper()
	q, _ := json.Marshal(query)
	var got []string
	for _, p := range followPages(t, r, searchArgs{Query: q}) {
		got = append(got, p.items...)
	}
	return got
}

// TestSearchTextKeptOrWalked pages through the same tree with inventories
// kept, with a watch budget too small for the scope (every page walks;
// walk.TestInventoryCache shows nothing is kept then) and after a change:
// the answers agree.
func TestSearchTextKeptOrWalked(t *testing.T) {
	dir := t.TempDir()
	line := strings.Repeat("x", 100) + " needle\n"
	for i := range 6 {
		writeFile(t, filepath.Join(dir, fmt.Sprintf("d%d", i%2), fmt.Sprintf("f%d.txt", i)), []byte(strings.Repeat(line, 200)))
	}
	open := func(watches int) *Root {
		lim := DefaultLimits
		lim.MaxScanBytes = 16384
		r, err := Open(Config{Root: dir, Include: []string{"**"}, Limits: lim})
		if err != nil {
			t.Fatal(err)
		}
		r.inv.Close()
		r.inv = walk.NewInventories(watch.NewBudget(watches), watchIdle)
		t.Cleanup(func() { r.Close() })
		return r
	}
	// f5 has a second link (outside the root), so a watch of its own.
	if err := os.Link(filepath.Join(dir, "d1", "f5.txt"), filepath.Join(t.TempDir(), "f5-link")); err != nil {
		t.Fatal(err)
	}
	kept, walked := open(maxWatches), open(2)
	want := searchPages(t, walked, "needle")
	if len(want) != 6*200 {
		t.Fatalf("%d matches, want %d", len(want), 6*200)
	}
	if got := searchPages(t, kept, "needle"); !slices.Equal(got, want) {
		t.Fatal("the root keeping inventories answered differently from the walking one")
	}

	// A change drops the kept inventory; the next search sees it.
	if err := os.WriteFile(filepath.Join(dir, "d0", "f0.txt"), []byte("needle\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	want = searchPages(t, walked, "needle")
	if len(want) != 5*200+1 {
		t.Fatalf("%d matches after the change, want %d", len(want), 5*200+1)
	}
	if got := searchPages(t, kept, "needle"); !slices.Equal(got, want) {
		t.Fatal("the root keeping inventories missed the change")
	}
}
