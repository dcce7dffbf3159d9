//go:build unix

package confine

import (
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
)

// Open opens the host directory dir as a Root. dir itself must not be a
// symbolic link (ErrSymlink; links among its ancestors are the operator's
// choice and are followed); a missing dir is ErrNotExist, another kind of
// file ErrNotDir. The error never contains dir.
func Open(dir string) (*Root, error) {
	for len(dir) > 1 && strings.HasSuffix(dir, "/") {
		dir = dir[:len(dir)-1] // "root/" would follow a link named root
	}
	fd, err := retryEINTR(func() (int, error) {
		return unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	})
	if err != nil {
		return nil, fmt.Errorf("open root: %w", rootErr(dir, err))
	}
	mode, err := fsCaseMode(fd)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("statfs root: %w", err)
	}
	return newRoot(fd, mode), nil
}

// rootErr classifies a failed open of the root dir: with O_NOFOLLOW and
// O_DIRECTORY a link and a file can both report ENOTDIR, so look again
// without following.
func rootErr(dir string, err error) error {
	var st unix.Stat_t
	switch lerr := unix.Lstat(dir, &st); {
	case lerr == unix.ENOENT || lerr == unix.ENOTDIR:
		return ErrNotExist
	case lerr != nil:
		return mapErrno(err)
	case st.Mode&unix.S_IFMT == unix.S_IFLNK:
		return ErrSymlink
	case st.Mode&unix.S_IFMT != unix.S_IFDIR:
		return ErrNotDir
	}
	return mapErrno(err)
}

// OpenDir opens the directory at rel ("" means the root itself). A symlink
// at any component is refused with ErrSymlink.
func (r *Root) OpenDir(rel string) (*Dir, error) {
	parts, err := splitRel(rel)
	if err != nil {
		return nil, fmt.Errorf("open: %w", err)
	}
	rootfd, err := r.h.acquire()
	if err != nil {
		return nil, pathErr("open", rel, err)
	}
	defer r.h.release()
	var fd int
	if len(parts) == 0 {
		fd, err = openComponent(rootfd, ".", dirFlags)
	} else {
		fd, err = r.openRel(rootfd, parts, dirFlags)
	}
	if err != nil {
		return nil, pathErr("open", rel, err)
	}
	return newDir(fd, strings.Join(parts, "/")), nil
}
