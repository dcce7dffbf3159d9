//go:build !fsmcp_portable

package confine

import (
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
