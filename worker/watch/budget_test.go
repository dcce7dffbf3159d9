//go:build linux && !fsmcp_portable

package watch

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// Two Sets and a spare holder share one Budget: every watch a Set holds is
// one taken from it (the same object watched twice is one), all are given
// back when the Set closes or sees a change, spares are taken only out of
// what is left, and a Set short of watches gets the spares back first.
func TestBudget(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"a", "b", "c"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	open := func(p string) int {
		fd, err := unix.Open(filepath.Join(dir, p), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(fd) })
		return fd
	}
	a, b, c := open("a"), open("b"), open("c")
	budget := NewBudget(3)
	spares := 0
	budget.OnShort(func() { budget.Give(spares); spares = 0 })
	used := func(step string, want int) {
		t.Helper()
		budget.mu.Lock()
		got := budget.used
		budget.mu.Unlock()
		if got != want {
			t.Fatalf("%s: %d of the budget used, want %d", step, got, want)
		}
	}

	s1, s2 := NewIn(budget), NewIn(budget)
	defer s1.Close()
	defer s2.Close()
	if err := s1.Dir(a); err != nil {
		t.Fatal(err)
	}
	if err := s1.Along(a, "x"); err != nil { // a again: the same watch
		t.Fatal(err)
	}
	used("one directory watched twice", 1)
	if !budget.TakeSpare() {
		t.Fatal("no spare out of 2 left")
	}
	spares++
	if !budget.TakeSpare() {
		t.Fatal("no spare out of 1 left")
	}
	spares++
	used("two spares", 3)
	if budget.TakeSpare() {
		t.Fatal("a spare past the budget")
	}
	if err := s2.Dir(b); err != nil {
		t.Fatalf("a Set short of watches while spares are held: %v", err)
	}
	used("spares given back to a Set", 2)
	if spares != 0 {
		t.Fatalf("%d spares still held", spares)
	}
	if err := s2.Dir(c); err != nil {
		t.Fatal(err)
	}
	if err := s1.File(a, "missing"); err != ErrUnavailable {
		t.Fatalf("a fourth watch of a budget of 3: %v, want ErrUnavailable", err)
	}
	used("a refused watch", 3)
	if err := os.WriteFile(filepath.Join(dir, "b", "new"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if changed, err := s2.Changed(); !changed || err != nil {
		t.Fatalf("Changed = %v, %v after a create in a watched directory", changed, err)
	}
	used("a Set that saw a change", 1)
	s1.Close()
	used("every Set closed", 0)
}
