//go:build linux

package fusefs

import (
	"context"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// SyncGate serves a host directory as it is, except that, while the gate
// is held, an fsync of a regular file waits until Release (or until the
// test ends): a disk that stalls while a write is made durable. Tmpfile
// says whether it makes O_TMPFILE files, as ext4 and tmpfs do (without,
// O_TMPFILE fails with EOPNOTSUPP, as on NFS); LinkTmpfile whether such a
// file can then be linked into place through /proc/self/fd (go-fuse's own
// loopback cannot: it answers EXDEV).
type SyncGate struct {
	// Waiting receives a value each time an fsync starts waiting at the
	// gate (buffered; sends that would block are dropped).
	Waiting chan struct{}

	// Tmpfiles counts the O_TMPFILE files asked for.
	Tmpfiles atomic.Int32

	// PlainRenameOnly, when set, fails a rename with flags (renameat2's
	// RENAME_NOREPLACE or RENAME_EXCHANGE) with EINVAL, as NFS and FUSE
	// servers without RENAME2 answer.
	PlainRenameOnly atomic.Bool

	// FlagRenames counts the renames with flags asked for.
	FlagRenames atomic.Int32

	tmpfile, link bool
	hold          bool
	release       chan struct{}
	once          sync.Once

	mu  sync.Mutex
	fds []int // the O_TMPFILE files' descriptors kept for linking
}

// NewSyncGate returns the root of a SyncGate file system serving dir, to
// be given to Mount. With hold false fsync never waits. Everything it holds
// is let go when the test ends.
func NewSyncGate(t testing.TB, dir string, tmpfile, linkTmpfile, hold bool) fs.InodeEmbedder {
	g := &SyncGate{Waiting: make(chan struct{}, 16), tmpfile: tmpfile, link: linkTmpfile, hold: hold, release: make(chan struct{})}
	t.Cleanup(func() {
		g.Release()
		g.mu.Lock()
		defer g.mu.Unlock()
		for _, fd := range g.fds {
			syscall.Close(fd)
		}
	})
	root := &fs.LoopbackRoot{Path: dir}
	root.NewNode = func(r *fs.LoopbackRoot, _ *fs.Inode, _ string, _ *syscall.Stat_t) fs.InodeEmbedder {
		return &gateNode{LoopbackNode: fs.LoopbackNode{RootData: r}, g: g, tmpfd: -1}
	}
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err == nil {
		root.Dev = st.Dev
	}
	node := root.NewNode(root, nil, "", &st)
	root.RootNode = node
	return node
}

// Gate returns the SyncGate of a root NewSyncGate returned.
func Gate(root fs.InodeEmbedder) *SyncGate { return root.(*gateNode).g }

// Release lets every fsync waiting at the gate, and every later one, go.
func (g *SyncGate) Release() { g.once.Do(func() { close(g.release) }) }

type gateNode struct {
	fs.LoopbackNode
	g     *SyncGate
	tmpfd int // an O_TMPFILE file's descriptor here, to link it; -1 otherwise
}

var (
	_ fs.NodeTmpfiler = (*gateNode)(nil)
	_ fs.NodeLinker   = (*gateNode)(nil)
	_ fs.NodeFsyncer  = (*gateNode)(nil)
	_ fs.NodeRenamer  = (*gateNode)(nil)
)

// real is the host path of the node.
func (n *gateNode) real() string {
	return filepath.Join(n.RootData.Path, n.Path(n.Root()))
}

// Tmpfile makes an O_TMPFILE file in the host directory, keeping a
// descriptor of it for Link when the file system links them.
func (n *gateNode) Tmpfile(ctx context.Context, flags, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	n.g.Tmpfiles.Add(1)
	switch {
	case !n.g.tmpfile:
		return nil, nil, 0, syscall.EOPNOTSUPP
	case !n.g.link:
		return n.LoopbackNode.Tmpfile(ctx, flags, mode, out)
	}
	fd, err := syscall.Open(n.real(), int(flags&^syscall.O_APPEND)|unix.O_TMPFILE, mode)
	if err != nil {
		return nil, nil, 0, fs.ToErrno(err)
	}
	keep, err := syscall.Dup(fd)
	if err != nil {
		syscall.Close(fd)
		return nil, nil, 0, fs.ToErrno(err)
	}
	n.g.mu.Lock()
	n.g.fds = append(n.g.fds, keep)
	n.g.mu.Unlock()
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		syscall.Close(fd)
		return nil, nil, 0, fs.ToErrno(err)
	}
	node := &gateNode{LoopbackNode: fs.LoopbackNode{RootData: n.RootData}, g: n.g, tmpfd: keep}
	ch := n.NewInode(ctx, node, fs.StableAttr{Mode: st.Mode, Ino: st.Ino})
	out.FromStat(&st)
	return ch, fs.NewLoopbackFile(fd), 0, 0
}

