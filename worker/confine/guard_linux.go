//go:build !fsmcp_portable

package confine

import (
	"encoding/binary"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fsmcp/fsmcp/worker/watch"
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
// that a buffered write holds for its whole copy (ext4, btrfs, tmpfs,
// FUSE), so once it returns the write's bytes are all in place and its
// event is queued a few instructions later. (xfs's seek takes another
// lock, but there each buffered read takes the inode lock itself, so a
// read and a write never overlap.) A writer preempted exactly
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
	name string // the file's name in w's directory; "" when w is the file's
	seen uint64
	own  bool // Close gives w back (a ScanGuard's directory watches are its own)
	// settled: Settle has waited out writes in progress; drains is
	// guards.drains then.
	settled bool
	drains  uint64
}

// guards is a Root's inotify instance for Guards, shared by all its reads.
type guards struct {
	mu  sync.Mutex
	fd  int  // the inotify instance, once on
	on  bool // fd is open
	off bool // no more Guards: closed, or inotify unavailable
	wds map[int32]*guardWatch
	// idle holds the watches no read uses any more, oldest first, each one
	// taken from budget as a spare: reading the same file (or, for a
	// search, a file in the same directory) again then re-adds a watch the
	// kernel still has, which answers the same descriptor, instead of
	// creating one and removing it after every read. Without a budget
	// (KeepIdleWatches not called) nothing is kept.
	idle    []int32
	budget  *watch.Budget
	idleFor time.Duration // the idle list is emptied this long after its last use
	used    time.Time
	timer   *time.Timer // runs while the idle list is not empty
	// drains counts the drains begun: one begun after a Guard settled
	// has read every event of writes it waited out.
	drains atomic.Uint64
	buf    [4096]byte
}

// keepIdle is the most unused watches a Root keeps. Each is one of the
// user's inotify watches, and one of the budget's; a kept watch's events are
// read at the next drain and count nothing (identical consecutive events are
// merged by the kernel, so a file written continuously queues one).
const keepIdle = 16

// KeepIdleWatches lets r keep up to 16 watches no read uses any more, taken
// as spares from b (so they never stand in the way of b's other holders,
// which take them back when short) and all given back once none has been
// used for idle. Call it before r is shared.
func (r *Root) KeepIdleWatches(b *watch.Budget, idle time.Duration) {
	g := &r.guards
	g.mu.Lock()
	defer g.mu.Unlock()
	g.budget, g.idleFor = b, idle
	b.OnShort(g.shed)
}

// guardWatch is one inode's watch, shared by the Guards reading it.
type guardWatch struct {
	refs  int
	mods  uint64            // the watched object's own modifications
	names map[string]uint64 // a directory's: modifications per entry name
	lost  bool              // the watch went away or events were dropped
}

// GuardReader starts watching f for writes; see Guard.
func (r *Root) GuardReader(f *Reader) *Guard { return r.guards.watch(f.fd) }

func (g *guards) watch(fd int) *Guard {
	g.mu.Lock()
	defer g.mu.Unlock()
	wd, w := g.add(fd)
	if w == nil {
		return nil
	}
	return &Guard{g: g, fd: fd, wd: wd, w: w, seen: w.mods, own: true}
}

// add adds (or shares) a watch on the file or directory open as fd, after
// reading the events queued before it (they belong to earlier reads).
// g.mu is held; a nil watch means none could be added.
func (g *guards) add(fd int) (int32, *guardWatch) {
	if g.off {
		return 0, nil
	}
	if !g.on {
		ifd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
		if err != nil {
			g.off = true
			return 0, nil
		}
		g.fd, g.on, g.wds = ifd, true, map[int32]*guardWatch{}
	}
	g.drain()
	wd, err := unix.InotifyAddWatch(g.fd, "/proc/self/fd/"+strconv.Itoa(fd), unix.IN_MODIFY)
	if err != nil {
		return 0, nil
	}
	w := g.wds[int32(wd)]
	if w != nil && w.refs == 0 {
		g.unidle(int32(wd)) // kept idle: in use again
	}
	if w == nil || w.lost {
		w = &guardWatch{names: map[string]uint64{}}
		g.wds[int32(wd)] = w
	}
	w.refs++
	return int32(wd), w
}

