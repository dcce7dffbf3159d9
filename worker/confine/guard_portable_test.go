//go:build !linux || fsmcp_portable

package confine

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestUnstampedWrites: a file is read twice exactly when a write stamped
// in the tick of its newer timestamp could leave its identity as it is.
func TestUnstampedWrites(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 600_000_000, time.UTC)
	at := func(d time.Duration, round time.Duration) unix.Timespec {
		return unix.NsecToTimespec(now.Add(d).Truncate(round).UnixNano())
	}
	for _, tc := range []struct {
		name         string
		mtime, ctime unix.Timespec
		want         bool
	}{
		{"nanoseconds, changed 10 ms ago", at(-time.Hour, 1), at(-10*time.Millisecond, 1), true},
		{"nanoseconds, changed 100 ms ago", at(-time.Hour, 1), at(-100*time.Millisecond, 1), false},
		{"nanoseconds, modified 10 ms ago", at(-10*time.Millisecond, 1), at(-time.Hour, 1), true},
		{"whole seconds, this second", at(0, time.Second), at(0, time.Second), true},
		{"whole seconds, the second before", at(-time.Second, time.Second), at(-time.Second, time.Second), true},
		{"whole seconds, 3 s ago", at(-3*time.Second, time.Second), at(-3*time.Second, time.Second), false},
		{"in the future", at(time.Hour, 1), at(time.Hour, 1), true},
	} {
		st := unix.Stat_t{Mtim: tc.mtime, Ctim: tc.ctime}
		if got := unstampedWrites(&st, now); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestVerifiedReadSeesChange: a Reader whose reads are verified and whose
// second read differs from the first is torn, and its Guard reports the
// file changed though its identity did not move.
func TestVerifiedReadSeesChange(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f.txt"), []byte("aaaa"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	f, _, err := r.OpenReader("f.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if !f.verify {
		t.Fatal("a file written just now is not read twice")
	}
	gd := r.GuardReader(f)
	p := make([]byte, 4)
	if _, err := f.ReadAt(p, 0); err != nil || string(p) != "aaaa" || gd.Changed() {
		t.Fatalf("read %q, %v, changed %v; want aaaa unchanged", p, err, gd.Changed())
	}
	// A first read as a write overlapping it would have left it.
	f.readAgain([]byte("abaa"), 0)
	if !f.torn || !gd.Check() {
		t.Fatalf("two reads that differ: torn %v, changed %v; want both", f.torn, gd.Check())
	}
}
