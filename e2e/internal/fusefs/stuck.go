package fusefs

import (
	"context"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// StuckText is the content of ok.txt, the file of a Stuck file system that
// reads normally.
const StuckText = "fine\n"

// Stuck is a file system like a network share whose server went away in
// the middle: its root holds ok.txt, which reads normally, and stuck.txt,
// whose size and attributes are served at once but whose reads never
// return (until the reading process is killed, or the test ends).
type Stuck struct {
	fs.Inode

	// Blocked counts the reads of stuck.txt that have started.
	Blocked atomic.Int32

	release chan struct{}
	once    sync.Once
}

// NewStuck returns a Stuck file system for Mount; the reads it holds are
// let go when the test ends.
func NewStuck(t testing.TB) *Stuck {
	s := &Stuck{release: make(chan struct{})}
	t.Cleanup(func() { s.once.Do(func() { close(s.release) }) })
	return s
}

var _ = (fs.NodeOnAdder)((*Stuck)(nil))

// OnAdd adds the two files.
func (s *Stuck) OnAdd(ctx context.Context) {
	ok := s.NewPersistentInode(ctx, &fs.MemRegularFile{Data: []byte(StuckText), Attr: fuse.Attr{Mode: 0o644}}, fs.StableAttr{})
	s.AddChild("ok.txt", ok, true)
	stuck := s.NewPersistentInode(ctx, &stuckFile{s: s}, fs.StableAttr{})
	s.AddChild("stuck.txt", stuck, true)
}

// stuckFile is stuck.txt.
type stuckFile struct {
	fs.Inode
	s *Stuck
}

var (
	_ = (fs.NodeGetattrer)((*stuckFile)(nil))
	_ = (fs.NodeOpener)((*stuckFile)(nil))
	_ = (fs.NodeReader)((*stuckFile)(nil))
)

func (f *stuckFile) Getattr(_ context.Context, _ fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	out.Mode = syscall.S_IFREG | 0o644
	out.Size = 4096
	return 0
}

// Open asks for direct I/O, so every read reaches Read (no page cache).
func (f *stuckFile) Open(context.Context, uint32) (fs.FileHandle, uint32, syscall.Errno) {
	return nil, fuse.FOPEN_DIRECT_IO, 0
}

// Read never answers while the test runs; the kernel's interrupt (the
// reader was killed) ends it on this side.
func (f *stuckFile) Read(ctx context.Context, _ fs.FileHandle, _ []byte, _ int64) (fuse.ReadResult, syscall.Errno) {
	f.s.Blocked.Add(1)
	select {
	case <-f.s.release:
	case <-ctx.Done():
	}
	return nil, syscall.EIO
}
