//go:build linux

package confine

import (
	"encoding/binary"
	"os"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// A Guard tells whether an open file was written while it was being read:
// an inotify watch for IN_MODIFY is on the file from before the first byte
// is read until Changed is asked, so a write that overlaps the read, even
// a same-length rewrite within one timestamp tick (which leaves size,
// mtime and ctime as they were on filesystems with coarse timestamps), is
// reported. A write that was in progress when the watch was added reports
// on completion, so it is seen too.
//
// inotify reports a write when it completes, so a write still in progress
// when the read ends would be reported too late. Changed therefore first
// waits for any write in progress: lseek(SEEK_DATA) takes the inode lock
// that a buffered write holds for its whole copy (ext4, xfs, btrfs, tmpfs,
// FUSE), so once it returns the write's bytes are all in place and its
// event is queued a few instructions later. A writer preempted exactly
// between the two can still slip by unseen; the reader's identity check
// after the read (a write changes ctime when it starts) is the last net.
//
// What inotify does not see is not reported: a write through a shared
// memory mapping, a change made by another machine to a network
// filesystem. Where no watch can be added (no inotify, no /proc, the
// watch limit reached) the Guard is nil and reports nothing; the reader's
// identity checks (size, inode, times) are then all there is.
type Guard struct {
	g    *guards
	fd   int // the file read, open for as long as the Guard is used
	wd   int32
	w    *guardWatch
	seen uint64
}

// guards is a Root's inotify instance for Guards, shared by all its reads.
type guards struct {
	mu  sync.Mutex
	fd  int  // the inotify instance, once on
	on  bool // fd is open
	off bool // no more Guards: closed, or inotify unavailable
	wds map[int32]*guardWatch
	buf [4096]byte
}

// guardWatch is one inode's watch, shared by the Guards reading it.
type guardWatch struct {
	refs int
	mods uint64
	lost bool // the watch went away or events were dropped
}

// GuardFile starts watching f for writes; see Guard.
func (r *Root) GuardFile(f *os.File) *Guard {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil
	}
	var gd *Guard
	if rc.Control(func(fd uintptr) { gd = r.guards.watch(int(fd)) }) != nil {
		return nil
	}
	return gd
}

// GuardReader starts watching f for writes; see Guard.
func (r *Root) GuardReader(f *Reader) *Guard { return r.guards.watch(f.fd) }

func (g *guards) watch(fd int) *Guard {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.off {
		return nil
	}
	if !g.on {
		ifd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
		if err != nil {
			g.off = true
			return nil
		}
		g.fd, g.on, g.wds = ifd, true, map[int32]*guardWatch{}
	}
	// Events queued before this watch belong to earlier reads.
	g.drain()
	wd, err := unix.InotifyAddWatch(g.fd, "/proc/self/fd/"+strconv.Itoa(fd), unix.IN_MODIFY)
	if err != nil {
		return nil
	}
	w := g.wds[int32(wd)]
	if w == nil || w.lost {
		w = &guardWatch{}
		g.wds[int32(wd)] = w
	}
	w.refs++
	return &Guard{g: g, fd: fd, wd: int32(wd), w: w, seen: w.mods}
}

// Changed reports whether the file was written since the Guard was set
// (or whether that can no longer be told). A nil Guard reports false.
func (gd *Guard) Changed() bool {
	if gd == nil {
		return false
	}
	// Wait for a write in progress (see Guard); the answer does not
	// matter, nor does the file offset (reads use pread).
	unix.Seek(gd.fd, 0, unix.SEEK_DATA)
	g := gd.g
	g.mu.Lock()
	defer g.mu.Unlock()
	g.drain()
	return gd.w.lost || gd.w.mods != gd.seen
}

// Close removes the Guard's watch once no other read shares it.
func (gd *Guard) Close() {
	if gd == nil {
		return
	}
	g := gd.g
	g.mu.Lock()
	defer g.mu.Unlock()
	gd.w.refs--
	if gd.w.refs > 0 || !g.on {
		return
	}
	if g.wds[gd.wd] == gd.w {
		delete(g.wds, gd.wd)
		if !gd.w.lost {
			unix.InotifyRmWatch(g.fd, uint32(gd.wd))
		}
	}
}

// drain reads every queued event, counting modifications per watch.
// g.mu is held.
func (g *guards) drain() {
	for {
		n, err := unix.Read(g.fd, g.buf[:])
		if err == unix.EINTR {
			continue
		}
		if err != nil || n <= 0 {
			return // EAGAIN: nothing queued
		}
		b := g.buf[:n]
		for len(b) >= unix.SizeofInotifyEvent {
			wd := int32(binary.NativeEndian.Uint32(b[0:]))
			mask := binary.NativeEndian.Uint32(b[4:])
			size := unix.SizeofInotifyEvent + int(binary.NativeEndian.Uint32(b[12:]))
			if size > len(b) {
				break
			}
			b = b[size:]
			if mask&unix.IN_Q_OVERFLOW != 0 {
				for _, w := range g.wds {
					w.lost = true
				}
				continue
			}
			w := g.wds[wd]
			if w == nil {
				continue
			}
			if mask&unix.IN_IGNORED != 0 {
				w.lost = true
			}
			if mask&unix.IN_MODIFY != 0 {
				w.mods++
			}
		}
	}
}

func (g *guards) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.on {
		unix.Close(g.fd)
		g.on = false
	}
	g.off = true
}
