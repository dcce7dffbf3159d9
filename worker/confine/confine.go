//go:build unix

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
// The package has two backends with one API. On Linux, multi-component
// paths are opened with openat2(2) using RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS
// when the kernel supports it, and with a per-component openat(2) walk
// using O_NOFOLLOW otherwise; files are opened O_PATH and checked before
// they are opened for reading. The portable backend (root_portable.go:
// macOS, FreeBSD, and Linux built with the tag fsmcp_portable) always
// walks, and checks a file's type before opening it and its identity
// after. Both refuse the same paths with the same errors.
//
// Errors never contain a host path: only the relative path given by the
// caller (or nothing).
package confine

import (
	"errors"
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
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
	// Nlink is the number of hard links. Any change to it changes
	// CtimeNs too, so it adds nothing to comparisons; it tells whether a
	// directory watch sees every write to the file (one link only).
	Nlink uint64
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

// statKind is the file type of st.
func statKind(st *unix.Stat_t) Kind { return modeKind(uint32(st.Mode)) } //nolint:unconvert // Mode is 16 bits on macOS

func identityOf(st *unix.Stat_t) Identity {
	return Identity{
		Dev:     uint64(st.Dev), //nolint:unconvert // Dev is not uint64 on every arch
		Ino:     uint64(st.Ino), //nolint:unconvert
		Size:    st.Size,
		Mode:    uint32(st.Mode), //nolint:unconvert // Mode is 16 bits on macOS
		MtimeNs: st.Mtim.Nano(),
		CtimeNs: st.Ctim.Nano(),
		Nlink:   uint64(st.Nlink), //nolint:unconvert // Nlink is not uint64 on every arch
	}
}

// Entry is one directory entry.
type Entry struct {
	Name string
	Kind Kind
}

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
	case errors.Is(err, unix.ELOOP), errors.Is(err, unix.EXDEV), errors.Is(err, errNoFollow):
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
