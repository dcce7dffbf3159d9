package confine

import (
	"strings"

	"golang.org/x/sys/unix"
)

// What differs on macOS.
const (
	// searchFlag opens a directory for searching only.
	searchFlag = unix.O_SEARCH
	// errNoFollow is what an open with O_NOFOLLOW reports for a symbolic
	// link.
	errNoFollow = unix.ELOOP
	// errNoAttr is what reading a missing extended attribute reports.
	errNoAttr = unix.ENOATTR
	// direntBufSize is the size of one read of directory entries. The
	// system library has no getdirentries for programs, and x/sys/unix
	// serves each read by reading the directory again from its start,
	// skipping the entries already returned: a large buffer keeps that
	// to a few passes for a large directory.
	direntBufSize = 512 << 10
)

// fullSync flushes the file or directory open as fd to stable storage.
// On macOS fsync only hands the data to the drive, which may keep it in
// its cache; F_FULLFSYNC also asks the drive to write its cache out. A
// volume that refuses F_FULLFSYNC (some network and FAT volumes, which
// say ENOTSUP, ENOTTY or EINVAL, and any other refusal but an I/O error)
// gets fsync, whose answer stands: a write must not fail where the
// system's own fsync succeeds, and an I/O error is the data not written.
func fullSync(fd int) error {
	_, err := retryEINTR(func() (int, error) { return unix.FcntlInt(uintptr(fd), unix.F_FULLFSYNC, 0) })
	if err != nil && err != unix.EIO {
		_, err = retryEINTR(func() (int, error) { return 0, unix.Fsync(fd) })
	}
	return err
}

// systemXattr reports whether the extended attribute name is the system's
// to manage, neither copied to a write's new file nor removed from it: the
// kernel attaches com.apple.provenance to files that some processes
// create, and no unprivileged process may set or remove it.
func systemXattr(name string) bool { return strings.HasPrefix(name, "com.apple.provenance") }
