//go:build linux

// Package confine provides descriptor-relative, symlink-refusing file access
// confined to one root directory.
//
// Every path is resolved relative to a descriptor of the root directory. A
// symbolic link at the leaf or at any ancestor component is refused, never
// followed, so replacing an ancestor directory by a symlink while a call is
// in progress cannot reach outside the root. The model is Go's os.Root, but
// stricter: no symlink is followed at all, not even one that would stay
// inside the root.
//
// Multi-component paths are opened with openat2(2) using
// RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS when the kernel supports it, and with a
// per-component openat(2) walk using O_NOFOLLOW otherwise.
//
// Errors never contain a host path: only the relative path given by the
// caller (or nothing).
package confine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/fsmcp/fsmcp/worker/watch"
)

// Sentinel errors. Errors returned by this package satisfy errors.Is with
// these where applicable.
var (
	ErrNotExist   = errors.New("no such file or directory")
	ErrSymlink    = errors.New("path goes through a symbolic link")
	ErrNotRegular = errors.New("not a regular file")
	ErrNotDir     = errors.New("not a directory")
	// ErrPermission: the process may not open the file (or search a
	// directory on the way).
	ErrPermission = errors.New("permission denied")
)

var (
	errInvalidPath = errors.New("invalid path")
	errClosed      = errors.New("use of closed root or directory")
)

// TempPrefix and TempSuffix frame the names of the temporary files created
// by WriteFileAtomic.
const (
	TempPrefix = ".fsmcp-write-"
	TempSuffix = ".tmp"
)

// IsTempName reports whether name looks like a temporary file created by
// WriteFileAtomic.
func IsTempName(name string) bool {
	return len(name) > len(TempPrefix)+len(TempSuffix) &&
		strings.HasPrefix(name, TempPrefix) && strings.HasSuffix(name, TempSuffix)
}

// Kind is the type of a directory entry or opened file.
type Kind uint8

// Kinds.
const (
	KindOther Kind = iota
	KindFile
	KindDir
	KindSymlink
)

func (k Kind) String() string {
	switch k {
	case KindFile:
		return "file"
	case KindDir:
		return "dir"
	case KindSymlink:
		return "symlink"
	default:
		return "other"
	}
}

// Identity is the physical identity and metadata of an opened file, from
// fstat.
type Identity struct {
	Dev, Ino         uint64
	Size             int64
	Mode             uint32 // st_mode: file type and permission bits
	MtimeNs, CtimeNs int64
}

// Kind returns the file type encoded in id.Mode.
func (id Identity) Kind() Kind { return modeKind(id.Mode) }

func modeKind(mode uint32) Kind {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return KindFile
	case unix.S_IFDIR:
		return KindDir
	case unix.S_IFLNK:
		return KindSymlink
	default:
		return KindOther
	}
}

func identityOf(st *unix.Stat_t) Identity {
	return Identity{
		Dev:     uint64(st.Dev), //nolint:unconvert // Dev is not uint64 on every arch
		Ino:     uint64(st.Ino), //nolint:unconvert
		Size:    st.Size,
		Mode:    st.Mode,
		MtimeNs: st.Mtim.Nano(),
		CtimeNs: st.Ctim.Nano(),
	}
}

// Entry is one directory entry.
type Entry struct {
	Name string
	Kind Kind
}

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
	return r.h.close()
}

// UsesOpenat2 reports whether multi-component paths are resolved with
// openat2(2) (true) or with the per-component openat(2) walk (false).
func (r *Root) UsesOpenat2() bool { return openat2OK && !r.noOpenat2 }

// setForceWalk forces (or stops forcing) the per-component walk. For tests;
// must be called before the Root is shared.
func (r *Root) setForceWalk(force bool) { r.noOpenat2 = force }

// Dir is an open directory inside the root. A Dir is safe for concurrent
// use.
type Dir struct {
	h    fdRef
	rel  string // relative path from the root, for error messages
	rdMu sync.Mutex
}

// Close closes the directory.
func (d *Dir) Close() error { return d.h.close() }

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

// splitRel splits a slash-separated relative path into its components.
// "" and "." components are dropped; ".." components, absolute paths and NUL
// bytes are refused (the caller is supposed to have validated rel already;
// this is defence in depth, since ".." would escape in the walk).
func splitRel(rel string) ([]string, error) {
	if strings.HasPrefix(rel, "/") || strings.IndexByte(rel, 0) >= 0 {
		return nil, errInvalidPath
	}
	var parts []string
	for _, c := range strings.Split(rel, "/") {
		switch c {
		case "", ".":
			continue
		case "..":
			return nil, errInvalidPath
		}
		parts = append(parts, c)
	}
	return parts, nil
}

