//go:build linux && !fsmcp_portable

package watch

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// newSet returns an empty Set that holds at most max watches.
func newSet(max int) *Set { return NewIn(NewBudget(max)) }

// watched makes dir/d/f, runs before on it, then watches d and f as a walk
// would, and returns the set and dir.
func watched(t *testing.T, before func(t *testing.T, dir string)) (*Set, string) {
	t.Helper()
	dir := t.TempDir()
	d := filepath.Join(dir, "d")
	if err := os.Mkdir(d, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, "f"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if before != nil {
		before(t, dir)
	}
	fd, err := unix.Open(d, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	s := newSet(10)
	t.Cleanup(s.Close)
	if err := s.Dir(fd); err != nil {
		t.Fatal(err)
	}
	if err := s.File(fd, "f"); err != nil {
		t.Fatal(err)
	}
	if s.Len() != 2 {
		t.Fatalf("Len = %d, want 2", s.Len())
	}
	return s, dir
}

func TestChanged(t *testing.T) {
	for _, tc := range []struct {
		name    string
		before  func(t *testing.T, dir string)
		do      func(t *testing.T, dir string)
		changed bool
	}{
		{"nothing", nil, func(t *testing.T, dir string) {}, false},
		{"file read", nil, func(t *testing.T, dir string) {
			if _, err := os.ReadFile(filepath.Join(dir, "d/f")); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"directory listed", nil, func(t *testing.T, dir string) {
			if _, err := os.ReadDir(filepath.Join(dir, "d")); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"change beside the directory", nil, func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "other"), []byte("x"), 0o644)
		}, false},
		{"file written", nil, func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "d/f"), []byte("hello\n"), 0o644)
		}, true},
		{"file truncated", nil, func(t *testing.T, dir string) { os.Truncate(filepath.Join(dir, "d/f"), 1) }, true},
		{"file's mode changed", nil, func(t *testing.T, dir string) { os.Chmod(filepath.Join(dir, "d/f"), 0o600) }, true},
		{"file's mtime changed", nil, func(t *testing.T, dir string) {
			os.Chtimes(filepath.Join(dir, "d/f"), time.Time{}, time.Unix(1e9, 0))
		}, true},
		{"entry created", nil, func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "d/g"), nil, 0o644)
		}, true},
		{"entry removed", nil, func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, "d/f")) }, true},
		{"entry renamed", nil, func(t *testing.T, dir string) {
			os.Rename(filepath.Join(dir, "d/f"), filepath.Join(dir, "d/g"))
		}, true},
		{"directory renamed", nil, func(t *testing.T, dir string) {
			os.Rename(filepath.Join(dir, "d"), filepath.Join(dir, "e"))
		}, true},
		{"hard link made elsewhere", nil, func(t *testing.T, dir string) {
			os.Link(filepath.Join(dir, "d/f"), filepath.Join(dir, "link"))
		}, true},
		// The link exists before the watches: only the write through it,
		// which its directory never sees, can count.
		{"written through a hard link elsewhere", func(t *testing.T, dir string) {
			if err := os.Link(filepath.Join(dir, "d/f"), filepath.Join(dir, "link")); err != nil {
				t.Fatal(err)
			}
		}, func(t *testing.T, dir string) {
			f, err := os.OpenFile(filepath.Join(dir, "link"), os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteAt([]byte("J"), 0)
			f.Close()
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, dir := watched(t, tc.before)
			tc.do(t, dir)
			got, err := s.Changed()
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.changed {
				t.Fatalf("Changed = %v, want %v", got, tc.changed)
			}
			if tc.changed && s.Len() != 0 {
				t.Fatalf("after a change the set holds %d watches, want none", s.Len())
			}
			if again, _ := s.Changed(); again {
				t.Fatal("Changed reported the same change twice")
			}
		})
	}
}

func TestLimit(t *testing.T) {
	dir := t.TempDir()
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	s := newSet(1)
	defer s.Close()
	if err := s.Dir(fd); err != nil {
		t.Fatal(err)
	}
	if err := s.Dir(fd); err != ErrUnavailable {
		t.Fatalf("second watch of a one-watch set: %v, want ErrUnavailable", err)
	}
	if err := s.File(fd, "missing"); err != ErrUnavailable {
		t.Fatalf("watch of a missing entry: %v, want ErrUnavailable", err)
	}
}

// TestAlong watches dir along d, as an ancestor of a watched tree: only
// changes to d itself count.
func TestAlong(t *testing.T) {
	for _, tc := range []struct {
		name    string
		do      func(dir string)
		changed bool
	}{
		{"sibling created", func(dir string) { os.WriteFile(filepath.Join(dir, "x"), nil, 0o644) }, false},
		{"sibling written", func(dir string) { os.WriteFile(filepath.Join(dir, "s"), []byte("2"), 0o644) }, false},
		{"sibling removed", func(dir string) { os.Remove(filepath.Join(dir, "s")) }, false},
		{"inside d", func(dir string) { os.WriteFile(filepath.Join(dir, "d/new"), nil, 0o644) }, false},
		{"d renamed", func(dir string) { os.Rename(filepath.Join(dir, "d"), filepath.Join(dir, "e")) }, true},
		{"d replaced", func(dir string) {
			os.Mkdir(filepath.Join(dir, "e"), 0o755)
			// rename(2) itself: os.Rename refuses to replace a directory.
			unix.Rename(filepath.Join(dir, "e"), filepath.Join(dir, "d"))
		}, true},
		{"d removed", func(dir string) { os.Remove(filepath.Join(dir, "d")) }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			os.Mkdir(filepath.Join(dir, "d"), 0o755)
			os.WriteFile(filepath.Join(dir, "s"), []byte("1"), 0o644)
			fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Close(fd)
			s := newSet(10)
			defer s.Close()
			if err := s.Along(fd, "d"); err != nil {
				t.Fatal(err)
			}
			tc.do(dir)
			if got, err := s.Changed(); err != nil || got != tc.changed {
				t.Fatalf("Changed = %v, %v; want %v", got, err, tc.changed)
			}
		})
	}
}
