package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

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

// TestInventoryCache pages through the same tree with the cache, with a
// watch limit too small for the scope (every page walks) and after a
// change: the answers agree, and only the first root keeps the scope.
func TestInventoryCache(t *testing.T) {
	dir := t.TempDir()
	line := strings.Repeat("x", 100) + " needle\n"
	for i := range 6 {
		p := filepath.Join(dir, fmt.Sprintf("d%d", i%2), fmt.Sprintf("f%d.txt", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(strings.Repeat(line, 200)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	open := func(watches int) *Root {
		lim := DefaultLimits
		lim.MaxScanBytes = 16384
		r, err := Open(Config{Root: dir, Include: []string{"**"}, Limits: lim})
		if err != nil {
			t.Fatal(err)
		}
		r.inv = newInventories(watch.NewBudget(watches))
		t.Cleanup(func() { r.Close() })
		return r
	}
	// f5 has a second link (outside the root), so a watch of its own.
	if err := os.Link(filepath.Join(dir, "d1", "f5.txt"), filepath.Join(t.TempDir(), "f5-link")); err != nil {
		t.Fatal(err)
	}
	cached, walked := open(maxWatches), open(2)
	want := searchPages(t, walked, "needle")
	if len(want) != 6*200 {
		t.Fatalf("%d matches, want %d", len(want), 6*200)
	}
	if got := searchPages(t, cached, "needle"); !slices.Equal(got, want) {
		t.Fatal("the cached root answered differently from the walking one")
	}
	if n := len(cached.inv.scopes); n != 1 {
		t.Fatalf("the cached root keeps %d scopes, want 1", n)
	}
	if n := len(walked.inv.scopes); n != 0 {
		t.Fatalf("the root without enough watches keeps %d scopes, want 0", n)
	}
	if n := cached.inv.set.Len(); n != 3+1 {
		t.Fatalf("%d watches, want 4 (3 directories, the file with two links)", n)
	}

	// A change drops the cache; the next search sees it.
	if err := os.WriteFile(filepath.Join(dir, "d0", "f0.txt"), []byte("needle\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	want = searchPages(t, walked, "needle")
	if len(want) != 5*200+1 {
		t.Fatalf("%d matches after the change, want %d", len(want), 5*200+1)
	}
	if got := searchPages(t, cached, "needle"); !slices.Equal(got, want) {
		t.Fatal("the cached root missed the change")
	}
}

// TestInventorySwappedScope swaps the scope directory after the call
// opened it and before its inventory is taken: the inventory the call
// walks is of the directory it opened, but it is not kept, since no watch
// saw the swap and a kept one would fail every later page.
func TestInventorySwappedScope(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"a/d/one.txt", "a/e/two.txt"} {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte("needle\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r, err := Open(Config{Root: dir, Include: []string{"**"}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
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
			c, err := checkSearch("search_text", searchArgs{Query: json.RawMessage(`"needle"`), Path: "a/d"})
			if err != nil {
				t.Fatal(err)
			}
			s, err := r.openSearch(context.Background(), c, true)
			if err != nil {
				t.Fatal(err)
			}
			defer s.close()
			before := s.d
			tc.swap()
			inv, err := r.scopeInventory(s, false)
			if err != nil {
				t.Fatal(err)
			}
			if s.d != before || len(inv.files) != 1 {
				t.Fatalf("inventory %+v", inv.files)
			}
			if n := len(r.inv.scopes); n != 0 {
				t.Fatalf("the root keeps %d scopes after a swap no watch saw, want 0", n)
			}
		})
	}
}

// TestInventoryIdle: kept inventories give their watches back once idle
// for watchIdle, not before; the timer does it on its own; the next search
// walks and keeps again; a walk that is not kept leaves no watches behind.
func TestInventoryIdle(t *testing.T) {
	idle := watchIdle
	t.Cleanup(func() { watchIdle = idle })
	dir := t.TempDir()
	for i := range 4 { // 5 directories: over a cap of 2 watches
		p := filepath.Join(dir, fmt.Sprintf("d%d", i), "f.txt")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("needle\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r, err := Open(Config{Root: dir, Include: []string{"**"}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	held := func() (int, int) {
		r.inv.mu.Lock()
		defer r.inv.mu.Unlock()
		return r.inv.set.Len(), len(r.inv.scopes)
	}

	watchIdle = time.Hour
	searchPages(t, r, "needle")
	if w, s := held(); w == 0 || s != 1 {
		t.Fatalf("after a search: %d watches, %d scopes kept", w, s)
	}
	r.inv.expire() // not idle for an hour: keeps
	if w, s := held(); w == 0 || s != 1 {
		t.Fatalf("expired before its idle time: %d watches, %d scopes", w, s)
	}
	watchIdle = 20 * time.Millisecond
	time.Sleep(30 * time.Millisecond)
	r.inv.expire()
	if w, s := held(); w != 0 || s != 0 {
		t.Fatalf("idle past its time: %d watches, %d scopes still held", w, s)
	}

	watchIdle = 100 * time.Millisecond
	searchPages(t, r, "needle")
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

	small, err := Open(Config{Root: dir, Include: []string{"**"}})
	if err != nil {
		t.Fatal(err)
	}
	defer small.Close()
	small.inv = newInventories(watch.NewBudget(2))
	searchPages(t, small, "needle")
	if n := small.inv.set.Len(); n != 0 {
		t.Fatalf("a walk over the watch cap left %d watches", n)
	}
}

// TestInventoryFreshWalks: a fresh search walks its scope even while an
// inventory of it is kept, so it sees what no watch reports (here a write
// through a hard link made after the walk); a page resumed from a cursor
// takes the kept inventory without walking; a walk that finds the kept
// inventory's files unchanged keeps the kept one.
func TestInventoryFreshWalks(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"s/a.txt", "s/b.txt"} {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte("needle\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r, err := Open(Config{Root: dir, Include: []string{"**"}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	inventoryOf := func(resumed bool) *inventory {
		t.Helper()
		c, err := checkSearch("search_text", searchArgs{Query: json.RawMessage(`"needle"`), Path: "s"})
		if err != nil {
			t.Fatal(err)
		}
		s, err := r.openSearch(context.Background(), c, true)
		if err != nil {
			t.Fatal(err)
		}
		defer s.close()
		inv, err := r.scopeInventory(s, resumed)
		if err != nil {
			t.Fatal(err)
		}
		return inv
	}
	kept := inventoryOf(false)
	if !r.inv.isKept("s", kept) {
		t.Fatalf("the scope of %s is not kept: its temporary directory must be on ext4, xfs, btrfs or tmpfs (run with TMPDIR=/dev/shm)", dir)
	}
	if inv := inventoryOf(true); inv != kept {
		t.Fatal("a resumed page walked instead of taking the kept inventory")
	}
	if inv := inventoryOf(false); inv != kept {
		t.Fatal("a fresh walk that found the same files did not keep the kept inventory")
	}

	link := filepath.Join(t.TempDir(), "b-link")
	if err := os.Link(filepath.Join(dir, "s/b.txt"), link); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(link, []byte("needle, written elsewhere\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if inv := inventoryOf(true); inv != kept {
		t.Fatal("a resumed page walked: no watch reports a write through a link made later")
	}
	fresh := inventoryOf(false)
	if fresh == kept || len(fresh.files) != 2 || fresh.files[1].ID.Size != int64(len("needle, written elsewhere\n")) {
		t.Fatalf("a fresh search's inventory %+v does not hold b.txt as written through its later link", fresh.files)
	}
	if !r.inv.isKept("s", fresh) {
		t.Fatal("the fresh search's inventory is not the one kept for its later pages")
	}
}
