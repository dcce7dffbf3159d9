//go:build linux && !fsmcp_portable

package watch

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ErrUnavailable is returned when the process cannot watch (no inotify, no
// /proc/self/fd, or the watch limit reached): the caller does without.
var ErrUnavailable = errors.New("change notification is not available")

const (
	// dirMask is what a directory's watch reports: its entries created,
	// deleted, renamed, written, truncated or with changed attributes, and
	// the directory itself deleted or moved.
	dirMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO |
		unix.IN_MODIFY | unix.IN_ATTRIB | unix.IN_CLOSE_WRITE |
		unix.IN_DELETE_SELF | unix.IN_MOVE_SELF
	// fileMask is what a file's watch reports, whatever path the change
	// came through.
	fileMask = unix.IN_MODIFY | unix.IN_ATTRIB | unix.IN_CLOSE_WRITE |
		unix.IN_DELETE_SELF | unix.IN_MOVE_SELF
	// alongMask is what a watch along one entry listens to.
	alongMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO |
		unix.IN_DELETE_SELF | unix.IN_MOVE_SELF
)

// Set is a set of watches. It is not safe for concurrent use.
type Set struct {
	fd     int     // inotify instance; -1 before the first watch and after a change
	mounts int     // /proc/self/mountinfo, open while fd is, polled for mount changes
	trees  []tree  // the trees the Set answers for (Tree)
	budget *Budget // every watch held is one taken from it
	// wds maps each watch to the one entry that counts, "" for all.
	wds map[int32]string
	buf [16 << 10]byte
}

// NewIn returns an empty Set whose watches are taken from b.
func NewIn(b *Budget) *Set { return &Set{fd: -1, mounts: -1, budget: b} }

// Len is the number of watches the Set holds.
func (s *Set) Len() int { return len(s.wds) }

// Changed reports whether any watched object changed since it was watched,
// or a mount or unmount concerns one of the trees the Set answers for
// (Tree). After a true answer, or an error, the Set is empty again.
func (s *Set) Changed() (bool, error) {
	if s.fd < 0 {
		return false, nil
	}
	changed, err := s.mountsChanged()
	if !changed && err == nil {
		changed, err = s.drain()
	}
	if changed || err != nil {
		s.reset()
	}
	return changed, err
}

// Close forgets every watch and releases the inotify instance.
func (s *Set) Close() { s.reset() }

func (s *Set) reset() {
	if s.fd >= 0 {
		unix.Close(s.fd)
		unix.Close(s.mounts)
	}
	s.budget.Give(len(s.wds))
	s.fd, s.mounts, s.wds, s.trees = -1, -1, nil, nil
}

// drain reads the queued events and reports whether one of them counts.
func (s *Set) drain() (bool, error) {
	changed := false
	for {
		n, err := unix.Read(s.fd, s.buf[:])
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return changed, nil
		case err != nil:
			return false, fmt.Errorf("read change notifications: %w", err)
		case n <= 0:
			return changed, nil
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&s.buf[off]))
			name := s.buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)]
			off += unix.SizeofInotifyEvent + int(ev.Len)
			changed = changed || s.counts(ev, name)
		}
	}
}

// counts reports whether the event ev (with the entry name it carries)
// invalidates what the Set watches.
func (s *Set) counts(ev *unix.InotifyEvent, name []byte) bool {
	along, ok := s.wds[ev.Wd]
	if !ok || along == "" {
		// A full watch, or no watch at all: IN_Q_OVERFLOW (events
		// lost) or a watch gone.
		return true
	}
	if ev.Mask&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF|unix.IN_IGNORED) != 0 {
		return true
	}
	if i := bytes.IndexByte(name, 0); i >= 0 {
		name = name[:i]
	}
	return string(name) == along
}

// Dir watches the directory open as dirfd.
func (s *Set) Dir(dirfd int) error {
	return s.add(procPath(dirfd, ""), dirMask|unix.IN_ONLYDIR, "")
}

// Along watches the directory open as dirfd for changes to its entry name
// and to itself only. A directory on a filesystem that is not local (see
// Tree) is refused with ErrUnavailable: another machine could rename name
// there unreported.
func (s *Set) Along(dirfd int, name string) error {
	if err := s.open(); err != nil {
		return err
	}
	if err := local(dirfd); err != nil {
		return err
	}
	return s.add(procPath(dirfd, ""), alongMask|unix.IN_ONLYDIR, name)
}

// File watches the entry name of the directory open as dirfd, without
// following a symbolic link there.
func (s *Set) File(dirfd int, name string) error {
	return s.add(procPath(dirfd, name), fileMask|unix.IN_DONT_FOLLOW, "")
}

func procPath(fd int, name string) string {
	p := "/proc/self/fd/" + strconv.Itoa(fd)
	if name != "" {
		p += "/" + name
	}
	return p
}

// open makes the Set's inotify instance and opens the mount table it
// polls, if not done yet: before any object is watched, so that every
// change of the mount table from then on is reported.
func (s *Set) open() error {
	if s.fd >= 0 {
		return nil
	}
	mounts, err := openMounts()
	if err != nil {
		return err
	}
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		unix.Close(mounts)
		return ErrUnavailable
	}
	s.fd, s.mounts, s.wds = fd, mounts, map[int32]string{}
	return nil
}

func (s *Set) add(path string, mask uint32, along string) error {
	if err := s.open(); err != nil {
		return err
	}
	if !s.budget.Take() {
		return ErrUnavailable
	}
	// IN_MASK_ADD: an object watched twice (a directory that is both a
	// scope and another scope's ancestor) listens to both masks.
	wd, err := unix.InotifyAddWatch(s.fd, path, mask|unix.IN_MASK_ADD)
	switch err {
	case nil:
	case unix.ENOSPC, unix.ENOMEM, unix.EACCES, unix.EPERM, unix.ENOENT:
		s.budget.Give(1)
		return ErrUnavailable
	default:
		s.budget.Give(1)
		return fmt.Errorf("watch: %w", err)
	}
	w := int32(wd)
	prev, seen := s.wds[w]
	if seen {
		s.budget.Give(1) // the same watch again: nothing new is held
	}
	switch {
	case !seen:
		s.wds[w] = along
	case prev != along:
		s.wds[w] = "" // watched in two ways: every event counts
	}
	return nil
}
