//go:build !linux || fsmcp_portable

package confine

import (
	"strings"

	"golang.org/x/sys/unix"
)

// openRegularAt is openRegular for rel's components parts in the root
// rootfd: its directory is walked to one component at a time, and the
// file opened there by openRegularIn.
func (r *Root) openRegularAt(rootfd int, parts []string, rel string) (int, *unix.Stat_t, string, error) {
	dirfd, err := walkParent(rootfd, parts)
	if err != nil {
		return -1, nil, "", pathErr("open", rel, err)
	}
	if dirfd != rootfd {
		defer unix.Close(dirfd)
	}
	clean := strings.Join(parts, "/")
	name := parts[len(parts)-1]
	if len(parts) > 1 || r.mode != caseExact {
		if err := exactOrMissing(dirfd, name); err != nil {
			return -1, nil, "", pathErr("open", rel, err)
		}
	}
	fd, st, err := openRegularIn(dirfd, name, clean)
	if err != nil {
		return -1, nil, "", err
	}
	return fd, st, clean, nil
}

// exactOrMissing is nil when name is an entry's exact name in dirfd (see
// exactName), else ErrNotExist or the error that kept it from knowing.
func exactOrMissing(dirfd int, name string) error {
	ok, err := exactName(dirfd, name)
	if err != nil {
		return mapErrno(err)
	}
	if !ok {
		return ErrNotExist
	}
	return nil
}

// openRegularIn opens the regular file name (one component) of the
// directory dirfd for reading (O_NONBLOCK still set) and returns its
// descriptor and fstat; errors name rel. Without O_PATH a name cannot be
// looked at through a descriptor without opening it, so its type is first
// read with fstatat: a symbolic link, FIFO, socket, device or directory is
// refused unopened. The file is then opened without following a link and
// without blocking, and kept only if fstat finds a regular file: anything
// else swapped in between is closed unread, and a regular file saved over
// the name meanwhile is read as the one now there, as the Linux backend
// reads it when the save comes just before its open. (A FIFO swapped in
// at that instant has been opened for reading, which a writer blocked in
// its own open sees; a device's driver has run its open. The Linux
// backend, which opens the name O_PATH, leaves both untouched.)
func openRegularIn(dirfd int, name, rel string) (int, *unix.Stat_t, error) {
	want := new(unix.Stat_t)
	if _, err := retryEINTR(func() (int, error) {
		return 0, unix.Fstatat(dirfd, name, want, unix.AT_SYMLINK_NOFOLLOW)
	}); err != nil {
		return -1, nil, pathErr("open", rel, mapErrno(err))
	}
	switch statKind(want) {
	case KindFile:
	case KindSymlink:
		return -1, nil, pathErr("open", rel, ErrSymlink)
	default:
		return -1, nil, pathErr("open", rel, ErrNotRegular)
	}
	fd, err := openComponent(dirfd, name, fileFlags)
	if err != nil {
		return -1, nil, pathErr("open", rel, err)
	}
	st, err := statRegular(fd, rel)
	if err != nil {
		return -1, nil, err
	}
	return fd, st, nil
}
