//go:build linux && !fsmcp_portable

package walk

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fsmcp/fsmcp/internal/limits"
	"github.com/fsmcp/fsmcp/worker/watch"
)

// take takes c's inventory of the scope dir of tree as a search page
// takes it.
func take(t *testing.T, tree *Tree, c *Inventories, dir string) *Inventory {
	t.Helper()
	w := tree.Walk(context.Background())
	sc, err := w.OpenScope(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	inv, _, err := c.Take(w, sc, func(files []File) (string, error) { return fmt.Sprint(len(files)), nil })
	if err != nil {
		t.Fatal(err)
	}
	return inv
}

// newInventories is a cache of budget watches, idle after idle, closed
// with the test.
func newInventories(t *testing.T, budget int, idle time.Duration) *Inventories {
	c := NewInventories(watch.NewBudget(budget), idle)
	t.Cleanup(c.Close)
	return c
}

// TestInventoryCache takes the inventory of the same tree with a cache,
// with a watch budget too small for the scope (every page walks) and
// after a change: the inventories agree, a later page takes the kept one,
// and only the first cache keeps the scope, with a watch for each
// directory and for the file with a second link.
func TestInventoryCache(t *testing.T) {
	dir := t.TempDir()
	line := strings.Repeat("x", 100) + " needle\n"
	for i := range 6 {
		writeTree(t, dir, strings.Repeat(line, 200), fmt.Sprintf("d%d/f%d.txt", i%2, i))
	}
	// f5 has a second link (outside the root), so a watch of its own.
	if err := os.Link(filepath.Join(dir, "d1", "f5.txt"), filepath.Join(t.TempDir(), "f5-link")); err != nil {
		t.Fatal(err)
	}
	tree := openTree(t, dir, limits.Default)
	cached, walked := newInventories(t, 1<<15, time.Minute), newInventories(t, 2, time.Minute)
	want := take(t, tree, walked, "").Files
	if len(want) != 6 {
		t.Fatalf("%d files, want 6", len(want))
	}
	kept := take(t, tree, cached, "")
	if !slices.Equal(kept.Files, want) {
		t.Fatal("the caching inventories found other files than the walking ones")
	}
	if take(t, tree, cached, "") != kept {
		t.Fatal("a later page walked instead of taking the kept inventory")
	}
	if n := len(cached.scopes); n != 1 {
		t.Fatalf("the cache keeps %d scopes, want 1", n)
	}
	if n := len(walked.scopes); n != 0 {
		t.Fatalf("the cache without enough watches keeps %d scopes, want 0", n)
	}
	if n := cached.set.Len(); n != 3+1 {
		t.Fatalf("%d watches, want 4 (3 directories, the file with two links)", n)
	}

	// A change drops the cache; the next page sees it.
	if err := os.WriteFile(filepath.Join(dir, "d0", "f0.txt"), []byte("needle\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	want = take(t, tree, walked, "").Files
	if want[0].ID.Size != int64(len("needle\n")) {
		t.Fatalf("the walking inventory holds d0/f0.txt as %d bytes, want %d", want[0].ID.Size, len("needle\n"))
	}
	if got := take(t, tree, cached, ""); got == kept || !slices.Equal(got.Files, want) {
		t.Fatal("the kept inventory missed the change")
	}
}

// TestInventorySwappedScope swaps the scope directory after the call
// opened it and before its inventory is taken: the inventory the call
// walks is of the directory it opened, but it is not kept, since no watch
// saw the swap and a kept one would fail every later page.
func TestInventorySwappedScope(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, "needle\n", "a/d/one.txt", "a/e/two.txt")
	tree := openTree(t, dir, limits.Default)
	c := newInventories(t, 1<<15, time.Minute)
	for _, tc := range []struct {
		name string
		swap func()
	}{
		{"scope", func() {
			os.Rename(filepath.Join(dir, "a/d"), filepath.Join(dir, "a/x"))
			os.Rename(filepath.Join(dir, "a/e"), filepath.Join(dir, "a/d"))
		}},
		{"ancestor", func() {
			os.Rename(filepath.Join(dir, "a"), filepath.Join(dir, "b"))
			os.MkdirAll(filepath.Join(dir, "a/d"), 0o755)
			os.WriteFile(filepath.Join(dir, "a/d/three.txt"), []byte("needle\n"), 0o644)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := tree.Walk(context.Background())
			sc, err := w.OpenScope("a/d", true)
			if err != nil {
				t.Fatal(err)
			}
			defer sc.Close()
			before := sc.D
			tc.swap()
			inv, _, err := c.Take(w, sc, func([]File) (string, error) { return "", nil })
			if err != nil {
				t.Fatal(err)
			}
			if sc.D != before || len(inv.Files) != 1 {
				t.Fatalf("inventory %+v", inv.Files)
			}
			if n := len(c.scopes); n != 0 {
				t.Fatalf("the cache keeps %d scopes after a swap no watch saw, want 0", n)
			}
		})
	}
}

// TestInventoryIdle: kept inventories give their watches back once idle
// for their idle time, not before; the timer does it on its own; the next
// search walks and keeps again; a walk that is not kept leaves no watches
// behind.
func TestInventoryIdle(t *testing.T) {
	dir := t.TempDir()
	for i := range 4 { // 5 directories: over a cap of 2 watches
		writeTree(t, dir, "needle\n", fmt.Sprintf("d%d/f.txt", i))
	}
	tree := openTree(t, dir, limits.Default)
	c := newInventories(t, 1<<15, time.Hour)
	held := func() (int, int) {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.set.Len(), len(c.scopes)
	}
	idleAfter := func(d time.Duration) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.idleAfter = d
	}

	take(t, tree, c, "")
	if w, s := held(); w == 0 || s != 1 {
		t.Fatalf("after a search: %d watches, %d scopes kept", w, s)
	}
	c.expire() // not idle for an hour: keeps
	if w, s := held(); w == 0 || s != 1 {
		t.Fatalf("expired before its idle time: %d watches, %d scopes", w, s)
	}
	idleAfter(20 * time.Millisecond)
	time.Sleep(30 * time.Millisecond)
	c.expire()
	if w, s := held(); w != 0 || s != 0 {
		t.Fatalf("idle past its time: %d watches, %d scopes still held", w, s)
	}

	idleAfter(100 * time.Millisecond)
	take(t, tree, c, "")
	if w, s := held(); w == 0 || s != 1 {
		t.Fatalf("after the idle time, a search keeps %d watches, %d scopes", w, s)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if w, s := held(); w == 0 && s == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("watches still held 10 s after the last search (idle time 100 ms)")
		}
		time.Sleep(20 * time.Millisecond)
	}

	small := newInventories(t, 2, time.Minute)
	take(t, tree, small, "")
	if n := small.set.Len(); n != 0 {
		t.Fatalf("a walk over the watch cap left %d watches", n)
	}
}

