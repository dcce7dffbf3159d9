//go:build !linux || fsmcp_portable

package confine

import (
	"math"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fsmcp/fsmcp/worker/watch"
)

// A Guard tells whether an open file was written while it was being read.
// The portable backend has no notification that reports every write in
// order (inotify; kqueue would not tell a write still in progress), so a
// Guard compares the file's identity (inode, size, modification and
// change times) as it was when the Guard was set with what it is once
// Settle has waited for a write in progress to end: lseek(SEEK_DATA)
// takes the inode lock that a write holds for its whole copy on Linux
// (ext4, btrfs, tmpfs, FUSE), and on macOS where the filesystem takes the
// vnode lock for it. A write that starts and ends within the read and
// leaves the size and both times as they were (a same-length rewrite
// within one timestamp tick) goes unseen here; the Linux backend's inotify
// guard sees it.
type Guard struct {
	fd      int
	set     Identity
	settled bool
}

// guardFD starts a Guard on the open file fd; nil if it cannot be stat'ed
// (the reader's own identity checks then stand alone).
func guardFD(fd int) *Guard {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil
	}
	return &Guard{fd: fd, set: identityOf(&st)}
}

// KeepIdleWatches does nothing: the portable backend keeps no watches.
func (r *Root) KeepIdleWatches(*watch.Budget, time.Duration) {}

// GuardFile starts guarding f; see Guard.
func (r *Root) GuardFile(f *os.File) *Guard {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil
	}
	var gd *Guard
	if rc.Control(func(fd uintptr) { gd = guardFD(int(fd)) }) != nil {
		return nil
	}
	return gd
}

// GuardReader starts guarding f; see Guard.
func (r *Root) GuardReader(f *Reader) *Guard { return guardFD(f.fd) }

// Changed reports whether the file was written since the Guard was set
// (or whether that can no longer be told). A nil Guard reports false.
// It is Settle, then Check.
func (gd *Guard) Changed() bool {
	gd.Settle()
	return gd.Check()
}

// Settle waits for a write to the file in progress to end (see Guard);
// call it once the read is done.
func (gd *Guard) Settle() {
	if gd == nil {
		return
	}
	// The answer does not matter (past the end of the file it is ENXIO),
	// nor does the file offset (reads use pread).
	unix.Seek(gd.fd, math.MaxInt64, unix.SEEK_DATA)
	gd.settled = true
}

// Check reports whether the file's identity moved between the Guard's
// setting and its Settle (or later).
func (gd *Guard) Check() bool {
	if gd == nil {
		return false
	}
	if !gd.settled {
		gd.Settle()
	}
	var st unix.Stat_t
	if err := unix.Fstat(gd.fd, &st); err != nil {
		return true
	}
	return identityOf(&st) != gd.set
}

// Shared reports false: every Guard is its file's own.
func (gd *Guard) Shared() bool { return false }

// Close does nothing: a Guard holds nothing but the reader's descriptor.
func (gd *Guard) Close() {}

// A ScanGuard guards the reads of one search page, file after file.
type ScanGuard struct{ r *Root }

// NewScanGuard returns a ScanGuard; Close it when the page ends.
func (r *Root) NewScanGuard() *ScanGuard { return &ScanGuard{r: r} }

// Guard starts guarding f, opened by OpenReader as rel; see Guard.
func (s *ScanGuard) Guard(f *Reader, _ string) *Guard { return s.r.GuardReader(f) }

// Close does nothing.
func (s *ScanGuard) Close() {}
