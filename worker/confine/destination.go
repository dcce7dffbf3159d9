//go:build unix

package confine

import (
	"bytes"
	"errors"
	"fmt"
	"slices"

	"golang.org/x/sys/unix"
)

// destination is the file a write replaces, as checked: a descriptor of it
// (O_PATH in the Linux backend), held until the replacement is done so
// that its inode cannot be reused, and what the new file carries over from
// it.
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

// keep records what the new file carries over from the destination whose
// fstat is st and whose extended attributes are xs: its identity, owner,
// group, mode less set-id bits, and attributes less file capabilities.
func (d *destination) keep(st *unix.Stat_t, xs []xattr) {
	d.dev, d.ino = uint64(st.Dev), uint64(st.Ino) //nolint:unconvert // Dev is not uint64 on every platform
	d.uid, d.gid = st.Uid, st.Gid
	d.mode = uint32(st.Mode) & 0o7777 &^ droppedModeBits //nolint:unconvert // Mode is 16 bits on macOS
	d.xattrs = slices.DeleteFunc(xs, func(x xattr) bool { return x.name == xattrCapability })
}

// applyTo gives the temp file fd the destination's owner and group, its
// extended attributes and macOS ACL exactly (those the temp file got on
// creation, such as an ACL inherited from the directory's default ACL, are
// removed when the destination lacks them) and its mode, then checks that
// all of it took.
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
	if err := keepACL(d.fd, fd); err != nil {
		return err
	}
	if err := unix.Fchmod(fd, d.mode); err != nil {
		return fmt.Errorf("keeping the mode: %w", err)
	}
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if mode := uint32(st.Mode) & 0o7777; st.Uid != d.uid || st.Gid != d.gid || mode != d.mode { //nolint:unconvert // Mode is 16 bits on macOS
		return fmt.Errorf("keeping the owner, group and mode: got %d:%d %o, want %d:%d %o",
			st.Uid, st.Gid, mode, d.uid, d.gid, d.mode)
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
		if _, keep := want[n]; !keep && !systemXattr(n) {
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

// namedXattrs reads the extended attributes names lists with get, leaving
// out those the system manages (systemXattr) and any removed meanwhile.
func namedXattrs(names []string, get func(name string, b []byte) (int, error)) ([]xattr, error) {
	xs := make([]xattr, 0, len(names))
	for _, n := range names {
		if systemXattr(n) {
			continue
		}
		v, err := getXattr(func(b []byte) (int, error) { return get(n, b) })
		if errors.Is(err, errNoAttr) {
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
