//go:build unix

package confine

import (
	"encoding/binary"
	"errors"
	"io"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// direntBufs holds directory-read buffers between directory reads. A walk
// reads every directory of its scope, and a fresh (zeroed) buffer for each
// was more than half of what a walk of the 100k tree allocated.
var direntBufs = sync.Pool{New: func() any { b := make([]byte, direntBufSize); return &b }}

// readDirents reads the directory fd from its start, one buffer of dirent
// records (unix.Dirent's layout) at a time, until each says no more or the
// directory ends. each must not keep buf, which is reused. Errors of the
// read are mapped as mapErrno maps them.
func readDirents(fd int, each func(buf []byte) (more bool, err error)) error {
	if _, err := unix.Seek(fd, 0, io.SeekStart); err != nil {
		return err
	}
	bp := direntBufs.Get().(*[]byte)
	defer direntBufs.Put(bp)
	buf := *bp
	for {
		n, err := unix.ReadDirent(fd, buf)
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

// A dirent record's fields, where unix.Dirent has them: its first field,
// d_ino (d_fileno on FreeBSD), is 64 bits everywhere; the name is
// NUL-terminated.
const (
	direntReclenOff = int(unsafe.Offsetof(unix.Dirent{}.Reclen))
	direntTypeOff   = int(unsafe.Offsetof(unix.Dirent{}.Type))
	direntNameOff   = int(unsafe.Offsetof(unix.Dirent{}.Name))
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
			e.Kind = statKind(&st)
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
