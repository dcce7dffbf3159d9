//go:build linux

package confine

import (
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/fsmcp/fsmcp/worker/uring"
)

// Opened is one file of OpenReaders: the Reader and its Identity, or the
// error OpenReader would have given.
type Opened struct {
	R   *Reader
	ID  Identity
	Err error
}

// BatchSize is the most files one OpenReaders call opens in one batch.
const BatchSize = 16

// OpenReaders opens the regular files at rels (at most BatchSize) as
// OpenReader does, one Opened each in out, with the same checks in the
// same order: each name is opened O_PATH beneath the root refusing links,
// its descriptor stat'ed, and only a regular file reopened for reading
// through /proc/self/fd. Where io_uring is available the files' opens
// share three system calls (opens, stats, reopens and closes) instead of
// taking four each; a file the batch cannot settle as OpenReader would
// (any failure but a missing name) is opened again by OpenReader, so the
// answers and errors are OpenReader's.
//
// A batch returns when all its files' opens have: a file whose open never
// returns (a network filesystem gone) holds up the batch's other files.
func (r *Root) OpenReaders(rels []string, out []Opened) {
	ring := r.rings.get()
	if ring == nil || r.mode != caseExact || !r.UsesOpenat2() || len(rels) > BatchSize {
		r.openEach(rels, out)
		r.rings.put(ring)
		return
	}
	b := batchPool.Get().(*batch)
	if !b.run(r, ring, rels, out) {
		r.rings.broken(ring)
		ring = nil
	}
	batchPool.Put(b)
	r.rings.put(ring)
}

// openEach opens each file of rels with OpenReader.
func (r *Root) openEach(rels []string, out []Opened) {
	for i, rel := range rels {
		f, id, err := r.OpenReader(rel)
		out[i] = Opened{R: f, ID: id, Err: err}
	}
}

// batch holds what one OpenReaders batch points the kernel at; it stays
// reachable (and the heap does not move) until the batch's Runs return.
type batch struct {
	ops   []uring.Op
	of    []int             // ops[k] is file of[k]'s
	paths [BatchSize][]byte // NUL-terminated cleaned relative paths
	nums  [BatchSize][]byte // NUL-terminated O_PATH descriptor numbers
	stx   [BatchSize]unix.Statx_t
	pfd   [BatchSize]int
	state [BatchSize]int8
	how   unix.OpenHow
	empty [1]byte
}

var batchPool = sync.Pool{New: func() any {
	return &batch{ops: make([]uring.Op, 0, 2*BatchSize), of: make([]int, 0, 2*BatchSize)}
}}

// A file's state in a batch.
const (
	stRedo int8 = iota // OpenReader decides it
	stOpen             // opened O_PATH: pfd set
	stDone             // out holds its answer
)

// statxWant is what a stat must have filled for an Identity.
const statxWant = unix.STATX_TYPE | unix.STATX_MODE | unix.STATX_NLINK | unix.STATX_INO | unix.STATX_SIZE | unix.STATX_MTIME | unix.STATX_CTIME

// add queues op for file i.
func (b *batch) add(i int, op uring.Op) {
	b.ops = append(b.ops, op)
	b.of = append(b.of, i)
}

// reset empties the queue.
func (b *batch) reset() { b.ops, b.of = b.ops[:0], b.of[:0] }

