//go:build !linux || fsmcp_portable

package confine

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// inspectDestination checks the write destination name in the root: nil
// when it does not exist, the file as checked when it is a regular file
// this process may write, else ErrNotWritable. The caller closes what it
// returns. Its type is read with fstatat first, so a link, FIFO, socket,
// device or directory is refused unopened; a regular file is then asked
// about with faccessat (effective ids) and opened for writing without
// truncating it (the open changes nothing), which asks the access question
// again, read-only mounts and immutable flags included, and gives the
// descriptor its extended attributes are read through. That descriptor
// must be the file checked.
func inspectDestination(rootfd int, name string) (*destination, error) {
	var want unix.Stat_t
	_, err := retryEINTR(func() (int, error) {
		return 0, unix.Fstatat(rootfd, name, &want, unix.AT_SYMLINK_NOFOLLOW)
	})
	switch {
	case err == unix.ENOENT:
		return nil, nil
	case err != nil:
		return nil, mapErrno(err)
	}
	// Where the root folds case, name may have found an entry spelled
	// otherwise, one the include and exclude rules were not asked about:
	// that entry is not the destination named.
	if ok, err := exactName(rootfd, name); err != nil || !ok {
		return nil, ErrNotWritable
	}
	if statKind(&want) != KindFile {
		return nil, ErrNotWritable
	}
	// The open below asks the access question where the kernel checks
	// permissions itself; on a FUSE filesystem without default_permissions
	// it is the server that opens, for any caller. faccessat with the
	// effective ids asks the filesystem, as the Linux backend does. A swap
	// of the name around either call is caught by the identity check.
	_, err = retryEINTR(func() (int, error) {
		return 0, unix.Faccessat(rootfd, name, unix.W_OK, unix.AT_EACCESS)
	})
	switch {
	case err == unix.ENOENT:
		return nil, nil // removed meanwhile: the write makes a new file
	case err == unix.EACCES, err == unix.EPERM, err == unix.EROFS, err == unix.ETXTBSY:
		return nil, ErrNotWritable
	case err != nil:
		return nil, fmt.Errorf("checking write access: %w", err)
	}
	fd, err := retryEINTR(func() (int, error) {
		return unix.Openat(rootfd, name, unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	})
	switch {
	case err == nil:
	case err == unix.ENOENT:
		return nil, nil // removed meanwhile: the write makes a new file
	case err == unix.EACCES, err == unix.EPERM, err == unix.EROFS, err == unix.ETXTBSY:
		return nil, ErrNotWritable
	case err == unix.EISDIR, err == unix.ENXIO, err == unix.ELOOP, err == errNoFollow:
		return nil, ErrNotWritable // swapped for a directory, FIFO or link meanwhile
	default:
		return nil, fmt.Errorf("checking write access: %w", err)
	}
	d := &destination{fd: fd}
	if err := d.check(&want); err != nil {
		d.close()
		return nil, err
	}
	return d, nil
}

// check fills d from the file its descriptor holds, which must be the
// regular file whose fstatat is want, or refuses it.
func (d *destination) check(want *unix.Stat_t) error {
	var st unix.Stat_t
	if err := unix.Fstat(d.fd, &st); err != nil {
		return err
	}
	if statKind(&st) != KindFile || st.Dev != want.Dev || st.Ino != want.Ino {
		return ErrNotWritable
	}
	names, err := listXattrs(func(b []byte) (int, error) { return unix.Flistxattr(d.fd, b) })
	if err != nil {
		return fmt.Errorf("reading extended attributes: %w", err)
	}
	xs, err := namedXattrs(names, func(n string, b []byte) (int, error) { return unix.Fgetxattr(d.fd, n, b) })
	if err != nil {
		return fmt.Errorf("reading extended attributes: %w", err)
	}
	d.keep(&st, xs)
	return nil
}