func validName(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.ContainsAny(name, "/\x00")
}

func shown(rel string) string {
	if rel == "" {
		return "."
	}
	return rel
}

func joinRel(dir, name string) string {
	if dir == "" || dir == "." {
		return name
	}
	return dir + "/" + name
}

// mapErrno maps an errno to a sentinel error where applicable.
func mapErrno(err error) error {
	switch {
	case errors.Is(err, unix.ENOENT):
		return ErrNotExist
	case errors.Is(err, unix.ELOOP), errors.Is(err, unix.EXDEV):
		return ErrSymlink
	case errors.Is(err, unix.ENOTDIR):
		return ErrNotDir
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
		return ErrPermission
	}
	return err
}

func pathErr(op, rel string, err error) error {
	return fmt.Errorf("%s %s: %w", op, shown(rel), err)
}

func retryEINTR(f func() (int, error)) (int, error) {
	for {
		fd, err := f()
		if err != unix.EINTR {
			return fd, err
		}
	}
}

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

func newDir(fd int, rel string) *Dir {
	d := &Dir{rel: rel}
	d.h.fd = fd
	return d
}

// OpenFile opens the regular file at rel for reading. It does not block on
// a FIFO; non-regular files are refused with ErrNotRegular and symlinks at
// any component with ErrSymlink. The returned file's Name is rel.
func (r *Root) OpenFile(rel string) (*os.File, Identity, error) {
	fd, st, clean, err := r.openRegular(rel)
	if err != nil {
		return nil, Identity{}, err
	}
	return blockingFile(fd, st, clean)
}

// openRegular opens the regular file at rel (O_NONBLOCK still set) and
// returns its descriptor, its fstat and rel cleaned. The name is opened
// O_PATH and checked first, so a FIFO, socket or device is never opened.
func (r *Root) openRegular(rel string) (int, *unix.Stat_t, string, error) {
	parts, err := splitRel(rel)
	if err != nil {
		return -1, nil, "", fmt.Errorf("open: %w", err)
	}
	if len(parts) == 0 {
		return -1, nil, "", pathErr("open", rel, ErrNotRegular)
	}
	rootfd, err := r.h.acquire()
	if err != nil {
		return -1, nil, "", pathErr("open", rel, err)
	}
	defer r.h.release()
	pfd, err := r.openRel(rootfd, parts, leafFlags)
	if err != nil {
		return -1, nil, "", pathErr("open", rel, err)
	}
	clean := strings.Join(parts, "/")
	fd, st, err := reopenRegular(pfd, clean)
	if err == errNoProc {
		// No /proc: open the name again, non-blocking, and keep it only
		// if it is the file just checked.
		if fd, err = r.openRel(rootfd, parts, fileFlags); err != nil {
			return -1, nil, "", pathErr("open", rel, err)
		}
		return sameRegular(fd, st, clean)
	}
	if err != nil {
		return -1, nil, "", err
	}
	return fd, st, clean, nil
}

// statRegular returns the fstat of fd if it is a regular file, else an
// error naming rel; it closes fd on failure.
func statRegular(fd int, rel string) (*unix.Stat_t, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, pathErr("stat", rel, err)
	}
	if modeKind(st.Mode) != KindFile {
		unix.Close(fd)
		return nil, pathErr("open", rel, ErrNotRegular)
	}
	return &st, nil
}

// blockingFile clears O_NONBLOCK on the regular file fd and wraps it in an
// *os.File named rel; it closes fd on failure.
func blockingFile(fd int, st *unix.Stat_t, rel string) (*os.File, Identity, error) {
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, Identity{}, pathErr("open", rel, err)
	}
	return os.NewFile(uintptr(fd), rel), identityOf(st), nil
}

// Fstat returns the Identity of an open file.
func Fstat(f *os.File) (Identity, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return Identity{}, fmt.Errorf("stat: %w", err)
	}
	var st unix.Stat_t
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = unix.Fstat(int(fd), &st) }); err != nil {
		return Identity{}, fmt.Errorf("stat: %w", err)
	}
	if serr != nil {
		return Identity{}, fmt.Errorf("stat: %w", serr)
	}
	return identityOf(&st), nil
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

