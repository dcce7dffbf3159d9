//go:build linux

package confine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/fsmcp/fsmcp/worker/watch"
)

// Dir is an open directory inside the root. A Dir is safe for concurrent
// use.
type Dir struct {
	h    fdRef
	rel  string // relative path from the root, for error messages
	rdMu sync.Mutex
}

// Close closes the directory.
func (d *Dir) Close() error { return d.h.close() }

func newDir(fd int, rel string) *Dir {
	d := &Dir{rel: rel}
	d.h.fd = fd
	return d
}

// OpenDir opens the subdirectory name (one component) of d, refusing a
// symlink with ErrSymlink.
func (d *Dir) OpenDir(name string) (*Dir, error) {
	rel := joinRel(d.rel, name)
	if !validName(name) {
		return nil, fmt.Errorf("open: %w", errInvalidPath)
	}
	dirfd, err := d.h.acquire()
	if err != nil {
		return nil, pathErr("open", rel, err)
	}
	defer d.h.release()
	fd, err := openComponent(dirfd, name, dirFlags)
	if err != nil {
		return nil, pathErr("open", rel, err)
	}
	return newDir(fd, rel), nil
}

// Stat returns the Identity of name (one component) in d without following
// a symlink: a symlink yields an Identity of KindSymlink, not an error.
func (d *Dir) Stat(name string) (Identity, error) {
	if !validName(name) {
		return Identity{}, fmt.Errorf("stat: %w", errInvalidPath)
	}
	dirfd, err := d.h.acquire()
	if err != nil {
		return Identity{}, pathErr("stat", joinRel(d.rel, name), err)
	}
	defer d.h.release()
	var st unix.Stat_t
	for {
		err = unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return Identity{}, pathErr("stat", joinRel(d.rel, name), mapErrno(err))
	}
	return identityOf(&st), nil
}

// Entries returns all entries of d except "." and "..", in directory order.
// Kinds come from d_type; DT_UNKNOWN is resolved with
// fstatat(AT_SYMLINK_NOFOLLOW). Entries that vanish meanwhile are skipped.
func (d *Dir) Entries() ([]Entry, error) {
	dirfd, err := d.h.acquire()
	if err != nil {
		return nil, pathErr("readdir", d.rel, err)
	}
	defer d.h.release()
	d.rdMu.Lock()
	defer d.rdMu.Unlock()
	var out []Entry
	err = readDirents(dirfd, func(buf []byte) (more bool, err error) {
		out, err = parseDirents(dirfd, buf, out)
		return true, err
	})
	if err != nil {
		return nil, pathErr("readdir", d.rel, err)
	}
	return out, nil
}

// direntBufs holds getdents buffers between directory reads. A walk reads
// every directory of its scope, and a fresh (zeroed) buffer for each was
// more than half of what a walk of the 100k tree allocated.
var direntBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// readDirents reads the directory fd from its start, one getdents buffer
// of linux_dirent64 records at a time, until each says no more or the
// directory ends. each must not keep buf, which is reused. Errors of
// getdents are mapped as mapErrno maps them.
func readDirents(fd int, each func(buf []byte) (more bool, err error)) error {
	if _, err := unix.Seek(fd, 0, io.SeekStart); err != nil {
		return err
	}
	bp := direntBufs.Get().(*[]byte)
	defer direntBufs.Put(bp)
	buf := *bp
	for {
		n, err := unix.Getdents(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return mapErrno(err)
		}
		if n <= 0 {
			return nil
		}
		if more, err := each(buf[:n]); err != nil || !more {
			return err
		}
	}
}

// linux_dirent64: d_ino u64, d_off s64, d_reclen u16, d_type u8, d_name.
const (
	direntReclenOff = 16
	direntTypeOff   = 18
	direntNameOff   = 19
)

