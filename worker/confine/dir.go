//go:build unix

package confine

import (
	"fmt"
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
