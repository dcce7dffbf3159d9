//go:build !fsmcp_portable

package nbio

import (
	"errors"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// readers are the polled files Reader returned and not yet closed.
var readers struct {
	mu    sync.Mutex
	files []*rawFile
}

// yieldEvery bounds how often Yield looks at the readers.
const yieldEvery = 20 * time.Microsecond

var (
	yieldBase = time.Now()
	yieldLast atomic.Int64 // time.Since(yieldBase) of the last look
)

// Yield lets a goroutine that keeps its P busy for long stretches (a
// search scanning files ahead) hand it to a goroutine of this process
// that waits to read input that has come. The runtime's poller is asked
// only by a P with nothing else to run, so while every P scans, a request
// would wait for the scans to run out. Called between units of work, at
// most every yieldEvery it checks with poll(2) each reader waiting on the
// poller; for one with input, it wakes the reader and yields the P to it.
func Yield() {
	now := int64(time.Since(yieldBase))
	last := yieldLast.Load()
	if now-last < int64(yieldEvery) || !yieldLast.CompareAndSwap(last, now) {
		return
	}
	woke := false
	readers.mu.Lock()
	for _, r := range readers.files {
		if r.waiting.Load() && readable(r.fd) {
			// A deadline already past wakes the reader on this P; it
			// clears it and reads (see rawFile.Read).
			_ = r.f.SetReadDeadline(yieldBase)
			woke = true
		}
	}
	readers.mu.Unlock()
	if woke {
		runtime.Gosched()
	}
}

// readable reports whether fd has input (or its writer closed) now. The
// poll never waits (a zero timeout), so it is a raw system call.
func readable(fd int) bool {
	p := unix.PollFd{Fd: int32(fd), Events: unix.POLLIN}
	var now unix.Timespec
	n, _, errno := unix.RawSyscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&p)), 1, uintptr(unsafe.Pointer(&now)), 0, 0, 0)
	return errno == 0 && n == 1
}

func register(r *rawFile) {
	readers.mu.Lock()
	defer readers.mu.Unlock()
	readers.files = append(readers.files, r)
}

func unregister(r *rawFile) {
	readers.mu.Lock()
	defer readers.mu.Unlock()
	for i, o := range readers.files {
		if o == r {
			readers.files = append(readers.files[:i], readers.files[i+1:]...)
			return
		}
	}
}

// woken reports whether err is the deadline Yield set to wake a reader.
func woken(err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) }
