//go:build !fsmcp_portable

package confine

import (
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// checkBatched fails t unless r's OpenReaders went through io_uring where
// it resolves with openat2.
func checkBatched(t *testing.T, r *Root) {
	t.Helper()
	if !r.UsesOpenat2() {
		return
	}
	r.rings.mu.Lock()
	used := len(r.rings.free) > 0 && !r.rings.off
	r.rings.mu.Unlock()
	if !used {
		t.Fatal("OpenReaders did not use io_uring; check `cat /proc/sys/kernel/io_uring_disabled` prints 0 (sysctl -w kernel.io_uring_disabled=0)")
	}
}

// TestBatchesWithoutRing: where io_uring cannot be set up (a seccomp
// policy, kernel.io_uring_disabled), OpenReaders and a Closer make their
// calls one by one and answer as OpenReader does.
func TestBatchesWithoutRing(t *testing.T) {
	root, outside := fixture(t)
	r, err := Open(root)
	must(t, err)
	defer r.Close()
	r.rings.mu.Lock()
	r.rings.off = true // as after uring.New failed
	r.rings.mu.Unlock()
	rels := []string{"f.txt", "d/g.txt", "fifo", "nope", "link-f"}
	out := make([]Opened, len(rels))
	r.OpenReaders(rels, out)
	c := r.NewCloser()
	for i, rel := range rels {
		sameAsOpenReader(t, r, rel, Opened{ID: out[i].ID, Err: out[i].Err, R: out[i].R}, root, outside)
	}
	f, _, err := r.OpenReader("f.txt")
	must(t, err)
	c.Close(f)
	c.End()
	if _, err := unix.FcntlInt(uintptr(f.fd), unix.F_GETFD, 0); err != unix.EBADF {
		t.Fatalf("a Reader given to an ended Closer is still open (%v)", err)
	}
}

func TestCleanRel(t *testing.T) {
	for _, tc := range []struct {
		rel, want  string
		clean, err bool
	}{
		{rel: "a", want: "a", clean: true},
		{rel: "a/b/c.txt", want: "a/b/c.txt", clean: true},
		{rel: "..a/b..", want: "..a/b..", clean: true},
		{rel: ""},
		{rel: "."},
		{rel: "./a", want: "a"},
		{rel: "a//b", want: "a/b"},
		{rel: "a/./b/", want: "a/b"},
		{rel: "a/../b", err: true},
		{rel: "/a", err: true},
		{rel: "a/\x00b", err: true},
	} {
		if got := isCleanRel(tc.rel); got != tc.clean {
			t.Errorf("isCleanRel(%q) = %v, want %v", tc.rel, got, tc.clean)
		}
		got, err := cleanRel(tc.rel)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("cleanRel(%q) = %q, %v; want %q (error %v)", tc.rel, got, err, tc.want, tc.err)
		}
		// The same as splitRel's components joined.
		if parts, err := splitRel(tc.rel); err == nil && strings.Join(parts, "/") != got {
			t.Errorf("cleanRel(%q) = %q, splitRel joined %q", tc.rel, got, strings.Join(parts, "/"))
		}
	}
}
