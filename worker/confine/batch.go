//go:build linux

package confine

import (
	"fmt"
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

// ringPool holds a Root's idle rings, so a search page takes one rather
// than setting one up. Once io_uring turns out to be unavailable it is
// not tried again.
type ringPool struct {
	mu     sync.Mutex
	free   []*uring.Ring
	off    bool // unavailable, or the Root closed
	closed bool
}

// maxIdleRings bounds the rings a Root keeps idle.
const maxIdleRings = 4

func (p *ringPool) get() *uring.Ring {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.off {
		return nil
	}
	if n := len(p.free); n > 0 {
		ring := p.free[n-1]
		p.free = p.free[:n-1]
		return ring
	}
	ring, err := uring.New(2 * BatchSize)
	if err != nil {
		p.off = true
		return nil
	}
	return ring
}

func (p *ringPool) put(ring *uring.Ring) {
	if ring == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || len(p.free) >= maxIdleRings {
		ring.Close()
		return
	}
	p.free = append(p.free, ring)
}

// broken closes a ring that failed a submission.
func (p *ringPool) broken(ring *uring.Ring) { ring.Close() }

// close closes the idle rings; a ring in use is closed when put back.
func (p *ringPool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed, p.off = true, true
	for _, ring := range p.free {
		ring.Close()
	}
	p.free = nil
}

// A Closer closes Readers a batch at a time: Close queues a Reader, and
// each BatchSize queued are closed by one io_uring submission (one by one
// where there is no ring); End closes the rest, and any Reader given after
// is closed at once. Safe for concurrent use. A nil Closer closes each
// Reader at once.
type Closer struct {
	r     *Root
	mu    sync.Mutex
	fds   []int
	ended bool
}

// NewCloser returns an empty Closer; End it when done.
func (r *Root) NewCloser() *Closer { return &Closer{r: r} }

// Close closes f, now or with the next batch; f must not be used after.
func (c *Closer) Close(f *Reader) {
	if c == nil {
		f.Close()
		return
	}
	c.mu.Lock()
	if c.ended {
		c.mu.Unlock()
		f.Close()
		return
	}
	c.fds = append(c.fds, f.fd)
	var full []int
	if len(c.fds) >= BatchSize {
		full, c.fds = c.fds, nil
	}
	c.mu.Unlock()
	c.r.closeFDs(full)
}

// End closes every Reader queued; Close then closes at once.
func (c *Closer) End() {
	c.mu.Lock()
	fds := c.fds
	c.fds, c.ended = nil, true
	c.mu.Unlock()
	c.r.closeFDs(fds)
}

// closeFDs closes fds (at most BatchSize) in one submission.
func (r *Root) closeFDs(fds []int) {
	if len(fds) == 0 {
		return
	}
	ring := r.rings.get()
	if ring == nil {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return
	}
	ops := make([]uring.Op, len(fds))
	for i, fd := range fds {
		ops[i] = uring.Close(fd)
	}
	if ring.Run(ops) != nil {
		// Which closes ran is not known, and closing a number again
		// could close a file another goroutine has opened since: the
		// rest leak (a ring fails only on a kernel fault).
		r.rings.broken(ring)
		return
	}
	r.rings.put(ring)
}

// Stated is one name of StatNames: its Identity, or Stat's error.
type Stated struct {
	ID  Identity
	Err error
}

// statBatch holds what one StatNames batch points the kernel at.
type statBatch struct {
	ops   []uring.Op
	names [2 * BatchSize][]byte
	stx   [2 * BatchSize]unix.Statx_t
}

var statPool = sync.Pool{New: func() any { return &statBatch{ops: make([]uring.Op, 0, 2*BatchSize)} }}

// StatNames stats names (single components) of d as Stat does, one Stated
// each in out, 32 to an io_uring submission where the kernel allows; a name
// the batch cannot settle as Stat would (an interrupted or incomplete stat)
// is stat'ed by Stat, and without a ring every name is.
func (r *Root) StatNames(d *Dir, names []string, out []Stated) {
	var ring *uring.Ring
	if len(names) > 1 {
		ring = r.rings.get()
	}
	if ring == nil {
		for i, name := range names {
			out[i].ID, out[i].Err = d.Stat(name)
		}
		return
	}
	b := statPool.Get().(*statBatch)
	defer statPool.Put(b)
	for start := 0; start < len(names); start += len(b.names) {
		chunk := names[start:min(len(names), start+len(b.names))]
		if ring != nil && !b.run(d, ring, chunk, out[start:]) {
			r.rings.broken(ring)
			ring = nil
		}
		if ring == nil {
			for i, name := range chunk {
				out[start+i].ID, out[start+i].Err = d.Stat(name)
			}
		}
	}
	r.rings.put(ring)
}

// run stats names in d through ring into out; false if the ring failed.
func (b *statBatch) run(d *Dir, ring *uring.Ring, names []string, out []Stated) bool {
	dirfd, err := d.h.acquire()
	if err != nil {
		for i, name := range names {
			out[i] = Stated{Err: pathErr("stat", joinRel(d.rel, name), err)}
		}
		return true
	}
	defer d.h.release()
	b.ops = b.ops[:0]
	for i, name := range names {
		if !validName(name) {
			out[i] = Stated{Err: fmt.Errorf("stat: %w", errInvalidPath)} // as Stat says
			continue
		}
		b.names[i] = append(append(b.names[i][:0], name...), 0)
		op := uring.Statx(dirfd, &b.names[i][0], unix.AT_SYMLINK_NOFOLLOW|unix.AT_STATX_SYNC_AS_STAT, unix.STATX_BASIC_STATS, unsafe.Pointer(&b.stx[i]))
		b.ops = append(b.ops, op.Tag(i))
	}
	if ring.Run(b.ops) != nil {
		return false
	}
	for _, op := range b.ops {
		i := op.Tagged()
		res, x, name := op.Res, &b.stx[i], names[i]
		switch {
		case res == 0 && x.Mask&statxWant == statxWant:
			out[i] = Stated{ID: identityOfStatx(x)}
		case res == 0 || res == -int32(unix.EINTR) || res == -int32(unix.EAGAIN):
			out[i].ID, out[i].Err = d.Stat(name)
		default:
			out[i] = Stated{Err: pathErr("stat", joinRel(d.rel, name), mapErrno(unix.Errno(-res)))}
		}
	}
	return true
}
