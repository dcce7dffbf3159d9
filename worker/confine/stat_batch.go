//go:build linux

package confine

import (
	"fmt"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/fsmcp/fsmcp/worker/uring"
)

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
		statEach(d, names, out)
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
			statEach(d, chunk, out[start:])
		}
	}
	r.rings.put(ring)
}

// statEach stats each of names in d with Stat.
func statEach(d *Dir, names []string, out []Stated) {
	for i, name := range names {
		out[i].ID, out[i].Err = d.Stat(name)
	}
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

// statxWant is what a stat must have filled for an Identity.
const statxWant = unix.STATX_TYPE | unix.STATX_MODE | unix.STATX_NLINK | unix.STATX_INO | unix.STATX_SIZE | unix.STATX_MTIME | unix.STATX_CTIME

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
