//go:build !fsmcp_portable

package watch

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// mountInfo is the process's mount table. Open, it is pollable: poll(2)
// reports POLLPRI once a filesystem has been mounted or unmounted in the
// process's mount namespace since the file was opened or last polled
// (proc(5)). A mount hides what a watched directory holds, and an unmount
// shows it again, without any inotify event on the directory.
const mountInfo = "/proc/self/mountinfo"

// tree is a tree a Set answers for (Tree): its top's path, and the mount
// table's entries that concern it (see aboutTree) when it was checked.
type tree struct{ top, mounts string }

// openMounts opens the mount table for mountsChanged.
func openMounts() (int, error) {
	fd, err := unix.Open(mountInfo, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, ErrUnavailable
	}
	return fd, nil
}

// mountsChanged reports whether a mount or unmount concerns one of the
// Set's trees: the mount table changed since it was opened or last polled,
// and its entries at, above or below a tree's top differ from those the
// tree was checked with. Mounts elsewhere leave the trees alone.
func (s *Set) mountsChanged() (bool, error) {
	if moved, err := pollPri(s.mounts); !moved || err != nil {
		return false, err
	}
	table, err := os.ReadFile(mountInfo)
	if err != nil {
		return false, fmt.Errorf("read the mount table: %w", err)
	}
	for _, t := range s.trees {
		if mounts, _, ok := aboutTree(string(table), t.top); !ok || mounts != t.mounts {
			return true, nil
		}
	}
	return false, nil
}

// pollPri reports whether poll(2) finds a priority event (POLLPRI) on fd,
// without waiting.
func pollPri(fd int) (bool, error) {
	p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLPRI}}
	for {
		_, err := unix.Poll(p, 0)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return false, fmt.Errorf("poll the mount table: %w", err)
		case p[0].Revents&unix.POLLNVAL != 0:
			return false, fmt.Errorf("poll the mount table: %w", unix.EBADF)
		}
		return p[0].Revents&unix.POLLPRI != 0, nil
	}
}

// magicZFS is OpenZFS's f_type, which golang.org/x/sys/unix does not name.
const magicZFS = 0x2fc12fc1

// local returns nil when the directory open as dirfd is on a filesystem
// whose every change is made through this kernel, and so reaches inotify:
// a short list of local disk and memory filesystems. Anything else (NFS,
// CIFS, 9p, Ceph, FUSE and virtiofs, overlayfs whose layers can be written
// beneath it, a filesystem this list does not know) is ErrUnavailable.
func local(dirfd int) error {
	var sf unix.Statfs_t
	for {
		err := unix.Fstatfs(dirfd, &sf)
		if err == nil {
			break
		}
		if err != unix.EINTR {
			return ErrUnavailable
		}
	}
	switch uint32(sf.Type) { //nolint:gosec // f_type is a 32-bit magic
	case unix.EXT4_SUPER_MAGIC, unix.XFS_SUPER_MAGIC, unix.BTRFS_SUPER_MAGIC, unix.TMPFS_MAGIC,
		unix.RAMFS_MAGIC, unix.F2FS_SUPER_MAGIC, unix.BCACHEFS_SUPER_MAGIC, magicZFS:
		return nil
	}
	return ErrUnavailable
}

// Tree checks that a Set can answer for the tree below the directory open
// as dirfd: the directory is on a local filesystem (see local) and no
// mount point lies below it, so every directory of the tree is on that
// same filesystem; otherwise it returns ErrUnavailable. It watches
// nothing: call it before the tree is read, and watch each directory
// before reading it (Dir). From then on a mount or unmount at the tree's
// top, above it or below it is a change (Changed), so a tree found free of
// mount points stays so while the Set reports no change.
func (s *Set) Tree(dirfd int) error {
	if err := s.open(); err != nil {
		return err
	}
	if err := local(dirfd); err != nil {
		return err
	}
	top, err := os.Readlink(procPath(dirfd, ""))
	if err != nil || !strings.HasPrefix(top, "/") || strings.HasSuffix(top, " (deleted)") {
		return ErrUnavailable // unreachable from this process's root, or gone
	}
	table, err := os.ReadFile(mountInfo)
	if err != nil {
		return ErrUnavailable
	}
	mounts, below, ok := aboutTree(string(table), top)
	if !ok || below {
		return ErrUnavailable
	}
	// A tree checked again as it was is held once: a scope searched
	// afresh many times adds nothing.
	if t := (tree{top, mounts}); !slices.Contains(s.trees, t) {
		s.trees = append(s.trees, t)
	}
	return nil
}

// aboutTree returns the entries of the mount table (in mountinfo's format)
// that concern the tree whose top is the absolute path top: those mounted
// at top, at one of its ancestors or below it, each as its mount id,
// parent id, device, root and mount point. below tells whether one is
// below top. ok is false if a line cannot be read.
func aboutTree(table, top string) (mounts string, below, ok bool) {
	prefix := strings.TrimSuffix(top, "/") + "/"
	var b strings.Builder
	for line := range strings.Lines(table) {
		// id parent major:minor root mount-point options ...
		f := strings.Fields(line)
		if len(f) < 5 {
			return "", false, false
		}
		at := unescapeMount(f[4])
		switch {
		case at != top && strings.HasPrefix(at, prefix):
			below = true
		case at == top || strings.HasPrefix(top, strings.TrimSuffix(at, "/")+"/"):
		default:
			continue
		}
		b.WriteString(strings.Join(f[:5], " "))
		b.WriteByte('\n')
	}
	return b.String(), below, true
}

// unescapeMount undoes the kernel's escaping of a mount point in the mount
// table: a space, tab, newline or backslash is written as a backslash and
// three octal digits.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && '0' <= s[i+1] && s[i+1] <= '3' && octal(s[i+2]) && octal(s[i+3]) {
			b.WriteByte((s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0'))
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func octal(c byte) bool { return '0' <= c && c <= '7' }
