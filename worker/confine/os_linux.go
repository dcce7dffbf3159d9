package confine

import "golang.org/x/sys/unix"

// What differs on Linux, in both backends.
const (
	// searchFlag opens a directory for searching only.
	searchFlag = unix.O_PATH
	// errNoFollow is what an open with O_NOFOLLOW reports for a symbolic
	// link.
	errNoFollow = unix.ELOOP
	// errNoAttr is what reading a missing extended attribute reports.
	errNoAttr = unix.ENODATA
	// direntBufSize is the size of one read of directory entries.
	direntBufSize = 32 << 10
)

// fullSync flushes the file open as fd to stable storage.
func fullSync(fd int) error {
	_, err := retryEINTR(func() (int, error) { return 0, unix.Fsync(fd) })
	return err
}

// systemXattr reports whether the extended attribute name is the system's
// to manage, neither copied to a write's new file nor removed from it:
// none on Linux.
func systemXattr(string) bool { return false }
