// Package uring submits batches of file system calls to the kernel through
// one io_uring: a batch of opens, stats or closes costs one system call
// instead of one a file. On a machine where entering the kernel is dear (a
// virtual machine that traps every system call) that is most of what
// opening many small files costs.
//
// A Ring is used by one goroutine at a time. Run fills the submission queue
// with a batch of Ops, enters the kernel once to submit them and wait for
// all of their completions, and stores each one's result in its Res. The
// memory an Op points to (a path, an open_how, a statx buffer) must stay
// reachable until Run returns; the Go heap does not move, so holding it in
// the caller's batch is enough.
//
// Where the kernel has no io_uring, or a seccomp policy refuses it (the
// default in Docker), New fails and the caller makes the calls one by one.
package uring

import (
	"errors"
	"unsafe"
)

// ErrUnavailable is New's error where io_uring cannot be used.
var ErrUnavailable = errors.New("io_uring is not available")

// Opcodes of the operations this package prepares (enum io_uring_op).
const (
	opClose   = 19
	opStatx   = 21
	opOpenat2 = 28
)

// An Op is one operation of a batch. Res is its result once Run returns:
// a descriptor or byte count, or -errno.
type Op struct {
	sqe sqe
	tag int
	Res int32
}

// Tag returns op carrying t, for the caller to tell its Ops apart.
func (op Op) Tag(t int) Op {
	op.tag = t
	return op
}

// Tagged is the t of Tag (0 if none).
func (op Op) Tagged() int { return op.tag }

// sqe is struct io_uring_sqe (64 bytes).
type sqe struct {
	opcode   uint8
	flags    uint8
	ioprio   uint16
	fd       int32
	off      uint64 // also addr2
	addr     uint64
	len      uint32
	opFlags  uint32 // open_flags, statx_flags, rw_flags, ...
	userData uint64
	bufIndex uint16
	person   uint16
	fileIdx  uint32
	addr3    uint64
	_        uint64
}

// cqe is struct io_uring_cqe (16 bytes).
type cqe struct {
	userData uint64
	res      int32
	flags    uint32
}

// Openat2 opens path (NUL-terminated) relative to dirfd as openat2(2) with
// how, a struct open_how of size bytes.
func Openat2(dirfd int, path *byte, how unsafe.Pointer, size uintptr) Op {
	return Op{sqe: sqe{opcode: opOpenat2, fd: int32(dirfd), addr: addr(unsafe.Pointer(path)), len: uint32(size), off: addr(how)}}
}

// Close closes fd.
func Close(fd int) Op { return Op{sqe: sqe{opcode: opClose, fd: int32(fd)}} }

func addr(p unsafe.Pointer) uint64 { return uint64(uintptr(p)) }
