//go:build linux

package fusefs

import (
	"context"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

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

	// Blocked counts the opens of stuck.txt whose first read has started:
	// a read interrupted and started again on the same open counts once.
	Blocked atomic.Int32

	// Interrupted counts the reads of stuck.txt the kernel interrupted
	// (their reader got a signal).
	Interrupted atomic.Int32

	// Gated, set before Mount, are more files of the root (name ->
	// content) whose reads wait until a read of stuck.txt has started (at
	// most 10 s): a reader of one is held until a read of stuck.txt has
	// begun elsewhere.
	Gated map[string][]byte

	release chan struct{}
	once    sync.Once
}

// NewStuck returns a Stuck file system for Mount; the reads it holds are
// let go when the test ends.
func NewStuck(t testing.TB) *Stuck {
	s := &Stuck{release: make(chan struct{})}
	t.Cleanup(s.Release)
	return s
}

// Release lets go of the reads held now and later: each fails with EIO.
func (s *Stuck) Release() { s.once.Do(func() { close(s.release) }) }

var _ = (fs.NodeOnAdder)((*Stuck)(nil))

// OnAdd adds the two files (and Gated).
func (s *Stuck) OnAdd(ctx context.Context) {
	ok := s.NewPersistentInode(ctx, &fs.MemRegularFile{Data: []byte(StuckText), Attr: fuse.Attr{Mode: 0o644}}, fs.StableAttr{})
	s.AddChild("ok.txt", ok, true)
	stuck := s.NewPersistentInode(ctx, &stuckFile{s: s}, fs.StableAttr{})
	s.AddChild("stuck.txt", stuck, true)
	for name, data := range s.Gated {
		s.AddChild(name, s.NewPersistentInode(ctx, &gatedFile{s: s, data: data}, fs.StableAttr{}), true)
	}
}

// gatedFile is a file of Gated.
type gatedFile struct {
	fs.Inode
	s    *Stuck
	data []byte
}

var (
	_ = (fs.NodeGetattrer)((*gatedFile)(nil))
	_ = (fs.NodeOpener)((*gatedFile)(nil))
	_ = (fs.NodeReader)((*gatedFile)(nil))
)

func (f *gatedFile) Getattr(_ context.Context, _ fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	out.Mode = syscall.S_IFREG | 0o644
	out.Size = uint64(len(f.data))
	return 0
}

// Open asks for direct I/O, so every read reaches Read.
func (f *gatedFile) Open(context.Context, uint32) (fs.FileHandle, uint32, syscall.Errno) {
	return nil, fuse.FOPEN_DIRECT_IO, 0
}

// Read waits for a read of stuck.txt to start (at most 10 s), then reads.
func (f *gatedFile) Read(ctx context.Context, _ fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	for deadline := time.Now().Add(10 * time.Second); f.s.Blocked.Load() == 0 && time.Now().Before(deadline); {
		select {
		case <-ctx.Done():
			return nil, syscall.EINTR
		case <-time.After(time.Millisecond):
		}
	}
	if off >= int64(len(f.data)) {
		return fuse.ReadResultData(nil), 0
	}
	return fuse.ReadResultData(f.data[off:min(int64(len(f.data)), off+int64(len(dest)))]), 0
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

// stuckOpen is one open of stuck.txt.
type stuckOpen struct {
	reading atomic.Bool // a read of it has started
}

// Open asks for direct I/O, so every read reaches Read (no page cache).
func (f *stuckFile) Open(context.Context, uint32) (fs.FileHandle, uint32, syscall.Errno) {
	return &stuckOpen{}, fuse.FOPEN_DIRECT_IO, 0
}

// Read never answers while the test runs. The kernel interrupts it when
// its reader gets a signal; the answer is then EINTR, the answer the
// kernel's FUSE protocol gives an interrupted request: a reader that was
// killed ends, and one that handles the signal and lives on (a Go program
// gets SIGURG from its own runtime, which preempts goroutines with it)
// reads again and is stuck again, as on a stalled share. An I/O error
// instead would fail the read of a reader that was only signalled.
func (f *stuckFile) Read(ctx context.Context, h fs.FileHandle, _ []byte, _ int64) (fuse.ReadResult, syscall.Errno) {
	if o, ok := h.(*stuckOpen); !ok || o.reading.CompareAndSwap(false, true) {
		f.s.Blocked.Add(1)
	}
	select {
	case <-f.s.release:
		return nil, syscall.EIO
	case <-ctx.Done():
		f.s.Interrupted.Add(1)
		return nil, syscall.EINTR
	}
}
