//go:build darwin

package confine

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A macOS ACL travels between the kernel and a process as a struct
// kauth_filesec (sys/kauth.h) in the machine's byte order: a magic
// number, the owner's and group's GUIDs, then a struct kauth_acl, an
// entry count (filesecNoACL: no ACL), flags and that many struct
// kauth_ace of 24 bytes (a GUID, flags, rights).
const (
	filesecMagic      = 0x012cc16d // KAUTH_FILESEC_MAGIC
	filesecACLAt      = 4 + 16 + 16
	filesecHeader     = filesecACLAt + 4 + 4 // KAUTH_FILESEC_SIZE(0)
	filesecACESize    = 16 + 4 + 4
	filesecNoACL      = 0xffffffff // KAUTH_FILESEC_NOACL
	filesecMaxEntries = 128        // KAUTH_ACL_MAX_ENTRIES
	filesecMaxSize    = filesecHeader + filesecMaxEntries*filesecACESize
)

var errBadFilesec = errors.New("the ACL the kernel gave is not a kauth_filesec")

// filesecACL is the ACL the kauth_filesec b holds (its entry count, flags
// and entries), nil when b is empty or holds none.
func filesecACL(b []byte) ([]byte, error) {
	if len(b) == 0 {
		return nil, nil
	}
	if len(b) < filesecHeader || binary.NativeEndian.Uint32(b) != filesecMagic {
		return nil, errBadFilesec
	}
	n := binary.NativeEndian.Uint32(b[filesecACLAt:])
	if n == filesecNoACL {
		return nil, nil
	}
	if n > filesecMaxEntries || len(b) != filesecHeader+int(n)*filesecACESize {
		return nil, errBadFilesec
	}
	return b[filesecACLAt:], nil
}

// sameACL reports whether the kauth_filesecs a and b hold the same ACL,
// whatever their owner and group GUIDs.
func sameACL(a, b []byte) (bool, error) {
	x, err := filesecACL(a)
	if err != nil {
		return false, err
	}
	y, err := filesecACL(b)
	return bytes.Equal(x, y), err
}

// Neither x/sys/unix nor the standard library binds the C library's
// acl_get_fd_np and acl_set_fd_np, and the builds use no cgo. Those
// functions wrap two system calls, fstat64_extended and fchmod_extended
// (xnu's bsd/kern/syscalls.master), which fsmcp makes itself with
// syscall.Syscall6, a direct trap on macOS. This can go once x/sys/unix
// binds the ACL calls.

// fchmod_extended's "no change" for the owner, group and mode, and its
// ACL argument that removes the ACL (KAUTH_UID_NONE, KAUTH_GID_NONE, -1,
// _FILESEC_REMOVE_ACL).
const (
	kauthIDNone      = ^uint32(0) - 100
	modeNoChange     = ^uintptr(0)
	filesecRemoveACL = 1
)

// readACL is the ACL of the file open as fd as a kauth_filesec, nil when
// it has none.
func readACL(fd int) ([]byte, error) {
	var st unix.Stat_t
	b := make([]byte, filesecMaxSize)
	size := uint64(len(b))
	_, err := retryEINTR(func() (int, error) {
		_, _, errno := syscall.Syscall6(unix.SYS_FSTAT64_EXTENDED, uintptr(fd), uintptr(unsafe.Pointer(&st)),
			uintptr(unsafe.Pointer(&b[0])), uintptr(unsafe.Pointer(&size)), 0, 0)
		if errno != 0 {
			return 0, errno
		}
		return 0, nil
	})
	switch {
	case err == unix.ENOTSUP || err == unix.EINVAL:
		return nil, nil // a volume that keeps no ACLs (some network and FAT volumes)
	case err != nil:
		return nil, fmt.Errorf("reading the ACL: %w", err)
	}
	if size > uint64(len(b)) {
		return nil, errBadFilesec
	}
	b = b[:size]
	if acl, err := filesecACL(b); err != nil || acl == nil {
		return nil, err
	}
	return b, nil
}

// keepACL gives the file open as fd the ACL of the file open as from, or
// none when from has none, leaving its owner, group and mode as they are,
// and checks that it took. A new file may have been given entries its
// directory passes on; the ACL set replaces them.
func keepACL(from, fd int) error {
	want, err := readACL(from)
	if err != nil {
		return err
	}
	have, err := readACL(fd)
	if err != nil {
		return err
	}
	if same, err := sameACL(have, want); err != nil || same {
		return err
	}
	if _, err := retryEINTR(func() (int, error) { return setACL(fd, want) }); err != nil {
		return fmt.Errorf("keeping the ACL: %w", err)
	}
	if have, err = readACL(fd); err != nil {
		return err
	}
	if same, err := sameACL(have, want); err != nil || !same {
		return fmt.Errorf("keeping the ACL: the new file's differs (%v)", err)
	}
	return nil
}

// setACL makes fchmod_extended's call: want's ACL, or removing it.
func setACL(fd int, want []byte) (int, error) {
	var errno syscall.Errno
	if want == nil {
		_, _, errno = syscall.Syscall6(unix.SYS_FCHMOD_EXTENDED, uintptr(fd), uintptr(kauthIDNone), uintptr(kauthIDNone),
			modeNoChange, filesecRemoveACL, 0)
	} else {
		_, _, errno = syscall.Syscall6(unix.SYS_FCHMOD_EXTENDED, uintptr(fd), uintptr(kauthIDNone), uintptr(kauthIDNone),
			modeNoChange, uintptr(unsafe.Pointer(&want[0])), 0)
	}
	if errno != 0 {
		return 0, errno
	}
	return 0, nil
}
