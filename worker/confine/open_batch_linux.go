//go:build !fsmcp_portable

package confine

import (
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/fsmcp/fsmcp/worker/uring"
)

// OpenReaders opens the regular files at rels (at most BatchSize) as
// OpenReader does, one Opened each in out, with the same checks in the
// same order: each name is opened O_PATH beneath the root refusing links,
// its descriptor stat'ed, and only a regular file reopened for reading
// through /proc/self/fd. Where io_uring is available the O_PATH opens
// share one system call and the closes of their descriptors another, so a
// file takes two calls of its own (the stat and the reopen) instead of
// four; a file the batch cannot settle as OpenReader would (any failure
// of its O_PATH open but a missing name) is opened again by OpenReader, so
// the answers and errors are OpenReader's.
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

// batch holds what one OpenReaders batch points the kernel at; it stays
// reachable (and the heap does not move) until the batch's Runs return.
type batch struct {
	ops   []uring.Op        // each tagged with its file's index
	paths [BatchSize][]byte // NUL-terminated cleaned relative paths
	clean [BatchSize]string // the same without the NUL
	pfd   [BatchSize]int
	state [BatchSize]int8
	how   unix.OpenHow
}

var batchPool = sync.Pool{New: func() any { return &batch{ops: make([]uring.Op, 0, BatchSize)} }}

// A file's state in a batch.
const (
	stRedo int8 = iota // OpenReader decides it
	stOpen             // opened O_PATH: pfd set
	stDone             // out holds its answer
)

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
	if _, err := procSelfFD(); err != nil {
		return true // OpenReader reopens by name
	}
	rootfd, err := r.h.acquire()
	if err != nil {
		return true
	}
	defer r.h.release()

	// 1: open each name O_PATH beneath the root, refusing links and mount
	// crossings (which OpenReader's walk then classifies).
	b.how = unix.OpenHow{Flags: uint64(leafFlags), Resolve: resolve | unix.RESOLVE_NO_XDEV}
	b.ops = b.ops[:0]
	for i, rel := range rels {
		clean, err := cleanRel(rel)
		if err != nil || clean == "" {
			continue // OpenReader gives the error
		}
		b.clean[i] = clean
		b.paths[i] = append(append(b.paths[i][:0], b.clean[i]...), 0)
		b.ops = append(b.ops, uring.Openat2(rootfd, &b.paths[i][0], unsafe.Pointer(&b.how), unsafe.Sizeof(b.how)).Tag(i))
	}
	if ring.Run(b.ops) != nil {
		return false // nothing opened is known: a leak at worst
	}
	for _, op := range b.ops {
		i := op.Tagged()
		switch {
		case op.Res >= 0:
			b.pfd[i], b.state[i] = int(op.Res), stOpen
		case op.Res == -int32(unix.ENOENT):
			out[i], b.state[i] = Opened{Err: pathErr("open", rels[i], ErrNotExist)}, stDone
		}
	}

	// 2: check each descriptor and reopen a regular file through
	// /proc/self/fd, one call at a time: on the kernel's io_uring worker
	// threads (where a statx or a /proc lookup would run) each batch
	// would cost two thread switches, more than the calls it saves.
	b.ops = b.ops[:0]
	var st unix.Stat_t
	var readers []Reader // the batch's, made at once
	for i := range n {
		if b.state[i] != stOpen {
			continue
		}
		fd, err := checkAndReopen(b.pfd[i], b.clean[i], &st)
		switch {
		case err == nil:
			if readers == nil {
				readers = make([]Reader, n)
			}
			f := &readers[i]
			*f = Reader{fd: fd, rel: b.clean[i], nlink: uint64(st.Nlink)} //nolint:unconvert // Nlink is not uint64 on every arch
			out[i], b.state[i] = Opened{R: f, ID: identityOf(&st)}, stDone
		case err == errNoProc:
			b.state[i] = stRedo // not seen: /proc/self/fd was opened above
		default:
			out[i], b.state[i] = Opened{Err: err}, stDone
		}
		b.ops = append(b.ops, uring.Close(b.pfd[i]))
	}

	// 3: close the O_PATH descriptors.
	if ring.Run(b.ops) != nil {
		return false // a file's answer stands; its O_PATH descriptor may leak
	}
	return true
}

// cleanRel returns rel's components joined by single slashes, as
// splitRel would give them, and rel itself when it is written so already
// (an inventory's paths are), without allocating.
func cleanRel(rel string) (string, error) {
	if isCleanRel(rel) {
		return rel, nil
	}
	parts, err := splitRel(rel)
	if err != nil {
		return "", err
	}
	return strings.Join(parts, "/"), nil
}

// isCleanRel reports whether rel is a relative path of at least one
// component, each a valid name (none empty, "." or "..", no NUL).
func isCleanRel(rel string) bool {
	for {
		c, rest, more := strings.Cut(rel, "/")
		if !validName(c) {
			return false
		}
		if !more {
			return true
		}
		rel = rest
	}
}
