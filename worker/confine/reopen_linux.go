//go:build !fsmcp_portable

package confine

import (
	"errors"
	"strconv"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A file is opened for reading in two steps: its name is opened O_PATH,
// which opens nothing (a FIFO's blocked writer stays blocked, a device's
// driver is not called), the descriptor is fstat'ed, and only a regular
// file is then reopened for reading through /proc/self/fd, which reaches
// exactly the inode checked: no swap in between can put a FIFO or a device
// under the name.

// errNoProc: /proc/self/fd cannot be opened; the caller reopens by name.
var errNoProc = errors.New("/proc/self/fd is not available")

var procFD struct {
	once sync.Once
	fd   int
	err  error
}

// procSelfFD returns a descriptor of /proc/self/fd, opened once.
func procSelfFD() (int, error) {
	procFD.once.Do(func() {
		procFD.fd, procFD.err = retryEINTR(func() (int, error) {
			return unix.Open("/proc/self/fd", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		})
	})
	return procFD.fd, procFD.err
}

// reopenRegular checks that the O_PATH descriptor pfd is a regular file
// and reopens it for reading (O_NONBLOCK set), closing pfd. On errNoProc
// the returned stat is pfd's, for sameRegular; any other error names rel.
func reopenRegular(pfd int, rel string) (int, *unix.Stat_t, error) {
	defer unix.Close(pfd)
	st := new(unix.Stat_t)
	fd, err := checkAndReopen(pfd, rel, st)
	if err != nil && err != errNoProc {
		return -1, nil, err
	}
	return fd, st, err
}

// checkAndReopen is reopenRegular without closing pfd, pfd's fstat going
// to st (the caller's, so that a batch of files allocates none).
func checkAndReopen(pfd int, rel string, st *unix.Stat_t) (int, error) {
	if err := unix.Fstat(pfd, st); err != nil {
		return -1, pathErr("stat", rel, err)
	}
	switch statKind(st) {
	case KindFile:
	case KindSymlink: // O_PATH|O_NOFOLLOW opens the link itself
		return -1, pathErr("open", rel, ErrSymlink)
	default:
		return -1, pathErr("open", rel, ErrNotRegular)
	}
	dir, err := procSelfFD()
	if err != nil {
		return -1, errNoProc
	}
	fd, err := openProcFD(dir, pfd)
	if err != nil {
		return -1, pathErr("open", rel, mapErrno(err))
	}
	// The same inode, and a regular file's type cannot change. Its
	// metadata may have changed since the fstat above: the caller's
	// identity check after reading then refuses what it read.
	return fd, nil
}

// openProcFD opens pfd's entry in dir, the /proc/self/fd directory, for
// reading. Its name is written on the stack: unix.Openat would allocate
// two strings a file.
func openProcFD(dir, pfd int) (int, error) {
	var buf [24]byte
	name := append(strconv.AppendInt(buf[:0], int64(pfd), 10), 0)
	return retryEINTR(func() (int, error) {
		fd, _, errno := unix.Syscall6(unix.SYS_OPENAT, uintptr(dir), uintptr(unsafe.Pointer(&name[0])),
			unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0, 0, 0)
		if errno != 0 {
			return -1, errno
		}
		return int(fd), nil
	})
}
