package procs

import (
	"runtime"
	"testing"
	"time"
)

// TestRaise: with Allow(2) in a process at GOMAXPROCS=1 (a plugin-mode
// worker), a holder runs with 2 Ps (as many as there are CPUs, if fewer),
// overlapping holders share the raise, and the count goes back to 1 Linger
// after the last one lets go.
func TestRaise(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	defer Allow(0)
	Allow(2)
	want := min(2, runtime.NumCPU())
	first := Raise()
	second := Raise()
	if n := runtime.GOMAXPROCS(0); n != want {
		t.Fatalf("GOMAXPROCS %d while held, want %d", n, want)
	}
	first()
	second()
	if n := runtime.GOMAXPROCS(0); n != want {
		t.Fatalf("GOMAXPROCS %d right after the last release, want %d until Linger passes", n, want)
	}
	third := Raise() // within the linger: no change
	third()
	deadline := time.Now().Add(10 * Linger)
	for runtime.GOMAXPROCS(0) != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("GOMAXPROCS still %d %v after the last release", runtime.GOMAXPROCS(0), 10*Linger)
		}
		time.Sleep(Linger / 5)
	}
}