// Link links an O_TMPFILE file through its kept descriptor, anything else
// as the loopback does.
func (n *gateNode) Link(ctx context.Context, target fs.InodeEmbedder, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	t, ok := target.(*gateNode)
	if !ok || t.tmpfd < 0 {
		return n.LoopbackNode.Link(ctx, target, name, out)
	}
	p := filepath.Join(n.real(), name)
	if err := unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(t.tmpfd), unix.AT_FDCWD, p, unix.AT_SYMLINK_FOLLOW); err != nil {
		return nil, fs.ToErrno(err)
	}
	var st syscall.Stat_t
	if err := syscall.Lstat(p, &st); err != nil {
		return nil, fs.ToErrno(err)
	}
	out.FromStat(&st)
	return t.EmbeddedInode(), 0
}

// Rename renames as the loopback does, unless PlainRenameOnly refuses its
// flags.
func (n *gateNode) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	if flags != 0 {
		n.g.FlagRenames.Add(1)
		if n.g.PlainRenameOnly.Load() {
			return syscall.EINVAL
		}
	}
	return n.LoopbackNode.Rename(ctx, name, newParent, newName, flags)
}

// Getattr answers from the kept descriptor of an O_TMPFILE file.
func (n *gateNode) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	if n.tmpfd < 0 {
		return n.LoopbackNode.Getattr(ctx, f, out)
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(n.tmpfd, &st); err != nil {
		return fs.ToErrno(err)
	}
	out.FromStat(&st)
	return 0
}

// Setattr sets an O_TMPFILE file's mode, owner and size through its kept
// descriptor (the loopback would look for it by a path it has not got).
func (n *gateNode) Setattr(ctx context.Context, f fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if n.tmpfd < 0 {
		return n.LoopbackNode.Setattr(ctx, f, in, out)
	}
	if m, ok := in.GetMode(); ok {
		if err := syscall.Fchmod(n.tmpfd, m); err != nil {
			return fs.ToErrno(err)
		}
	}
	uid, uok := in.GetUID()
	gid, gok := in.GetGID()
	if uok || gok {
		u, g := -1, -1
		if uok {
			u = int(uid)
		}
		if gok {
			g = int(gid)
		}
		if err := syscall.Fchown(n.tmpfd, u, g); err != nil {
			return fs.ToErrno(err)
		}
	}
	if size, ok := in.GetSize(); ok {
		if err := syscall.Ftruncate(n.tmpfd, int64(size)); err != nil {
			return fs.ToErrno(err)
		}
	}
	return n.Getattr(ctx, f, out)
}

// The extended attributes of an O_TMPFILE file, through its kept
// descriptor.

func (n *gateNode) Listxattr(ctx context.Context, dest []byte) (uint32, syscall.Errno) {
	if n.tmpfd < 0 {
		return n.LoopbackNode.Listxattr(ctx, dest)
	}
	sz, err := unix.Flistxattr(n.tmpfd, dest)
	return uint32(sz), fs.ToErrno(err)
}

func (n *gateNode) Getxattr(ctx context.Context, attr string, dest []byte) (uint32, syscall.Errno) {
	if n.tmpfd < 0 {
		return n.LoopbackNode.Getxattr(ctx, attr, dest)
	}
	sz, err := unix.Fgetxattr(n.tmpfd, attr, dest)
	return uint32(sz), fs.ToErrno(err)
}

func (n *gateNode) Setxattr(ctx context.Context, attr string, data []byte, flags uint32) syscall.Errno {
	if n.tmpfd < 0 {
		return n.LoopbackNode.Setxattr(ctx, attr, data, flags)
	}
	return fs.ToErrno(unix.Fsetxattr(n.tmpfd, attr, data, int(flags)))
}

func (n *gateNode) Removexattr(ctx context.Context, attr string) syscall.Errno {
	if n.tmpfd < 0 {
		return n.LoopbackNode.Removexattr(ctx, attr)
	}
	return fs.ToErrno(unix.Fremovexattr(n.tmpfd, attr))
}

// Fsync waits at the gate for a regular file, then syncs.
func (n *gateNode) Fsync(ctx context.Context, f fs.FileHandle, flags uint32) syscall.Errno {
	if n.g.hold && n.StableAttr().Mode&syscall.S_IFMT == syscall.S_IFREG {
		select {
		case n.g.Waiting <- struct{}{}:
		default:
		}
		select {
		case <-n.g.release:
		case <-ctx.Done():
			return syscall.EINTR
		}
	}
	if s, ok := f.(fs.FileFsyncer); ok {
		return s.Fsync(ctx, flags)
	}
	return 0
}
