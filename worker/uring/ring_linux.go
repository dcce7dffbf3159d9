//go:build !fsmcp_portable

package uring

import (
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// params is struct io_uring_params.
type params struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFD uint32
	resv                                                                   [3]uint32
	sqOff                                                                  sqringOffsets
	cqOff                                                                  cqringOffsets
}

type sqringOffsets struct {
	head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
	userAddr                                                        uint64
}

type cqringOffsets struct {
	head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
	userAddr                                                        uint64
}

const (
	offSQRing = 0
	offCQRing = 0x8000000
	offSQEs   = 0x10000000

	featSingleMmap = 1 << 0
	enterGetEvents = 1 << 0
)

// A Ring is one io_uring: its submission and completion queues mapped into
// the process. It is not safe for concurrent use.
type Ring struct {
	fd      int
	entries uint32
	sqRing  []byte
	cqRing  []byte // the same mapping as sqRing with featSingleMmap
	sqeMem  []byte

	sqHead, sqTail *uint32
	sqMask         uint32
	sqArray        unsafe.Pointer
	sqes           unsafe.Pointer
	cqHead, cqTail *uint32
	cqMask         uint32
	cqes           unsafe.Pointer
	// broken: a submission failed part way, so the queues no longer
	// match what Run expects; the ring refuses further batches.
	broken bool
}

// New sets up a ring whose batches hold up to entries operations (a power
// of two the kernel may round up). It fails with ErrUnavailable (wrapped)
// where io_uring cannot be set up.
func New(entries uint32) (*Ring, error) {
	var p params
	fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, uintptr(entries), uintptr(unsafe.Pointer(&p)), 0)
	if errno != 0 {
		return nil, fmt.Errorf("%w: io_uring_setup: %v", ErrUnavailable, errno)
	}
	r := &Ring{fd: int(fd), entries: p.sqEntries}
	if err := r.mmap(&p); err != nil {
		r.Close()
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	return r, nil
}

func (r *Ring) mmap(p *params) error {
	sqSize := int(p.sqOff.array + p.sqEntries*4)
	cqSize := int(p.cqOff.cqes + p.cqEntries*uint32(unsafe.Sizeof(cqe{})))
	if p.features&featSingleMmap != 0 {
		sqSize = max(sqSize, cqSize)
	}
	var err error
	if r.sqRing, err = unix.Mmap(r.fd, offSQRing, sqSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE); err != nil {
		return fmt.Errorf("mmap sq ring: %w", err)
	}
	r.cqRing = r.sqRing
	if p.features&featSingleMmap == 0 {
		if r.cqRing, err = unix.Mmap(r.fd, offCQRing, cqSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE); err != nil {
			r.cqRing = nil
			return fmt.Errorf("mmap cq ring: %w", err)
		}
	}
	if r.sqeMem, err = unix.Mmap(r.fd, offSQEs, int(p.sqEntries)*int(unsafe.Sizeof(sqe{})), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE); err != nil {
		return fmt.Errorf("mmap sqes: %w", err)
	}
	sq, cq := unsafe.Pointer(&r.sqRing[0]), unsafe.Pointer(&r.cqRing[0])
	r.sqHead = (*uint32)(unsafe.Add(sq, p.sqOff.head))
	r.sqTail = (*uint32)(unsafe.Add(sq, p.sqOff.tail))
	r.sqMask = *(*uint32)(unsafe.Add(sq, p.sqOff.ringMask))
	r.sqArray = unsafe.Add(sq, p.sqOff.array)
	r.sqes = unsafe.Pointer(&r.sqeMem[0])
	r.cqHead = (*uint32)(unsafe.Add(cq, p.cqOff.head))
	r.cqTail = (*uint32)(unsafe.Add(cq, p.cqOff.tail))
	r.cqMask = *(*uint32)(unsafe.Add(cq, p.cqOff.ringMask))
	r.cqes = unsafe.Add(cq, p.cqOff.cqes)
	return nil
}

// Close unmaps the ring and closes it.
func (r *Ring) Close() error {
	if r.sqeMem != nil {
		unix.Munmap(r.sqeMem)
	}
	if r.cqRing != nil && unsafe.SliceData(r.cqRing) != unsafe.SliceData(r.sqRing) {
		unix.Munmap(r.cqRing)
	}
	if r.sqRing != nil {
		unix.Munmap(r.sqRing)
	}
	r.sqeMem, r.cqRing, r.sqRing = nil, nil, nil
	return unix.Close(r.fd)
}

var errBroken = errors.New("uring: the ring failed a submission and takes no more")

// Run submits ops, waits until every one has completed and stores each
// result in its Res. It fails only if the kernel refuses the submission
// itself; an operation's own failure is its Res.
func (r *Ring) Run(ops []Op) error {
	if len(ops) > int(r.entries) {
		return fmt.Errorf("uring: %d operations for a ring of %d", len(ops), r.entries)
	}
	if r.broken {
		return errBroken
	}
	if len(ops) == 0 {
		return nil
	}
	tail := *r.sqTail
	for i := range ops {
		idx := tail & r.sqMask
		s := (*sqe)(unsafe.Add(r.sqes, uintptr(idx)*unsafe.Sizeof(sqe{})))
		*s = ops[i].sqe
		s.userData = uint64(i)
		*(*uint32)(unsafe.Add(r.sqArray, uintptr(idx)*4)) = idx
		tail++
	}
	atomic.StoreUint32(r.sqTail, tail)
	submit, done := uint32(len(ops)), 0
	for done < len(ops) {
		n, _, errno := unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), uintptr(submit), uintptr(len(ops)-done), enterGetEvents, 0, 0)
		switch errno {
		case 0:
			submit -= uint32(n)
		case unix.EINTR, unix.EAGAIN, unix.EBUSY:
			// A signal (the runtime's preemption, say) or a full
			// completion queue: reap what is there and enter again.
		default:
			// EFAULT, EINVAL, ENOMEM, ...: what was queued and not
			// taken stays in the queue, and what was taken completes
			// later; neither fits a later batch.
			r.broken = true
			return fmt.Errorf("uring: io_uring_enter: %w", errno)
		}
		done += r.reap(ops)
	}
	runtime.KeepAlive(ops)
	return nil
}

// reap moves the completions queued so far into ops and returns how many.
func (r *Ring) reap(ops []Op) int {
	head := *r.cqHead
	tail := atomic.LoadUint32(r.cqTail)
	n := 0
	for ; head != tail; head++ {
		c := (*cqe)(unsafe.Add(r.cqes, uintptr(head&r.cqMask)*unsafe.Sizeof(cqe{})))
		if c.userData < uint64(len(ops)) {
			ops[c.userData].Res = c.res
		}
		n++
	}
	atomic.StoreUint32(r.cqHead, head)
	return n
}
