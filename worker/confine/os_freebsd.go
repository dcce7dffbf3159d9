package confine

import "golang.org/x/sys/unix"

// What differs on FreeBSD.
const (
	// searchFlag opens a directory for searching only.
	searchFlag = unix.O_SEARCH
	// errNoFollow is what an open with O_NOFOLLOW reports for a symbolic
	// link: FreeBSD says EMLINK where POSIX says ELOOP.
	errNoFollow = unix.EMLINK
	// errNoAttr is what reading a missing extended attribute reports.
	errNoAttr = unix.ENOATTR
	// direntBufSize is the size of one read of directory entries.
	direntBufSize = 32 << 10
)

// fullSync flushes the file open as fd to stable storage.
func fullSync(fd int) error {
	_, err := retryEINTR(func() (int, error) { return 0, unix.Fsync(fd) })
	return err
}

// systemXattr reports whether the extended attribute name is the system's
// to manage: none on FreeBSD.
func systemXattr(string) bool { return false }
