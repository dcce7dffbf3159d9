//go:build linux

package confine

import (
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
