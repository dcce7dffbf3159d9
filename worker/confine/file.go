//go:build unix

package confine

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

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
// returns its descriptor, its fstat and rel cleaned; each backend opens it
// its own way (openRegularAt).
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
	return r.openRegularAt(rootfd, parts, rel)
}

// statRegular returns the fstat of fd if it is a regular file, else an
// error naming rel; it closes fd on failure.
func statRegular(fd int, rel string) (*unix.Stat_t, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, pathErr("stat", rel, err)
	}
	if statKind(&st) != KindFile {
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

// Reader is a regular file opened for reading by descriptor alone, for
// scans that read many small files: it costs no poller registration and no
// flag changes, only the open, an fstat and the reads.
type Reader struct {
	fd    int
	rel   string
	nlink uint64 // links when opened
	// verify: each read is made twice, a write in progress waited out in
	// between, and the two compared (see unstampedWrites); torn: two
	// reads differed.
	verify, torn bool
}

// OpenReader opens the regular file at rel like OpenFile, returning a
// Reader. O_NONBLOCK stays set: it is there so that opening a FIFO swapped
// in cannot block, and it changes nothing for a regular file.
func (r *Root) OpenReader(rel string) (*Reader, Identity, error) {
	fd, st, clean, err := r.openRegular(rel)
	if err != nil {
		return nil, Identity{}, err
	}
	f := &Reader{fd: fd, rel: clean, nlink: uint64(st.Nlink), verify: unstampedWrites(st, time.Now())} //nolint:unconvert // Nlink is not uint64 on every arch
	return f, identityOf(st), nil
}

// ReadAt reads len(p) bytes at off, as io.ReaderAt. A Reader whose reads
// are verified reads them again once a write in progress has ended, and
// marks itself torn when the second read differs.
func (f *Reader) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.readAt(p, off)
	if f.verify && n > 0 {
		f.readAgain(p[:n], off)
	}
	return n, err
}

// readAgain reads the bytes first was read from at off once more, once a
// write in progress has ended, and marks f torn when they differ.
func (f *Reader) readAgain(first []byte, off int64) {
	if f.torn {
		return
	}
	settle(f.fd)
	again := make([]byte, len(first))
	if k, _ := f.readAt(again, off); k != len(first) || !bytes.Equal(again, first) {
		f.torn = true
	}
}

// readAt is ReadAt made once.
func (f *Reader) readAt(p []byte, off int64) (int, error) {
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

// settle waits for a write to the open file fd in progress to end:
// lseek(SEEK_DATA) takes the inode lock a write holds for its whole copy
// (Linux's filesystems, FUSE; macOS where the filesystem takes the vnode
// lock for it). Its answer does not matter (past the end of the file it is
// ENXIO), nor does the file offset (reads use pread).
func settle(fd int) { unix.Seek(fd, math.MaxInt64, unix.SEEK_DATA) }
