//go:build !linux || fsmcp_portable

package confine

import (
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
// within one timestamp tick) cannot be seen in the identity; a Reader
// whose file was changed within a tick of its open (unstampedWrites)
// makes each read twice instead, a write in progress waited out in
// between, and its Guard reports a change when the two differ.
type Guard struct {
	fd      int
	r       *Reader // the Reader guarded, if any
	set     Identity
	settled bool
}

// unstampedWrites reports whether a write made to the file whose fstat is
// st, at now or later, might leave its identity as it is: its newer
// timestamp is within one tick of now, so a same-length write stamped in
// that tick changes neither its size nor its times. A tick is taken to be
// 2 s where neither timestamp has a fraction of a second (FAT, HFS+, FUSE
// filesystems that round to seconds), else 50 ms, past the coarse clock
// (a few milliseconds) that stamps writes on filesystems with nanosecond
// timestamps. Timestamps in the future count as within the tick.
func unstampedWrites(st *unix.Stat_t, now time.Time) bool {
	m, c := st.Mtim.Nano(), st.Ctim.Nano()
	tick := int64(50 * time.Millisecond)
	if m%int64(time.Second) == 0 && c%int64(time.Second) == 0 {
		tick = int64(2 * time.Second)
	}
	return max(m, c) > now.UnixNano()-tick
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

// GuardReader starts guarding f; see Guard.
func (r *Root) GuardReader(f *Reader) *Guard {
	gd := guardFD(f.fd)
	if gd != nil {
		gd.r = f
	}
	return gd
}

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
	settle(gd.fd)
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
	if gd.r != nil && gd.r.torn {
		return true
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