// run opens rels through ring into out; false if the ring failed (the
// files it did not settle are then opened one by one).
func (b *batch) run(r *Root, ring *uring.Ring, rels []string, out []Opened) bool {
	n := len(rels)
	clear(b.state[:n])
	defer func() {
		for i := range n {
			if b.state[i] != stDone {
				f, id, err := r.OpenReader(rels[i])
				out[i] = Opened{R: f, ID: id, Err: err}
			}
		}
	}()
	procfd, err := procSelfFD()
	if err != nil {
		return true
	}
	rootfd, err := r.h.acquire()
	if err != nil {
		return true
	}
	defer r.h.release()

	// 1: open each name O_PATH beneath the root, refusing links and mount
	// crossings (which OpenReader's walk then classifies).
	b.how = unix.OpenHow{Flags: uint64(leafFlags), Resolve: resolve | unix.RESOLVE_NO_XDEV}
	b.reset()
	for i, rel := range rels {
		parts, err := splitRel(rel)
		if err != nil || len(parts) == 0 {
			continue // OpenReader gives the error
		}
		b.paths[i] = append(append(b.paths[i][:0], strings.Join(parts, "/")...), 0)
		b.add(i, uring.Openat2(rootfd, &b.paths[i][0], unsafe.Pointer(&b.how), unsafe.Sizeof(b.how)))
	}
	if ring.Run(b.ops) != nil {
		return false // nothing opened is known: a leak at worst
	}
	for k, op := range b.ops {
		i := b.of[k]
		switch {
		case op.Res >= 0:
			b.pfd[i], b.state[i] = int(op.Res), stOpen
		case op.Res == -int32(unix.ENOENT):
			out[i], b.state[i] = Opened{Err: pathErr("open", rels[i], ErrNotExist)}, stDone
		}
	}

	// 2: stat each descriptor.
	b.reset()
	for i := range n {
		if b.state[i] == stOpen {
			b.add(i, uring.Statx(b.pfd[i], &b.empty[0], unix.AT_EMPTY_PATH|unix.AT_STATX_SYNC_AS_STAT, unix.STATX_BASIC_STATS, unsafe.Pointer(&b.stx[i])))
		}
	}
	if ring.Run(b.ops) != nil {
		for i := range n {
			if b.state[i] == stOpen {
				unix.Close(b.pfd[i])
				b.state[i] = stRedo
			}
		}
		return false
	}
	statOK := [BatchSize]bool{}
	for k, op := range b.ops {
		statOK[b.of[k]] = op.Res == 0 && b.stx[b.of[k]].Mask&statxWant == statxWant
	}

	// 3: reopen each regular file through /proc/self/fd, and close every
	// O_PATH descriptor once its reopen is done.
	b.reset()
	for i := range n {
		if b.state[i] != stOpen {
			continue
		}
		switch kind := modeKind(uint32(b.stx[i].Mode)); {
		case !statOK[i]:
			b.state[i] = stRedo // OpenReader's fstat decides
		case kind == KindSymlink: // O_PATH|O_NOFOLLOW opened the link itself
			out[i], b.state[i] = Opened{Err: pathErr("open", b.clean(i), ErrSymlink)}, stDone
		case kind != KindFile:
			out[i], b.state[i] = Opened{Err: pathErr("open", b.clean(i), ErrNotRegular)}, stDone
		default:
			b.nums[i] = append(strconv.AppendInt(b.nums[i][:0], int64(b.pfd[i]), 10), 0)
			b.add(i, uring.Openat(procfd, &b.nums[i][0], fileFlags&^unix.O_NOFOLLOW).ThenNext())
		}
		b.add(-1, uring.Close(b.pfd[i]))
	}
	if ring.Run(b.ops) != nil {
		for i := range n {
			if b.state[i] == stOpen {
				b.state[i] = stRedo // its descriptors may leak
			}
		}
		return false
	}
	for k, op := range b.ops {
		i := b.of[k]
		if i < 0 || b.state[i] != stOpen {
			continue // a close, or a file settled above
		}
		switch res := op.Res; {
		case res >= 0:
			x := &b.stx[i]
			out[i] = Opened{R: &Reader{fd: int(res), rel: b.clean(i), nlink: uint64(x.Nlink)}, ID: identityOfStatx(x)}
			b.state[i] = stDone
		case res == -int32(unix.EINTR) || res == -int32(unix.EAGAIN):
			b.state[i] = stRedo
		default:
			out[i], b.state[i] = Opened{Err: pathErr("open", b.clean(i), mapErrno(unix.Errno(-res)))}, stDone
		}
	}
	return true
}

// clean is file i's cleaned path.
func (b *batch) clean(i int) string { return string(b.paths[i][:len(b.paths[i])-1]) }

// identityOfStatx is identityOf for a statx result.
func identityOfStatx(x *unix.Statx_t) Identity {
	return Identity{
		Dev:     unix.Mkdev(x.Dev_major, x.Dev_minor),
		Ino:     x.Ino,
		Size:    int64(x.Size),
		Mode:    uint32(x.Mode),
		MtimeNs: x.Mtime.Sec*1e9 + int64(x.Mtime.Nsec),
		CtimeNs: x.Ctime.Sec*1e9 + int64(x.Ctime.Nsec),
		Nlink:   uint64(x.Nlink),
	}
}