// OpenFile opens the regular file name (one component) of d for reading,
// with the same rules as Root.OpenFile.
func (d *Dir) OpenFile(name string) (*os.File, Identity, error) {
	rel := joinRel(d.rel, name)
	if !validName(name) {
		return nil, Identity{}, fmt.Errorf("open: %w", errInvalidPath)
	}
	dirfd, err := d.h.acquire()
	if err != nil {
		return nil, Identity{}, pathErr("open", rel, err)
	}
	defer d.h.release()
	pfd, err := openComponent(dirfd, name, leafFlags)
	if err != nil {
		return nil, Identity{}, pathErr("open", rel, err)
	}
	fd, st, err := reopenRegular(pfd, rel)
	if err == errNoProc {
		if fd, err = openComponent(dirfd, name, fileFlags); err != nil {
			return nil, Identity{}, pathErr("open", rel, err)
		}
		if fd, st, _, err = sameRegular(fd, st, rel); err != nil {
			return nil, Identity{}, err
		}
	} else if err != nil {
		return nil, Identity{}, err
	}
	return blockingFile(fd, st, rel)
}

// Stat returns the Identity of name (one component) in d without following
// a symlink: a symlink yields an Identity of KindSymlink, not an error.
func (d *Dir) Stat(name string) (Identity, error) {
	rel := joinRel(d.rel, name)
	if !validName(name) {
		return Identity{}, fmt.Errorf("stat: %w", errInvalidPath)
	}
	dirfd, err := d.h.acquire()
	if err != nil {
		return Identity{}, pathErr("stat", rel, err)
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
		return Identity{}, pathErr("stat", rel, mapErrno(err))
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
	if _, err := unix.Seek(dirfd, 0, io.SeekStart); err != nil {
		return nil, pathErr("readdir", d.rel, err)
	}
	var out []Entry
	buf := make([]byte, 32<<10)
	for {
		n, err := unix.Getdents(dirfd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, pathErr("readdir", d.rel, mapErrno(err))
		}
		if n <= 0 {
			return out, nil
		}
		out, err = parseDirents(dirfd, buf[:n], out)
		if err != nil {
			return nil, pathErr("readdir", d.rel, err)
		}
	}
}

// linux_dirent64: d_ino u64, d_off s64, d_reclen u16, d_type u8, d_name.
const (
	direntReclenOff = 16
	direntTypeOff   = 18
	direntNameOff   = 19
)

func parseDirents(dirfd int, buf []byte, out []Entry) ([]Entry, error) {
	for len(buf) > 0 {
		if len(buf) < direntNameOff {
			return out, errors.New("short dirent")
		}
		reclen := int(binary.NativeEndian.Uint16(buf[direntReclenOff:]))
		if reclen < direntNameOff || reclen > len(buf) {
			return out, errors.New("bad dirent")
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
		if len(name) == 0 || string(name) == "." || string(name) == ".." {
			continue
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
				continue // removed meanwhile
			}
			if err != nil {
				return out, mapErrno(err)
			}
			e.Kind = modeKind(st.Mode)
		default:
			e.Kind = KindOther
		}
		out = append(out, e)
	}
	return out, nil
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

// Reader is a regular file opened for reading by descriptor alone, for
// scans that read many small files: it costs no poller registration and no
// flag changes, only the open, an fstat and the reads.
type Reader struct {
	fd    int
	rel   string
	nlink uint64 // links when opened
}

// OpenReader opens the regular file at rel like OpenFile, returning a
// Reader. O_NONBLOCK stays set: it is there so that opening a FIFO swapped
// in cannot block, and it changes nothing for a regular file.
func (r *Root) OpenReader(rel string) (*Reader, Identity, error) {
	fd, st, clean, err := r.openRegular(rel)
	if err != nil {
		return nil, Identity{}, err
	}
	return &Reader{fd: fd, rel: clean, nlink: uint64(st.Nlink)}, identityOf(st), nil //nolint:unconvert // Nlink is not uint64 on every arch
}

// ReadAt reads len(p) bytes at off, as io.ReaderAt.
func (f *Reader) ReadAt(p []byte, off int64) (int, error) {
	n := 0
	for n < len(p) {
		k, err := unix.Pread(f.fd, p[n:], off+int64(n))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return n, pathErr("read", f.rel, err)
		}
		if k == 0 {
			return n, io.EOF
		}
		n += k
	}
	return n, nil
}

// Identity returns the Identity of the open file.
func (f *Reader) Identity() (Identity, error) {
	var st unix.Stat_t
	if err := unix.Fstat(f.fd, &st); err != nil {
		return Identity{}, pathErr("stat", f.rel, err)
	}
	return identityOf(&st), nil
}

// Close closes the file.
func (f *Reader) Close() error { return unix.Close(f.fd) }
