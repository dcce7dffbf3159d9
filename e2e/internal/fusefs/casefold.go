//go:build linux

package fusefs

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// NewCasefold returns a filesystem that serves the host directory dir as
// FAT, exFAT or an SMB share does: names keep their spelling, but a lookup
// finds an entry whatever the case of the name asked for (an exact match
// first). Creating a name that folds to an existing entry reaches that
// entry.
func NewCasefold(dir string) fs.InodeEmbedder {
	return &casefoldNode{real: dir, opt: &options{fold: true}}
}

// NewCoarseTimes returns a filesystem that serves the host directory dir
// unchanged except for its timestamps, which it reports in whole seconds,
// as FAT (2 s), SMB and other filesystems with coarse timestamps do: two
// writes within one second leave mtime and ctime as they were.
func NewCoarseTimes(dir string) fs.InodeEmbedder {
	return &casefoldNode{real: dir, opt: &options{coarse: true}}
}

// NewDecomposing returns a filesystem that serves the host directory dir
// as HFS+ treats names: a name is stored decomposed (NFD), and a lookup
// finds the entry whatever the normalization of the name asked for. It
// knows the decompositions of decomposable (below), enough for the tests'
// names.
func NewDecomposing(dir string) fs.InodeEmbedder {
	return &casefoldNode{real: dir, opt: &options{decompose: true}}
}

// decomposable maps precomposed letters to their canonical decompositions.
var decomposable = strings.NewReplacer(
	"\u00e9", "e\u0301", "\u00c9", "E\u0301", "\u00e8", "e\u0300", "\u00fc", "u\u0308", "\u00f1", "n\u0303",
)

type options struct {
	fold      bool // lookups fold case
	coarse    bool // timestamps in whole seconds
	decompose bool // names stored decomposed; lookups of either form find them
}

type casefoldNode struct {
	fs.Inode
	real string // the host path this node serves
	opt  *options
}

// attr applies the timestamp granularity to a returned attribute.
func (n *casefoldNode) attr(a *fuse.Attr) {
	if n.opt.coarse {
		a.Atimensec, a.Mtimensec, a.Ctimensec = 0, 0, 0
	}
}

var (
	_ fs.NodeLookuper  = (*casefoldNode)(nil)
	_ fs.NodeReaddirer = (*casefoldNode)(nil)
	_ fs.NodeGetattrer = (*casefoldNode)(nil)
	_ fs.NodeSetattrer = (*casefoldNode)(nil)
	_ fs.NodeOpener    = (*casefoldNode)(nil)
	_ fs.NodeCreater   = (*casefoldNode)(nil)
	_ fs.NodeRenamer   = (*casefoldNode)(nil)
	_ fs.NodeUnlinker  = (*casefoldNode)(nil)
	_ fs.NodeFsyncer   = (*casefoldNode)(nil)
	_ fs.NodeStatfser  = (*casefoldNode)(nil)
)

// fold returns the host name of the entry name finds in n: itself
// (decomposed, where names are) if it exists, else an entry equal under
// case folding, else name.
func (n *casefoldNode) fold(name string) string {
	if n.opt.decompose {
		name = decomposable.Replace(name)
	}
	if !n.opt.fold {
		return name
	}
	if _, err := os.Lstat(filepath.Join(n.real, name)); err == nil {
		return name
	}
	es, err := os.ReadDir(n.real)
	if err != nil {
		return name
	}
	for _, e := range es {
		if strings.EqualFold(e.Name(), name) {
			return e.Name()
		}
	}
	return name
}

func (n *casefoldNode) child(ctx context.Context, path string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	var st syscall.Stat_t
	if err := syscall.Lstat(path, &st); err != nil {
		return nil, fs.ToErrno(err)
	}
	out.Attr.FromStat(&st)
	n.attr(&out.Attr)
	return n.NewInode(ctx, &casefoldNode{real: path, opt: n.opt}, fs.StableAttr{Mode: st.Mode, Ino: st.Ino}), 0
}

func (n *casefoldNode) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return n.child(ctx, filepath.Join(n.real, n.fold(name)), out)
}

func (n *casefoldNode) Readdir(ctx context.Context) (fs.DirStream, syscall.Errno) {
	return fs.NewLoopbackDirStream(n.real)
}

func (n *casefoldNode) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	defer n.attr(&out.Attr)
	if fga, ok := f.(fs.FileGetattrer); ok {
		return fga.Getattr(ctx, out)
	}
	var st syscall.Stat_t
	if err := syscall.Lstat(n.real, &st); err != nil {
		return fs.ToErrno(err)
	}
	out.FromStat(&st)
	return 0
}

func (n *casefoldNode) Setattr(ctx context.Context, f fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if fsa, ok := f.(fs.FileSetattrer); ok {
		defer n.attr(&out.Attr)
		return fsa.Setattr(ctx, in, out)
	}
	if m, ok := in.GetMode(); ok {
		if err := syscall.Chmod(n.real, m); err != nil {
			return fs.ToErrno(err)
		}
	}
	return n.Getattr(ctx, nil, out)
}

func (n *casefoldNode) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	fd, err := syscall.Open(n.real, int(flags)&^syscall.O_APPEND, 0)
	if err != nil {
		return nil, 0, fs.ToErrno(err)
	}
	return fs.NewLoopbackFile(fd), 0, 0
}

func (n *casefoldNode) Create(ctx context.Context, name string, flags, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	p := filepath.Join(n.real, n.fold(name))
	fd, err := syscall.Open(p, int(flags)|syscall.O_CREAT, mode)
	if err != nil {
		return nil, nil, 0, fs.ToErrno(err)
	}
	ch, errno := n.child(ctx, p, out)
	if errno != 0 {
		syscall.Close(fd)
		return nil, nil, 0, errno
	}
	return ch, fs.NewLoopbackFile(fd), 0, 0
}

func (n *casefoldNode) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	np, ok := newParent.(*casefoldNode)
	if !ok || flags != 0 {
		return syscall.EINVAL
	}
	return fs.ToErrno(os.Rename(filepath.Join(n.real, n.fold(name)), filepath.Join(np.real, np.fold(newName))))
}

func (n *casefoldNode) Unlink(ctx context.Context, name string) syscall.Errno {
	return fs.ToErrno(syscall.Unlink(filepath.Join(n.real, n.fold(name))))
}

func (n *casefoldNode) Fsync(ctx context.Context, f fs.FileHandle, flags uint32) syscall.Errno {
	if ff, ok := f.(fs.FileFsyncer); ok {
		return ff.Fsync(ctx, flags)
	}
	return 0 // a directory: its host directory's entries are the host's to sync
}

func (n *casefoldNode) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	var s syscall.Statfs_t
	if err := syscall.Statfs(n.real, &s); err != nil {
		return fs.ToErrno(err)
	}
	out.FromStatfsT(&s)
	return 0
}
