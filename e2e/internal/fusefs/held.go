//go:build linux

package fusefs

import (
	"bytes"
	"context"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// HeldSize is the size of held.bin.
const HeldSize = 4096

// Held is a file system of one file, held.bin (HeldSize bytes of 'h'),
// whose reads wait until Release. Its reads go through the page cache, so
// a process that maps the file into memory and hands the mapping to
// write(2) as the source of a write holds that write in the middle of its
// copy, with the destination's inode lock taken, until Release: a write
// in progress for as long as a test needs.
type Held struct {
	fs.Inode

	// Reading counts the reads of held.bin that have begun.
	Reading atomic.Int32

	release chan struct{}
	once    sync.Once
}

// NewHeld returns a Held file system for Mount; its reads are let go by
// Release, or when the test ends.
func NewHeld(t testing.TB) *Held {
	h := &Held{release: make(chan struct{})}
	t.Cleanup(h.Release)
	return h
}

// Release lets the reads of held.bin answer, now and from now on.
func (h *Held) Release() { h.once.Do(func() { close(h.release) }) }

var _ = (fs.NodeOnAdder)((*Held)(nil))

// OnAdd adds held.bin.
func (h *Held) OnAdd(ctx context.Context) {
	h.AddChild("held.bin", h.NewPersistentInode(ctx, &heldFile{h: h}, fs.StableAttr{}), true)
}

// heldFile is held.bin.
type heldFile struct {
	fs.Inode
	h *Held
}

var (
	_ = (fs.NodeGetattrer)((*heldFile)(nil))
	_ = (fs.NodeOpener)((*heldFile)(nil))
	_ = (fs.NodeReader)((*heldFile)(nil))
)

func (f *heldFile) Getattr(_ context.Context, _ fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	out.Mode = syscall.S_IFREG | 0o644
	out.Size = HeldSize
	return 0
}

// Open keeps the page cache (no direct I/O), so the file can be mapped.
func (f *heldFile) Open(context.Context, uint32) (fs.FileHandle, uint32, syscall.Errno) {
	return nil, 0, 0
}

// Read waits for Release (or for the kernel to interrupt it), then reads.
func (f *heldFile) Read(ctx context.Context, _ fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	f.h.Reading.Add(1)
	select {
	case <-f.h.release:
	case <-ctx.Done():
		return nil, syscall.EINTR
	}
	if off >= HeldSize {
		return fuse.ReadResultData(nil), 0
	}
	return fuse.ReadResultData(bytes.Repeat([]byte{'h'}, int(min(HeldSize-off, int64(len(dest)))))), 0
}
