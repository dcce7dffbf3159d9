//go:build !fsmcp_portable

package confine

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fsmcp/fsmcp/worker/watch"
)

// A Guard reports a write to the file it guards made while it was set, by
// any name, and nothing else: not a write before, not a sibling's.
func TestGuard(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"d/f.txt", "d/sibling.txt", "d/linked.txt", "d/g2.txt"} {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte("one\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "e"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(dir, "d/linked.txt"), filepath.Join(dir, "e/other-name.txt")); err != nil {
		t.Fatal(err)
	}
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	write := func(p string) {
		t.Helper()
		f, err := os.OpenFile(filepath.Join(dir, p), os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteAt([]byte("two\n"), 0); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name, open, before, during string
		want                       bool
	}{
		{"no write", "d/f.txt", "", "", false},
		{"write before", "d/f.txt", "d/f.txt", "", false},
		{"write during", "d/f.txt", "", "d/f.txt", true},
		{"sibling written", "d/f.txt", "", "d/sibling.txt", false},
		{"written through another link", "d/linked.txt", "", "e/other-name.txt", true},
	} {
		for _, kind := range []string{"file", "scan", "shared"} {
			t.Run(tc.name+"/"+kind, func(t *testing.T) {
				if tc.before != "" {
					write(tc.before)
				}
				f, _, err := r.OpenReader(tc.open)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				var g *Guard
				var sg *ScanGuard
				if kind == "file" {
					g = r.GuardReader(f)
				} else {
					sg = r.NewScanGuard()
					defer sg.Close()
					// Another file of the directory first, as a page does.
					if other, _, err := r.OpenReader("d/sibling.txt"); err == nil {
						sg.Guard(other, "d/sibling.txt").Close()
						other.Close()
					}
					g = sg.Guard(f, tc.open)
				}
				if g == nil {
					t.Fatal("no guard: inotify unavailable")
				}
				defer g.Close()
				if tc.during != "" {
					write(tc.during)
				}
				if kind != "shared" {
					if got := g.Changed(); got != tc.want {
						t.Errorf("Changed() = %v, want %v", got, tc.want)
					}
					return
				}
				// As a page checks the files it scanned ahead: g settles,
				// then another file's guard settles and is checked first,
				// reading the queue; g's check then reads nothing more and
				// tells the same.
				g.Settle()
				other, _, err := r.OpenReader("d/g2.txt")
				if err != nil {
					t.Fatal(err)
				}
				defer other.Close()
				g2 := sg.Guard(other, "d/g2.txt")
				g2.Settle()
				if g2.Check() {
					t.Error("the other file's guard reports a change")
				}
				drains := r.guards.drains.Load()
				if drains <= g.drains {
					t.Error("the other guard's check began no read of the queue")
				}
				if got := g.Check(); got != tc.want {
					t.Errorf("Check() after another guard's = %v, want %v", got, tc.want)
				}
				if g.Shared() && r.guards.drains.Load() != drains {
					t.Error("Check read the queue again after a drain begun since Settle")
				}
			})
		}
	}
}

// A watch no read uses is kept (at most keepIdle of them) and serves the
// next read of the same file: writes made while it was idle do not count
// against that read, writes during it do, and a file replaced under its
// name while the old one's watch waited is watched as itself.
func TestGuardKeepsIdleWatches(t *testing.T) {
	budget := watch.NewBudget(100)
	dir := t.TempDir()
	names := make([]string, 3*keepIdle)
	for i := range names {
		names[i] = fmt.Sprintf("f%02d.txt", i)
		if err := os.WriteFile(filepath.Join(dir, names[i]), []byte("one\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	r.KeepIdleWatches(budget, time.Hour)
	write := func(p string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, p), []byte("two\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// read guards p, writes it during the read if during, and reports
	// whether the guard saw a change.
	read := func(p string, during bool) bool {
		t.Helper()
		f, _, err := r.OpenReader(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		g := r.GuardReader(f)
		if g == nil {
			t.Fatal("no guard: inotify unavailable")
		}
		defer g.Close()
		if during {
			write(p)
		}
		return g.Changed()
	}
	for _, step := range []struct {
		name         string
		idleWrite    bool
		replace      bool
		during, want bool
	}{
		{"first read", false, false, false, false},
		{"written while idle", true, false, false, false},
		{"written during the read", false, false, true, true},
		{"written while idle, then during", true, false, true, true},
		{"replaced while idle", false, true, false, false},
		{"replaced while idle, written during", false, true, true, true},
	} {
		if step.idleWrite {
			write(names[0])
		}
		if step.replace {
			if err := os.Remove(filepath.Join(dir, names[0])); err != nil {
				t.Fatal(err)
			}
			write(names[0])
		}
		if got := read(names[0], step.during); got != step.want {
			t.Errorf("%s: Changed() = %v, want %v", step.name, got, step.want)
		}
	}
	for _, p := range names {
		if read(p, false) {
			t.Errorf("%s: Changed() with no write", p)
		}
	}
	r.guards.mu.Lock()
	kept, idle := len(r.guards.wds), len(r.guards.idle)
	r.guards.mu.Unlock()
	if idle == 0 || idle > keepIdle || kept > keepIdle+1 { // +1: a lost watch not yet dropped
		t.Errorf("after %d files: %d watches kept, %d idle; want 1 to %d", len(names), kept, idle, keepIdle)
	}
	if n := budgetUsed(budget, 100); n != idle {
		t.Errorf("%d idle watches hold %d of the budget", idle, n)
	}
}

// The idle watches are spares of the root's watch budget: they take only
// what is left of it, are given back as soon as another holder (a kept
// search inventory's Set) is short, and all go once none has been used
// for the idle time, in the kernel as well as here.
func TestGuardIdleWatchesShareTheBudget(t *testing.T) {
	dir := t.TempDir()
	var files, dirs []string
	for i := range keepIdle + 4 {
		files = append(files, fmt.Sprintf("f%02d.txt", i))
		dirs = append(dirs, fmt.Sprintf("d%02d", i))
		if err := os.WriteFile(filepath.Join(dir, files[i]), []byte("one\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(filepath.Join(dir, dirs[i]), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	const idleFor = time.Second
	budget := watch.NewBudget(keepIdle + 4)
	r.KeepIdleWatches(budget, idleFor)
	readAll := func() {
		t.Helper()
		for _, p := range files {
			f, _, err := r.OpenReader(p)
			if err != nil {
				t.Fatal(err)
			}
			g := r.GuardReader(f)
			if g == nil {
				t.Fatal("no guard: inotify unavailable")
			}
			g.Close()
			f.Close()
		}
	}
	// check compares the idle watches, the budget used and the watches
	// the kernel holds for the guards with want (the Set's own count
	// in the budget, not in the guards' instance, is setHolds).
	check := func(step string, want, setHolds int) {
		t.Helper()
		r.guards.mu.Lock()
		idle, held, kernel := len(r.guards.idle), len(r.guards.wds), -1
		if r.guards.on {
			kernel = kernelWatches(t, r.guards.fd)
		}
		r.guards.mu.Unlock()
		if idle != want || held != want || kernel != want || budgetUsed(budget, keepIdle+4) != want+setHolds {
			t.Fatalf("%s: %d idle, %d held, %d in the kernel, %d of the budget used; want %d, %d, %d, %d",
				step, idle, held, kernel, budgetUsed(budget, keepIdle+4), want, want, want, want+setHolds)
		}
	}

	s := watch.NewIn(budget)
	defer s.Close()
	watchDirs := func(ds []string) {
		t.Helper()
		for _, p := range ds {
			d, err := r.OpenDir(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := d.Watch(s); err != nil {
				t.Fatalf("watch %s with %d of %d used: %v", p, budgetUsed(budget, keepIdle+4), keepIdle+4, err)
			}
			d.Close()
		}
	}
	watchDirs(dirs[:10])
	readAll()
	check("10 of 20 held by a Set", keepIdle+4-10, 10)
	watchDirs(dirs[10:12])
	check("the Set short of watches", 0, 12)
	s.Close()
	readAll()
	check("the Set closed", keepIdle, 0)
	time.Sleep(idleFor / 4)
	readAll() // used again: the idle time starts over
	time.Sleep(idleFor / 4)
	check("used within the idle time", keepIdle, 0)
	deadline := time.Now().Add(10 * time.Second)
	for budgetUsed(budget, keepIdle+4) > 0 && time.Now().Before(deadline) {
		time.Sleep(idleFor / 4)
	}
	check("after the idle time", 0, 0)
}

// kernelWatches is the number of watches the inotify instance fd holds.
func kernelWatches(t *testing.T, fd int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/self/fdinfo/%d", fd))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\ninotify wd:")
}

// budgetUsed is how many of b's max watches are taken: max less those it
// still lends as spare ones, which are given back at once. A Set that
// takes a watch meanwhile may find the budget short for that moment.
func budgetUsed(b *watch.Budget, max int) int {
	free := 0
	for b.TakeSpare() {
		free++
	}
	b.Give(free)
	return max - free
}