// TestInventoryDrop: a page takes the kept inventory, fresh or resumed,
// even after a change no watch reports (here a write through a hard link
// made after the walk); once its caller drops it for that, the next page
// walks, sees the change, and its inventory is the one kept.
func TestInventoryDrop(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, "needle\n", "s/a.txt", "s/b.txt")
	tree := openTree(t, dir, limits.Default)
	c := newInventories(t, 1<<15, time.Minute)
	kept := take(t, tree, c, "s")
	if !c.Kept("s", kept) {
		t.Fatalf("the scope of %s is not kept: its temporary directory must be on ext4, xfs, btrfs or tmpfs (run with TMPDIR=/dev/shm)", dir)
	}
	if inv := take(t, tree, c, "s"); inv != kept {
		t.Fatal("a page walked instead of taking the kept inventory")
	}

	link := filepath.Join(t.TempDir(), "b-link")
	if err := os.Link(filepath.Join(dir, "s/b.txt"), link); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(link, []byte("needle, written elsewhere\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if inv := take(t, tree, c, "s"); inv != kept {
		t.Fatal("a page walked: no watch reports a write through a link made later")
	}
	c.Drop("s", kept)
	walked := take(t, tree, c, "s")
	if walked == kept || len(walked.Files) != 2 || walked.Files[1].ID.Size != int64(len("needle, written elsewhere\n")) {
		t.Fatalf("the inventory after the drop %+v does not hold b.txt as written through its later link", walked.Files)
	}
	if !c.Kept("s", walked) {
		t.Fatal("the walked inventory is not the one kept for the pages after")
	}
}
