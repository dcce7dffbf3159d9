//go:build linux

package confine

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// A Guard reports a write to the file it guards made while it was set, by
// any name, and nothing else: not a write before, not a sibling's.
func TestGuard(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"d/f.txt", "d/sibling.txt", "d/linked.txt"} {
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
		for _, kind := range []string{"file", "scan"} {
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
				if kind == "file" {
					g = r.GuardReader(f)
				} else {
					sg := r.NewScanGuard()
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
				if got := g.Changed(); got != tc.want {
					t.Errorf("Changed() = %v, want %v", got, tc.want)
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
}
