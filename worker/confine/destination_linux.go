//go:build !fsmcp_portable

package confine

import (
	"fmt"
	"strconv"

	"golang.org/x/sys/unix"
)

// inspectDestination checks the write destination name in the root: nil
// when it does not exist, the file as checked when it is a regular file
// this process may write, else ErrNotWritable. The caller closes what it
// returns. It looks through an O_PATH descriptor, which never opens the
// file itself, so a FIFO's writer is not woken and a device is not
// touched; the access check uses the effective ids (AT_EACCESS), so a
// read-only mount or an immutable file is refused too.
func inspectDestination(rootfd int, name string) (*destination, error) {
	fd, err := retryEINTR(func() (int, error) {
		return unix.Openat(rootfd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	})
	switch {
	case err == unix.ENOENT:
		return nil, nil
	case err != nil:
		return nil, mapErrno(err)
	}
	d := &destination{fd: fd}
	if err := d.check(rootfd, name); err != nil {
		d.close()
		return nil, err
	}
	return d, nil
}

// check fills d from the file its descriptor holds, or refuses it.
func (d *destination) check(rootfd int, name string) error {
	// Where the root folds case, name may have found an entry spelled
	// otherwise, one the include and exclude rules were not asked about:
	// that entry is not the destination named.
	if ok, err := exactName(rootfd, name); err != nil || !ok {
		return ErrNotWritable
	}
	var st unix.Stat_t
	if err := unix.Fstat(d.fd, &st); err != nil {
		return err
	}
	if statKind(&st) != KindFile {
		return ErrNotWritable
	}
	if err := writable(d.fd); err != nil {
		return err
	}
	xs, err := readXattrs(procPath(d.fd))
	if err != nil {
		return fmt.Errorf("reading extended attributes: %w", err)
	}
	d.keep(&st, xs)
	return nil
}

// writable reports whether this process may write the file open as the
// O_PATH descriptor fd: nil, ErrNotWritable, or the error that kept it from
// finding out.
func writable(fd int) error {
	err := unix.Faccessat2(fd, "", unix.W_OK, unix.AT_EMPTY_PATH|unix.AT_EACCESS)
	if err == unix.ENOSYS { // before Linux 5.8: ask by the magic link
		err = unix.Access(procPath(fd), unix.W_OK)
	}
	switch err {
	case nil:
		return nil
	case unix.EACCES, unix.EPERM, unix.EROFS, unix.ETXTBSY:
		return ErrNotWritable
	}
	return fmt.Errorf("checking write access: %w", err)
}

// procPath names the file open as fd through /proc, the one way to reach
// the extended attributes of a file held by an O_PATH descriptor.
func procPath(fd int) string { return "/proc/self/fd/" + strconv.Itoa(fd) }

// readXattrs reads every extended attribute of path (following a /proc
// magic link) that this process can see.
func readXattrs(path string) ([]xattr, error) {
	names, err := listXattrs(func(b []byte) (int, error) { return unix.Listxattr(path, b) })
	if err != nil {
		return nil, err
	}
	return namedXattrs(names, func(n string, b []byte) (int, error) { return unix.Getxattr(path, n, b) })
}