// release gives back one reference to the watch wd. A watch no read uses
// any more goes on the idle list if the budget has a spare watch for it
// (the oldest idle one makes room past keepIdle), else it is removed.
// g.mu is held.
func (g *guards) release(wd int32, w *guardWatch) {
	w.refs--
	if w.refs > 0 || !g.on || g.wds[wd] != w {
		return
	}
	if !w.lost && g.budget != nil {
		if len(g.idle) >= keepIdle {
			g.remove(g.idle[0])
		}
		if g.budget.TakeSpare() {
			g.idle = append(g.idle, wd)
			g.used = time.Now()
			if g.timer == nil {
				g.timer = time.AfterFunc(g.idleFor, g.expire)
			}
			return
		}
	}
	delete(g.wds, wd)
	// A lost watch may still be the kernel's (after a queue overflow);
	// one already gone makes this fail harmlessly.
	unix.InotifyRmWatch(g.fd, uint32(wd))
}

// unidle takes wd off the idle list and gives its spare back. g.mu is held.
func (g *guards) unidle(wd int32) {
	for i, v := range g.idle {
		if v == wd {
			g.idle = append(g.idle[:i], g.idle[i+1:]...)
			g.budget.Give(1)
			return
		}
	}
}

// remove drops the idle watch wd. g.mu is held.
func (g *guards) remove(wd int32) {
	g.unidle(wd)
	if w := g.wds[wd]; w != nil && w.refs == 0 {
		delete(g.wds, wd)
		unix.InotifyRmWatch(g.fd, uint32(wd)) // fails harmlessly if the kernel dropped it
	}
}

// removeIdle drops every idle watch. g.mu is held.
func (g *guards) removeIdle() {
	for len(g.idle) > 0 {
		g.remove(g.idle[0])
	}
	if g.timer != nil {
		g.timer.Stop()
		g.timer = nil
	}
}

// shed gives the idle watches back: the budget is short of watches.
func (g *guards) shed() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.removeIdle()
}

// expire drops the idle watches once none has been used for idleFor, or
// waits again for the rest of that time.
func (g *guards) expire() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.timer == nil {
		return // emptied meanwhile
	}
	if left := g.idleFor - time.Since(g.used); left > 0 {
		g.timer.Reset(left)
		return
	}
	g.removeIdle()
}

func (gd *Guard) count() uint64 {
	if gd.name == "" {
		return gd.w.mods
	}
	return gd.w.names[gd.name]
}

// Changed reports whether the file was written since the Guard was set
// (or whether that can no longer be told). A nil Guard reports false.
// It is Settle, then Check.
func (gd *Guard) Changed() bool {
	gd.Settle()
	return gd.Check()
}

// Settle waits for a write to the file in progress to end (see Guard);
// call it once the read is done. Check then tells whether one overlapped
// the read.
func (gd *Guard) Settle() {
	if gd == nil {
		return
	}
	// The answer does not matter, nor does the file offset (reads use
	// pread). Past any end of file, ext4, btrfs and tmpfs answer ENXIO
	// as soon as they hold the lock, without looking up the file's
	// extents as a seek from 0 does (TestSearchWaitsOutWriteInProgress
	// checks that the seek still waits).
	unix.Seek(gd.fd, math.MaxInt64, unix.SEEK_DATA)
	gd.drains, gd.settled = gd.g.drains.Load(), true
}

// Check reports whether the file was written between the Guard's setting
// and its Settle (or later: a write after it may count too), reading the
// queued events only if no drain has begun since Settle: the Guards of a
// search page, checked in file order, then share one read of the queue.
func (gd *Guard) Check() bool {
	if gd == nil {
		return false
	}
	if !gd.settled {
		gd.Settle()
	}
	g := gd.g
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.drains.Load() == gd.drains {
		g.drain()
	}
	return gd.w.lost || gd.count() != gd.seen
}

// Shared reports whether the Guard's watch is a directory's its ScanGuard
// holds for the page (Close then gives nothing back): its Check may wait
// until the page takes the file's outcome.
func (gd *Guard) Shared() bool { return gd != nil && !gd.own }

