//go:build linux

package confine

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"golang.org/x/sys/unix"
)

// destination is the file a write replaces, as checked: an O_PATH
// descriptor of it, held until the replacement is done so that its inode
// cannot be reused, and what the new file carries over from it.
type destination struct {
	fd       int
	dev, ino uint64
	uid, gid uint32
	mode     uint32 // permission bits and the sticky bit; never set-id bits
	xattrs   []xattr
}

// close lets go of the destination's descriptor; d may be nil.
func (d *destination) close() {
	if d != nil {
		unix.Close(d.fd)
	}
}

// droppedModeBits are never carried over to the new file: the text a
// write brings is not the program its owner marked set-uid or set-gid. On
// an in-place write the kernel drops set-uid, and set-gid where group
// execute is set or the writer is not in the file's group, but only for a
// writer without CAP_FSETID; a write here drops both for every writer,
// root included.
const droppedModeBits = unix.S_ISUID | unix.S_ISGID

// xattrCapability holds a file's capabilities. It is never carried over,
// for the same reason; the kernel removes it on every in-place write.
const xattrCapability = "security.capability"

type xattr struct {
	name  string
	value []byte
}

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
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return ErrNotWritable
	}
	if err := writable(d.fd); err != nil {
		return err
	}
	xs, err := readXattrs(procPath(d.fd))
	if err != nil {
		return fmt.Errorf("reading extended attributes: %w", err)
	}
	d.dev, d.ino = st.Dev, st.Ino
	d.uid, d.gid = st.Uid, st.Gid
	d.mode = st.Mode & 0o7777 &^ droppedModeBits
	d.xattrs = slices.DeleteFunc(xs, func(x xattr) bool { return x.name == xattrCapability })
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

// applyTo gives the temp file fd the destination's owner and group, its
// extended attributes exactly (attributes the temp file got on creation,
// such as an ACL inherited from the directory's default ACL, are removed
// when the destination lacks them) and its mode, then checks that all of it
// took.
func (d *destination) applyTo(fd int) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Uid != d.uid || st.Gid != d.gid {
		if err := unix.Fchown(fd, int(d.uid), int(d.gid)); err != nil {
			return fmt.Errorf("keeping the owner and group: %w", err)
		}
	}
	if err := d.applyXattrs(fd); err != nil {
		return err
	}
	if err := unix.Fchmod(fd, d.mode); err != nil {
		return fmt.Errorf("keeping the mode: %w", err)
	}
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Uid != d.uid || st.Gid != d.gid || st.Mode&0o7777 != d.mode {
		return fmt.Errorf("keeping the owner, group and mode: got %d:%d %o, want %d:%d %o",
			st.Uid, st.Gid, st.Mode&0o7777, d.uid, d.gid, d.mode)
	}
	return nil
}

func (d *destination) applyXattrs(fd int) error {
	have, err := listXattrs(func(b []byte) (int, error) { return unix.Flistxattr(fd, b) })
	if err != nil {
		return fmt.Errorf("listing extended attributes: %w", err)
	}
	want := map[string][]byte{}
	for _, x := range d.xattrs {
		want[x.name] = x.value
	}
	for _, n := range have {
		if _, keep := want[n]; !keep {
			if err := unix.Fremovexattr(fd, n); err != nil {
				return fmt.Errorf("removing extended attribute %s: %w", n, err)
			}
		}
	}
	for _, x := range d.xattrs {
		cur, err := getXattr(func(b []byte) (int, error) { return unix.Fgetxattr(fd, x.name, b) })
		if err == nil && bytes.Equal(cur, x.value) {
			continue // already so, e.g. a security label the directory gives
		}
		if err := unix.Fsetxattr(fd, x.name, x.value, 0); err != nil {
			return fmt.Errorf("keeping extended attribute %s: %w", x.name, err)
		}
	}
	return nil
}

// readXattrs reads every extended attribute of path (following a /proc
// magic link) that this process can see.
func readXattrs(path string) ([]xattr, error) {
	names, err := listXattrs(func(b []byte) (int, error) { return unix.Listxattr(path, b) })
	if err != nil {
		return nil, err
	}
	xs := make([]xattr, 0, len(names))
	for _, n := range names {
		v, err := getXattr(func(b []byte) (int, error) { return unix.Getxattr(path, n, b) })
		if errors.Is(err, unix.ENODATA) {
			continue // removed meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", n, err)
		}
		xs = append(xs, xattr{n, v})
	}
	return xs, nil
}

// listXattrs calls list with a buffer large enough for the name list and
// splits it; the list may grow between the size probe and the read.
func listXattrs(list func([]byte) (int, error)) ([]string, error) {
	b, err := sized(list)
	if err != nil || len(b) == 0 {
		return nil, err
	}
	var names []string
	for _, n := range bytes.Split(bytes.TrimSuffix(b, []byte{0}), []byte{0}) {
		names = append(names, string(n))
	}
	return names, nil
}

func getXattr(get func([]byte) (int, error)) ([]byte, error) {
	b, err := sized(get)
	if b == nil && err == nil {
		b = []byte{}
	}
	return b, err
}

// sized runs a size-probing xattr call: first with no buffer for the size,
// then with one that large, again while the value grows in between.
func sized(call func([]byte) (int, error)) ([]byte, error) {
	for range 8 {
		n, err := call(nil)
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return nil, nil
		}
		b := make([]byte, n)
		n, err = call(b)
		if err == unix.ERANGE {
			continue
		}
		if err != nil {
			return nil, err
		}
		return b[:n], nil
	}
	return nil, unix.ERANGE
}
