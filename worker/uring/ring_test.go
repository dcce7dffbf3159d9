//go:build linux && !fsmcp_portable

package uring

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

func newRing(t *testing.T, entries uint32) *Ring {
	t.Helper()
	r, err := New(entries)
	if err != nil {
		t.Fatalf("New: %v (io_uring must be usable here: check /proc/sys/kernel/io_uring_disabled is 0 and no seccomp policy refuses io_uring_setup)", err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// TestRunOpensStatsCloses runs, batch after batch, the operations the
// worker submits (open O_PATH beneath a directory, statx by descriptor,
// close) and checks every result against the same calls made one by one.
func TestRunOpensStatsCloses(t *testing.T) {
	dir := t.TempDir()
	names := []string{"a.txt", "b.txt", "missing.txt", "sub", "link"}
	contents := map[string][]byte{"a.txt": []byte("alpha\n"), "b.txt": bytes.Repeat([]byte("b"), 70000)}
	for n, c := range contents {
		if err := os.WriteFile(filepath.Join(dir, n), c, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a.txt", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	dirfd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(dirfd)
	r := newRing(t, 16)

	for round := range 50 { // enough rounds for a preemption signal to land in a wait
		paths := make([]*byte, len(names))
		how := &unix.OpenHow{Flags: unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC, Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS}
		ops := make([]Op, len(names))
		for i, n := range names {
			paths[i], _ = unix.BytePtrFromString(n)
			ops[i] = Openat2(dirfd, paths[i], unsafe.Pointer(how), unsafe.Sizeof(*how))
		}
		if err := r.Run(ops); err != nil {
			t.Fatal(err)
		}
		// O_PATH|O_NOFOLLOW opens a trailing symbolic link itself.
		want := []int32{0, 0, -int32(unix.ENOENT), 0, 0}
		for i, op := range ops {
			if (op.Res >= 0) != (want[i] >= 0) || (want[i] < 0 && op.Res != want[i]) {
				t.Fatalf("round %d: openat2 %s: res %d, want %d", round, names[i], op.Res, want[i])
			}
		}
		unix.Close(int(ops[4].Res))
		// statx the two files and the directory by descriptor.
		empty, _ := unix.BytePtrFromString("")
		stx := make([]unix.Statx_t, 3)
		fds := []int{int(ops[0].Res), int(ops[1].Res), int(ops[3].Res)}
		ops = ops[:0]
		for i, fd := range fds {
			ops = append(ops, statx(fd, empty, unix.AT_EMPTY_PATH, unix.STATX_BASIC_STATS, unsafe.Pointer(&stx[i])))
		}
		if err := r.Run(ops); err != nil {
			t.Fatal(err)
		}
		for i, fd := range fds {
			var st unix.Stat_t
			if err := unix.Fstat(fd, &st); err != nil {
				t.Fatal(err)
			}
			x := &stx[i]
			if ops[i].Res != 0 || x.Ino != st.Ino || int64(x.Size) != st.Size || uint32(x.Mode) != st.Mode ||
				unix.Mkdev(x.Dev_major, x.Dev_minor) != st.Dev || x.Mtime.Nsec != uint32(st.Mtim.Nsec) {
				t.Fatalf("round %d: statx %d: res %d %+v, fstat %+v", round, i, ops[i].Res, x, st)
			}
		}
		// Close the three descriptors, one twice; each Op keeps its tag.
		ops = ops[:0]
		for i, fd := range append(fds, fds[2]) {
			ops = append(ops, Close(fd).Tag(i+1))
		}
		if err := r.Run(ops); err != nil {
			t.Fatal(err)
		}
		for i, op := range ops {
			want := int32(0)
			if i == 3 {
				want = -int32(unix.EBADF)
			}
			if op.Res != want || op.Tagged() != i+1 {
				t.Fatalf("round %d: close %d: res %d tag %d, want %d tag %d", round, i, op.Res, op.Tagged(), want, i+1)
			}
		}
	}
}

func TestRunRefusesMoreThanTheRingHolds(t *testing.T) {
	r := newRing(t, 4)
	ops := make([]Op, r.size()+1)
	for i := range ops {
		ops[i] = Close(-1)
	}
	if err := r.Run(ops); err == nil {
		t.Fatalf("Run of %d operations on a ring of %d succeeded", len(ops), r.size())
	}
	if err := r.Run(ops[:r.size()]); err != nil {
		t.Fatal(err)
	}
	for i, op := range ops[:r.size()] {
		if op.Res != -int32(unix.EBADF) {
			t.Fatalf("close(-1) #%d: res %d, want -EBADF", i, op.Res)
		}
	}
}

// size is the most operations one Run takes.
func (r *Ring) size() int { return int(r.entries) }

// statx stats path (NUL-terminated; "" with AT_EMPTY_PATH for dirfd
// itself) into buf, a struct statx, as statx(2).
func statx(dirfd int, path *byte, flags, mask int, buf unsafe.Pointer) Op {
	return Op{sqe: sqe{opcode: opStatx, fd: int32(dirfd), addr: addr(unsafe.Pointer(path)), len: uint32(mask), off: addr(buf), opFlags: uint32(flags)}}
}