// Close removes the Guard's watch once no other read shares it.
func (gd *Guard) Close() {
	if gd == nil {
		return
	}
	if !gd.own {
		return
	}
	g := gd.g
	g.mu.Lock()
	defer g.mu.Unlock()
	g.release(gd.wd, gd.w)
}

// drain reads every queued event, counting modifications per watch.
// g.mu is held.
func (g *guards) drain() {
	g.drains.Add(1)
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
			name := b[unix.SizeofInotifyEvent:size]
			b = b[size:]
			if mask&unix.IN_Q_OVERFLOW != 0 {
				for _, w := range g.wds {
					w.lost = true
				}
				g.removeIdle()
				continue
			}
			w := g.wds[wd]
			if w == nil {
				continue
			}
			if mask&unix.IN_IGNORED != 0 {
				w.lost = true
				if w.refs == 0 {
					g.remove(wd) // the kernel dropped an idle watch
				}
			}
			if mask&unix.IN_MODIFY != 0 && w.refs > 0 { // an idle watch counts nothing
				if i := indexZero(name); i >= 0 {
					name = name[:i]
				}
				if len(name) == 0 {
					w.mods++
				} else {
					w.names[string(name)]++
				}
			}
		}
	}
}

func (g *guards) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.on {
		g.removeIdle()
		unix.Close(g.fd)
		g.on = false
	}
	g.off = true
}

// A ScanGuard guards the reads of one search page, file after file: a
// Guard per file as GuardReader gives, but one watch per directory serves
// all the files read in it (a directory's watch reports writes to its
// entries by name), so a page pays two inotify calls a directory rather
// than a file. A file with more than one link can be written through a
// name elsewhere, which its directory's watch would not report: it gets a
// watch of its own.
type ScanGuard struct {
	r    *Root
	dirs map[string]*dirWatch
	// slab holds the Guards given out next, made a batch at a time.
	slab []Guard
}

type dirWatch struct {
	wd int32
	w  *guardWatch // nil: no watch could be added
}

// NewScanGuard returns an empty ScanGuard; Close it when the page ends.
func (r *Root) NewScanGuard() *ScanGuard { return &ScanGuard{r: r, dirs: map[string]*dirWatch{}} }

// Guard starts watching f, opened by OpenReader as rel, for writes. Close
// the Guard when the file is done.
func (s *ScanGuard) Guard(f *Reader, rel string) *Guard {
	if f.nlink != 1 {
		return s.r.GuardReader(f)
	}
	dir, name := "", rel
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		dir, name = rel[:i], rel[i+1:]
	}
	dw := s.dirs[dir]
	if dw == nil {
		dw = &dirWatch{}
		s.dirs[dir] = dw
		if d, err := s.r.OpenDir(dir); err == nil {
			if fd, err := d.h.acquire(); err == nil {
				s.r.guards.mu.Lock()
				dw.wd, dw.w = s.r.guards.add(fd)
				s.r.guards.mu.Unlock()
				d.h.release()
			}
			d.Close()
		}
	}
	if dw.w == nil {
		return s.r.GuardReader(f)
	}
	if len(s.slab) == 0 {
		s.slab = make([]Guard, guardSlab)
	}
	gd := &s.slab[0]
	s.slab = s.slab[1:]
	// Not drained first: a write to this file queued just before counts
	// as one during the read, a refusal to spare a syscall a file.
	g := &s.r.guards
	g.mu.Lock()
	defer g.mu.Unlock()
	*gd = Guard{g: g, fd: f.fd, wd: dw.wd, w: dw.w, name: name, seen: dw.w.names[name]}
	return gd
}

// guardSlab is how many Guards a ScanGuard makes at once: one allocation
// for a batch of files rather than one a file.
const guardSlab = 64

// Close gives back the page's directory watches.
func (s *ScanGuard) Close() {
	g := &s.r.guards
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, dw := range s.dirs {
		if dw.w != nil {
			g.release(dw.wd, dw.w)
		}
	}
	s.dirs = nil
}

// unstampedWrites is false in the Linux backend: its inotify guard sees
// every write, whatever the file's timestamps, so no read is made twice.
func unstampedWrites(*unix.Stat_t, time.Time) bool { return false }
