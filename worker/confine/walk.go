//go:build unix

package confine

import "golang.org/x/sys/unix"

const (
	dirOnlyFlags = unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
	dirFlags     = unix.O_RDONLY | dirOnlyFlags
	fileFlags    = unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_NOCTTY | unix.O_CLOEXEC
)

// openComponent opens one component name in dirfd with flags (which include
// O_NOFOLLOW) and classifies failures. ENOTDIR is ambiguous when O_DIRECTORY
// is set (a symlink opened with O_DIRECTORY|O_NOFOLLOW reports ENOTDIR), so
// it is disambiguated with fstatat(AT_SYMLINK_NOFOLLOW). If that finds a
// directory or nothing, the entry was swapped in between: retry, and if it keeps
// happening report ErrSymlink (a directory swapped with a symlink is the
// usual cause).
func openComponent(dirfd int, name string, flags int) (int, error) {
	for range 4 {
		fd, err := retryEINTR(func() (int, error) { return unix.Openat(dirfd, name, flags, 0) })
		if err == nil {
			return fd, nil
		}
		if err != unix.ENOTDIR {
			return -1, mapErrno(err)
		}
		var st unix.Stat_t
		if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			continue // gone meanwhile: the retried open will tell
		}
		switch statKind(&st) {
		case KindSymlink:
			return -1, ErrSymlink
		case KindDir:
			continue
		}
		return -1, ErrNotDir
	}
	return -1, ErrSymlink
}

// walk opens the ancestors parts[:len(parts)-1] one component at a time
// (see walkParent) and then the leaf with flags. Every component must be
// the exact name of an entry (see exactName): a name that only folds to
// one is not there.
func walk(rootfd int, parts []string, flags int) (int, error) {
	dirfd, err := walkParent(rootfd, parts)
	if err != nil {
		return -1, err
	}
	if dirfd != rootfd {
		defer unix.Close(dirfd)
	}
	return openExact(dirfd, parts[len(parts)-1], flags)
}

// walkParent opens the directory holding the last of parts: the
// ancestors parts[:len(parts)-1] one component at a time with searchFlags
// (O_DIRECTORY|O_NOFOLLOW, and only the right to search), each under its
// exact name. With one component that directory is rootfd itself, which
// the caller must not close; any other it must.
func walkParent(rootfd int, parts []string) (int, error) {
	dirfd := rootfd
	for _, c := range parts[:len(parts)-1] {
		fd, err := openExact(dirfd, c, searchFlags)
		if dirfd != rootfd {
			unix.Close(dirfd)
		}
		if err != nil {
			return -1, err
		}
		dirfd = fd
	}
	return dirfd, nil
}

// openExact is openComponent for a name a client gave: where lookups in
// dirfd may fold case, name must be an entry's exact name.
func openExact(dirfd int, name string, flags int) (int, error) {
	ok, err := exactName(dirfd, name)
	if err != nil {
		return -1, mapErrno(err)
	}
	if !ok {
		return -1, ErrNotExist
	}
	return openComponent(dirfd, name, flags)
}
