package main

import (
	"fmt"
	"os"
	"syscall"
)

// pollable returns f reopened with O_NONBLOCK when it is a pipe, and f
// itself otherwise (or when reopening fails).
//
// Go reads a blocking pipe on a thread parked in read(2); the runtime then
// takes that thread's P away and wakes it again for every line, which
// costs more than the relaying itself on a machine where a thread wake-up
// is slow. A non-blocking descriptor is waited for by the runtime's poller
// instead. Opening /proc/self/fd/N gives a new open file description of the
// same pipe, so the flag does not reach the host's description or the
// stdin that go-plugin hands to the workers.
func pollable(f *os.File, flag int) *os.File {
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFIFO {
		return f
	}
	fd, err := syscall.Open(fmt.Sprintf("/proc/self/fd/%d", f.Fd()), flag|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return f
	}
	// os.NewFile sees O_NONBLOCK and registers the descriptor with the
	// poller.
	return os.NewFile(uintptr(fd), f.Name())
}
