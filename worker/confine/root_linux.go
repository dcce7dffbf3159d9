//go:build !fsmcp_portable

package confine

import (
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// The Linux backend resolves a multi-component path with one openat2(2)
// beneath the root where it can, opens a file's name O_PATH before opening
// the file (see reopen), makes a write's temporary file with O_TMPFILE,
// guards reads with inotify and batches opens through io_uring.

// openat2 support is decided once per process.
var (
	openat2Once sync.Once
	openat2OK   bool
)

func probeOpenat2(dirfd int) {
	openat2Once.Do(func() {
		fd, err := unix.Openat2(dirfd, ".", &unix.OpenHow{
			Flags:   unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS,
		})
		if err == nil {
			unix.Close(fd)
			openat2OK = true
		}
		// ENOSYS (old kernel), E2BIG / EPERM (seccomp filters) or anything
		// else: use the per-component walk, which is always safe.
	})
}

// Root is an open root directory. All paths given to its methods are
// relative to it. A Root is safe for concurrent use.
type Root struct {
	h         fdRef
	noOpenat2 bool     // tests: force the per-component walk
	mode      caseMode // how the root's filesystem matches names
	guards    guards   // inotify watches over reads (see Guard)
	rings     ringPool // io_uring rings for OpenReaders
	// named: writes go the named way (see writeTemp); set once the
	// O_TMPFILE way failed where the named way then succeeded.
	named atomic.Bool
	// plainRename: writes rename the plain way (see replace); set once
	// the filesystem refused renameat2's flags, or by tests.
	plainRename atomic.Bool
}

// newRoot returns the Root for the open root directory fd.
func newRoot(fd int, mode caseMode) *Root {
	probeOpenat2(fd)
	r := &Root{mode: mode}
	r.h.fd = fd
	return r
}

// Close closes the root descriptor. Operations running concurrently finish
// first; later operations fail.
func (r *Root) Close() error {
	r.guards.close()
	r.rings.close()
	return r.h.close()
}

// UsesOpenat2 reports whether multi-component paths are resolved with
// openat2(2) (true) or with the per-component openat(2) walk (false).
func (r *Root) UsesOpenat2() bool { return openat2OK && !r.noOpenat2 }

const (
	// searchFlags opens a directory on the way to a name: O_PATH needs
	// only the right to search it.
	searchFlags = unix.O_PATH | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
	// leafFlags opens a file's name without opening the file: nothing can
	// block and no device driver runs; only a regular file is then reopened
	// for reading (see reopen).
	leafFlags = unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC
	resolve   = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS
)

// openRel opens rel (at least one component) below the root with flags,
// each component under its exact name. Where the root's filesystem never
// folds case, one openat2 does it, kept to that filesystem
// (RESOLVE_NO_XDEV): a path that crosses a mount point takes the
// per-component walk, which checks each directory it passes.
func (r *Root) openRel(rootfd int, parts []string, flags int) (int, error) {
	if r.mode != caseExact {
		return walk(rootfd, parts, flags)
	}
	if len(parts) == 1 {
		return openComponent(rootfd, parts[0], flags)
	}
	if !r.UsesOpenat2() {
		return walk(rootfd, parts, flags)
	}
	how := &unix.OpenHow{Flags: uint64(flags), Resolve: resolve | unix.RESOLVE_NO_XDEV}
	p := strings.Join(parts, "/")
	for range 16 {
		fd, err := unix.Openat2(rootfd, p, how)
		switch err {
		case nil:
			return fd, nil
		case unix.EINTR, unix.EAGAIN:
			continue
		case unix.ENOENT:
			return -1, ErrNotExist
		case unix.ELOOP:
			return -1, ErrSymlink
		}
		// EXDEV (a mount point on the way), ENOTDIR (a file or a symlink
		// at a component?) and anything unexpected: let the walk classify
		// it precisely. The walk is just
		// as safe; it may even succeed if the tree changed meanwhile.
		return walk(rootfd, parts, flags)
	}
	return walk(rootfd, parts, flags)
}
