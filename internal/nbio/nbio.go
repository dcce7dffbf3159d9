// Package nbio reads and writes non-blocking descriptors without telling
// the Go scheduler that the thread entered a system call.
//
// On some virtual machines a system call that wakes another thread (a
// write to a pipe or socket whose reader waits) takes longer than the
// scheduler's 20 µs threshold, and the bookkeeping around each one wakes
// the system monitor thread when the process was idle. The monitor then
// takes the calling thread's P away and, with GOMAXPROCS=1 (as fsmcp's
// processes run), starts another thread to poll the network, while the
// caller, back from the kernel, waits for a P again: thread wake-ups that
// cost more than relaying the line. A read or write on a non-blocking
// descriptor never waits in the kernel (it returns EAGAIN instead), so it
// can be made as a raw system call that keeps the P throughout; only an
// empty or full pipe waits, through the runtime's poller.
//
// The poller is asked for ready descriptors only by a P with nothing else
// to run, so a goroutine that keeps every P busy (a search scanning files
// ahead) would leave a request unread until it stops; it calls Yield
// between units of work to hand the P to a reader whose input has come.
package nbio

import (
	"io"
	"os"
)

// Writer returns a writer (and closer) of f that makes raw system calls when f is a
// non-blocking descriptor the runtime polls (a socket, or a pipe reopened
// non-blocking) or a socket it does not poll (see sockWriter), and f
// itself otherwise.
func Writer(f *os.File) io.WriteCloser {
	if rw := raw(f); rw != nil {
		return rw
	}
	if sw := socketWriter(f); sw != nil {
		return sw
	}
	return f
}

// Reader is Writer's counterpart for reading. A reader through the poller
// is one Yield looks at until it is closed.
func Reader(f *os.File) io.ReadCloser {
	if rw := raw(f); rw != nil {
		register(rw)
		return rw
	}
	return f
}