// direntRecords calls each with every live record in buf (d_ino not 0)
// and its name, cut at its NUL, until each says no more. A record that does
// not fit its buffer is an error.
func direntRecords(buf []byte, each func(rec, name []byte) (more bool, err error)) error {
	for len(buf) > 0 {
		if len(buf) < direntNameOff {
			return errors.New("short dirent")
		}
		reclen := int(binary.NativeEndian.Uint16(buf[direntReclenOff:]))
		if reclen < direntNameOff || reclen > len(buf) {
			return errors.New("bad dirent")
		}
		rec := buf[:reclen]
		buf = buf[reclen:]
		if binary.NativeEndian.Uint64(rec) == 0 { // d_ino
			continue
		}
		name := rec[direntNameOff:]
		if i := indexZero(name); i >= 0 {
			name = name[:i]
		}
		if more, err := each(rec, name); err != nil || !more {
			return err
		}
	}
	return nil
}

// parseDirents appends the entries of the records in buf to out, skipping
// "." and "..", and asking fstatat for a kind the record does not give.
func parseDirents(dirfd int, buf []byte, out []Entry) ([]Entry, error) {
	err := direntRecords(buf, func(rec, name []byte) (bool, error) {
		if len(name) == 0 || string(name) == "." || string(name) == ".." {
			return true, nil
		}
		e := Entry{Name: string(name)}
		switch rec[direntTypeOff] {
		case unix.DT_REG:
			e.Kind = KindFile
		case unix.DT_DIR:
			e.Kind = KindDir
		case unix.DT_LNK:
			e.Kind = KindSymlink
		case unix.DT_UNKNOWN:
			var st unix.Stat_t
			var err error
			for {
				err = unix.Fstatat(dirfd, e.Name, &st, unix.AT_SYMLINK_NOFOLLOW)
				if err != unix.EINTR {
					break
				}
			}
			if err == unix.ENOENT {
				return true, nil // removed meanwhile
			}
			if err != nil {
				return false, mapErrno(err)
			}
			e.Kind = modeKind(st.Mode)
		default:
			e.Kind = KindOther
		}
		out = append(out, e)
		return true, nil
	})
	return out, err
}

func indexZero(b []byte) int {
	for i, c := range b {
		if c == 0 {
			return i
		}
	}
	return -1
}

// Watch adds d to the change-notification set s.
func (d *Dir) Watch(s *watch.Set) error {
	fd, err := d.h.acquire()
	if err != nil {
		return pathErr("watch", d.rel, err)
	}
	defer d.h.release()
	return s.Dir(fd)
}

// WatchEntry adds d's entry name (one component, not followed if it
// is a symlink) to the change-notification set s.
func (d *Dir) WatchEntry(s *watch.Set, name string) error {
	if !validName(name) {
		return fmt.Errorf("watch: %w", errInvalidPath)
	}
	fd, err := d.h.acquire()
	if err != nil {
		return pathErr("watch", joinRel(d.rel, name), err)
	}
	defer d.h.release()
	return s.File(fd, name)
}

// WatchTree checks, for the change-notification set s, that the tree
// below d can be watched (see watch.Set.Tree).
func (d *Dir) WatchTree(s *watch.Set) error {
	fd, err := d.h.acquire()
	if err != nil {
		return pathErr("watch", d.rel, err)
	}
	defer d.h.release()
	return s.Tree(fd)
}

// WatchAlong adds d to the change-notification set s for changes to its
// entry name (and to d itself) only.
func (d *Dir) WatchAlong(s *watch.Set, name string) error {
	fd, err := d.h.acquire()
	if err != nil {
		return pathErr("watch", d.rel, err)
	}
	defer d.h.release()
	return s.Along(fd, name)
}

// Identity returns the Identity of d itself.
func (d *Dir) Identity() (Identity, error) {
	fd, err := d.h.acquire()
	if err != nil {
		return Identity{}, pathErr("stat", d.rel, err)
	}
	defer d.h.release()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return Identity{}, pathErr("stat", d.rel, err)
	}
	return identityOf(&st), nil
}
