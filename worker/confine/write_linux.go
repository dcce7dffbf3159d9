//go:build !fsmcp_portable

package confine

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// writeTemp writes data to a new file in the root, gives it dest's
// metadata, fsyncs it, and returns it under the temporary name it then has
// there.
//
// Where the filesystem can, the file is made with O_TMPFILE and named only
// once it is complete, so a worker killed while writing (or a crash) leaves
// nothing in the root but between the system call that names it and the
// one that puts it in place (or, after an exchange, removes the file it
// replaced, then under the temporary name). Elsewhere (no O_TMPFILE, as on NFS, or no way to
// link one, as on some FUSE filesystems) it is created under its
// temporary name; a worker killed meanwhile leaves that file, which no
// tool serves. A root whose filesystem took the named way after the
// O_TMPFILE way failed goes the named way from then on: some FUSE
// filesystems make an O_TMPFILE file and only then fail, so each write
// would be written twice.
func (r *Root) writeTemp(rootfd int, data []byte, dest *destination) (tempFile, error) {
	tried := false
	if !r.named.Load() {
		fd, err := retryEINTR(func() (int, error) {
			return unix.Openat(rootfd, ".", unix.O_TMPFILE|unix.O_WRONLY|unix.O_CLOEXEC, newFileMode)
		})
		if err == nil {
			tried = true
			if tmp, err := linkedTemp(rootfd, fd, data, dest); err == nil {
				return tmp, nil
			}
		}
	}
	// Any failure on the O_TMPFILE way takes the named way, which fails in
	// its own words where the failure was real (EACCES, ENOSPC, EIO). The
	// open fails with EOPNOTSUPP where the filesystem has no O_TMPFILE
	// (EISDIR on kernels without it); some FUSE filesystems make the file
	// but then fail to set its attributes (ENOENT) or to link it (EXDEV).
	tmp, err := namedTemp(rootfd, data, dest)
	if err != nil {
		return tempFile{}, err
	}
	if tried {
		r.named.Store(true)
	}
	return tmp, nil
}

// linkedTemp fills the O_TMPFILE file open as fd (closing it) and links it
// into the root under a fresh temporary name.
func linkedTemp(rootfd, fd int, data []byte, dest *destination) (tempFile, error) {
	f := os.NewFile(uintptr(fd), "tmpfile")
	var tmp tempFile
	var err error
	tmp.dev, tmp.ino, err = fillTemp(f, data, dest)
	if err == nil {
		tmp.name, err = linkTemp(rootfd, fd)
	}
	if closeErr := f.Close(); err == nil && closeErr != nil {
		unix.Unlinkat(rootfd, tmp.name, 0)
		err = closeErr
	}
	return tmp, err
}

// linkTemp names the O_TMPFILE file open as fd in the root under a fresh
// temporary name. It links /proc/self/fd/N, which needs no privilege
// (linkat's AT_EMPTY_PATH would need CAP_DAC_READ_SEARCH).
func linkTemp(rootfd, fd int) (string, error) {
	return freshTemp(func(tmp string) error {
		_, err := retryEINTR(func() (int, error) {
			return 0, unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(fd), rootfd, tmp, unix.AT_SYMLINK_FOLLOW)
		})
		return err
	})
}
