//go:build unix

package confine

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// ErrNotWritable is the refusal of a write destination that exists and is
// not a regular file this process may write: a directory, a symbolic link,
// a FIFO, socket or device, or a file whose permissions (or read-only
// mount, or immutable flag) do not let this process write it.
var ErrNotWritable = errors.New("destination is not a writable regular file")

// newFileMode is the mode of a file a write creates.
const newFileMode = 0o600

// maxWriteAttempts bounds how often a write starts again from its check
// when the entry at the destination name changed before the replacement.
// A name that changes under every attempt is not a destination a write
// can check: the write is refused with ErrNotWritable.
const maxWriteAttempts = 3

// errRaced is a write attempt that found, at the moment of replacement,
// another entry at the destination name than the one it checked (or an
// entry where there was none): it replaced nothing and left that entry
// where it was.
var errRaced = errors.New("the destination changed while the write was made")

// WriteFileAtomic replaces (or creates) the file name, one component
// directly in the root, with data.
//
// The destination must be absent or a regular file this process may write;
// anything else is refused with ErrNotWritable before anything is created.
// The check goes through an O_PATH descriptor, so a FIFO or device is never
// opened. Then a temp file named TempPrefix+random+TempSuffix is created in
// the root with O_EXCL|O_NOFOLLOW, written, given the destination's owner,
// group, extended attributes (POSIX ACLs included) and mode, less set-id
// bits and file capabilities, or mode 0600 for a new file, fsynced, and
// put in place of name only if name still holds the file checked (see
// replace); the root directory is fsynced last. A hard link at the
// destination is replaced, not written through. When another entry took
// the name meanwhile, the write starts again from the check, at most
// maxWriteAttempts times, and is then refused with ErrNotWritable. On any
// failure the temp file is removed and the destination is left as it was.
func (r *Root) WriteFileAtomic(name string, data []byte) error {
	if !validName(name) {
		return fmt.Errorf("write: %w", errInvalidPath)
	}
	rootfd, err := r.h.acquire()
	if err != nil {
		return pathErr("write", name, err)
	}
	defer r.h.release()
	for range maxWriteAttempts {
		if err = r.writeOnce(rootfd, name, data); !errors.Is(err, errRaced) {
			break
		}
	}
	if errors.Is(err, errRaced) {
		err = fmt.Errorf("%w: %w", ErrNotWritable, err)
	}
	if err != nil {
		return pathErr("write", name, err)
	}
	if err := fullSync(rootfd); err != nil {
		return pathErr("sync", ".", err)
	}
	return nil
}

// writeOnce checks the destination, writes the temp file and puts it in
// place of name.
func (r *Root) writeOnce(rootfd int, name string, data []byte) error {
	dest, err := inspectDestination(rootfd, name)
	if err != nil {
		return err
	}
	defer dest.close()
	tmp, err := r.writeTemp(rootfd, data, dest)
	if err != nil {
		return err
	}
	return r.replace(rootfd, tmp, name, dest)
}

// tempFile is a finished temp file: its name in the root and its inode.
type tempFile struct {
	name     string
	dev, ino uint64
}

// namedTemp creates a temporary file in the root under a fresh name,
// writes data to it, gives it dest's metadata and fsyncs it; on failure it
// leaves nothing behind.
func namedTemp(rootfd int, data []byte, dest *destination) (tempFile, error) {
	name, fd, err := createTemp(rootfd)
	if err != nil {
		return tempFile{}, err
	}
	f := os.NewFile(uintptr(fd), name)
	tmp := tempFile{name: name}
	if tmp.dev, tmp.ino, err = fillTemp(f, data, dest); err != nil {
		f.Close()
		unix.Unlinkat(rootfd, name, 0)
		return tempFile{}, err
	}
	if err := f.Close(); err != nil {
		unix.Unlinkat(rootfd, name, 0)
		return tempFile{}, unwrapPathError(err)
	}
	return tmp, nil
}

// createTemp creates a fresh temp file in the root with mode 0600.
func createTemp(rootfd int) (string, int, error) {
	fd := -1
	tmp, err := freshTemp(func(tmp string) (err error) {
		fd, err = retryEINTR(func() (int, error) {
			return unix.Openat(rootfd, tmp,
				unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, newFileMode)
		})
		return err
	})
	if err != nil {
		return "", -1, err
	}
	return tmp, fd, nil
}

// freshTemp calls try with a fresh temporary name (TempPrefix, 16 random
// hex digits, TempSuffix) until it does not fail with EEXIST, at most 100
// times, and returns the name it succeeded with.
func freshTemp(try func(tmp string) error) (string, error) {
	for attempt := 0; ; attempt++ {
		var rnd [8]byte
		if _, err := rand.Read(rnd[:]); err != nil {
			return "", err
		}
		tmp := TempPrefix + hex.EncodeToString(rnd[:]) + TempSuffix
		err := try(tmp)
		if err == nil {
			return tmp, nil
		}
		if err == unix.EEXIST && attempt < 100 {
			continue
		}
		return "", mapErrno(err)
	}
}

// fillTemp writes data to the temp file f, gives it the destination's
// metadata (or mode 0600 when there is no destination), fsyncs it and
// returns its device and inode. The data goes first: a write by an
// unprivileged process clears set-id bits, and a chown clears them and
// file capabilities, so the metadata follows in the order owner,
// attributes, mode.
func fillTemp(f *os.File, data []byte, dest *destination) (dev, ino uint64, err error) {
	if _, err := f.Write(data); err != nil {
		return 0, 0, unwrapPathError(err)
	}
	fd := int(f.Fd())
	if dest == nil {
		if err := unix.Fchmod(fd, newFileMode); err != nil {
			return 0, 0, fmt.Errorf("setting the mode: %w", err)
		}
	} else if err := dest.applyTo(fd); err != nil {
		return 0, 0, err
	}
	if err := fullSync(fd); err != nil {
		return 0, 0, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return 0, 0, err
	}
	return uint64(st.Dev), uint64(st.Ino), nil //nolint:unconvert // Dev is not uint64 on every platform
}

// unwrapPathError strips the *os.PathError wrapper (whose Path is the temp
// name; harmless, but keep messages uniform).
func unwrapPathError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
