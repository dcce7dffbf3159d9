//go:build linux

package confine

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// fdRef is a reference-counted file descriptor, so that Close racing with
// an operation in another goroutine can never make that operation use a
// recycled descriptor number.
type fdRef struct {
	mu     sync.Mutex
	fd     int
	refs   int
	closed bool
}

func (h *fdRef) acquire() (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return -1, errClosed
	}
	h.refs++
	return h.fd, nil
}

func (h *fdRef) release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.refs--
	if h.refs == 0 && h.closed && h.fd >= 0 {
		unix.Close(h.fd)
		h.fd = -1
	}
}

func (h *fdRef) close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return errClosed
	}
	h.closed = true
	if h.refs == 0 {
		fd := h.fd
		h.fd = -1
		if err := unix.Close(fd); err != nil {
			return fmt.Errorf("close: %w", err)
		}
	}
	return nil
}

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
	probeOpenat2(fd)
	mode, err := fsCaseMode(fd)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("statfs root: %w", err)
	}
	r := &Root{mode: mode}
	r.h.fd = fd
	return r, nil
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

// setForceWalk forces (or stops forcing) the per-component walk. For tests;
// must be called before the Root is shared.
func (r *Root) setForceWalk(force bool) { r.noOpenat2 = force }

const (
	dirFlags  = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
	pathFlags = unix.O_PATH | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
	fileFlags = unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_NOCTTY | unix.O_CLOEXEC
	// leafFlags opens a file's name without opening the file: nothing can
	// block and no device driver runs; only a regular file is then reopened
	// for reading (see reopen).
	leafFlags = unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC
	resolve   = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS
)

// openComponent opens one component name in dirfd with flags (which include
// O_NOFOLLOW) and classifies failures. ENOTDIR is ambiguous when O_DIRECTORY
// is set (a symlink opened with O_DIRECTORY|O_NOFOLLOW reports ENOTDIR), so
// it is disambiguated with fstatat(AT_SYMLINK_NOFOLLOW). If that finds a
// directory or nothing, the entry was swapped in between: retry, and if it keeps
// happening report ErrSymlink (a directory swapped with a symlink is the
// usual cause).
func openComponent(dirfd int, name string, flags int) (int, error) {
	for range 4 {
		fd, err := retryEINTR(func() (int, error) { return unix.Openat(dirfd, name, flags, 0) })
		if err == nil {
			return fd, nil
		}
		if err != unix.ENOTDIR {
			return -1, mapErrno(err)
		}
		var st unix.Stat_t
		if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			continue // gone meanwhile: the retried open will tell
		}
		switch modeKind(st.Mode) {
		case KindSymlink:
			return -1, ErrSymlink
		case KindDir:
			continue
		}
		return -1, ErrNotDir
	}
	return -1, ErrSymlink
}

// walk opens the ancestors parts[:len(parts)-1] one component at a time
// (O_PATH|O_DIRECTORY|O_NOFOLLOW) and then the leaf with flags. Every
// component must be the exact name of an entry (see exactName): a name
// that only folds to one is not there.
func walk(rootfd int, parts []string, flags int) (int, error) {
	dirfd := rootfd
	defer func() {
		if dirfd != rootfd {
			unix.Close(dirfd)
		}
	}()
	for _, c := range parts[:len(parts)-1] {
		fd, err := openExact(dirfd, c, pathFlags)
		if err != nil {
			return -1, err
		}
		if dirfd != rootfd {
			unix.Close(dirfd)
		}
		dirfd = fd
	}
	return openExact(dirfd, parts[len(parts)-1], flags)
}

// openExact is openComponent for a name a client gave: where lookups in
// dirfd may fold case, name must be an entry's exact name.
func openExact(dirfd int, name string, flags int) (int, error) {
	ok, err := exactName(dirfd, name)
	if err != nil {
		return -1, mapErrno(err)
	}
	if !ok {
		return -1, ErrNotExist
	}
	return openComponent(dirfd, name, flags)
}

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
