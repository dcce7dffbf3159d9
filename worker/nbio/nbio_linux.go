package nbio

import (
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Pollable returns f reopened with O_NONBLOCK when it is a pipe, and f
// itself otherwise (or when reopening fails); flag is os.O_RDONLY or
// os.O_WRONLY, as f is used.
//
// Go reads a blocking pipe on a thread parked in read(2); the runtime then
// takes that thread's P away and wakes it again for every line. A
// non-blocking descriptor is waited for by the runtime's poller instead.
// Opening /proc/self/fd/N gives a new open file description of the same
// pipe, so the flag does not reach the description the parent holds, nor
// the one a child started with f inherits.
func Pollable(f *os.File, flag int) *os.File {
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

// rawFile reads and writes through the descriptor of a polled,
// non-blocking file.
type rawFile struct {
	f      *os.File // kept reachable: its finalizer would close the descriptor
	rc     syscall.RawConn
	closed atomic.Bool
}

func raw(f *os.File) *rawFile {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil
	}
	nonblocking := false
	if err := rc.Control(func(fd uintptr) {
		flags, err := unix.FcntlInt(fd, unix.F_GETFL, 0)
		nonblocking = err == nil && flags&unix.O_NONBLOCK != 0
	}); err != nil || !nonblocking {
		return nil
	}
	// os.NewFile polls a descriptor that is non-blocking when it is
	// made, which is how fsmcp makes the ones it passes here. One made
	// blocking and switched later is not polled: waiting on it fails
	// ("waiting for unsupported file type").
	return &rawFile{f: f, rc: rc}
}

func (r *rawFile) Write(p []byte) (int, error) {
	var written int
	var werr error
	err := r.rc.Write(func(fd uintptr) bool {
		for written < len(p) {
			b := p[written:]
			n, _, errno := unix.RawSyscall(unix.SYS_WRITE, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
			switch errno {
			case 0:
				written += int(n)
			case unix.EINTR:
			case unix.EAGAIN:
				return false // wait for room through the poller
			default:
				werr = &os.PathError{Op: "write", Path: r.f.Name(), Err: errno}
				return true
			}
		}
		return true
	})
	if werr != nil {
		return written, werr
	}
	return written, r.wrap("write", err)
}

func (r *rawFile) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var n int
	var rerr error
	err := r.rc.Read(func(fd uintptr) bool {
		for {
			m, _, errno := unix.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
			switch errno {
			case 0:
				n = int(m)
				if n == 0 {
					rerr = io.EOF
				}
				return true
			case unix.EINTR:
			case unix.EAGAIN:
				return false // wait for input through the poller
			default:
				rerr = &os.PathError{Op: "read", Path: r.f.Name(), Err: errno}
				return true
			}
		}
	})
	if rerr != nil {
		return n, rerr
	}
	return n, r.wrap("read", err)
}

// wrap gives an error of the poller (a closed file, most likely) the form
// os.File's methods give it.
func (r *rawFile) wrap(op string, err error) error {
	switch {
	case err == nil:
		return nil
	case r.closed.Load():
		err = os.ErrClosed
	}
	return &os.PathError{Op: op, Path: r.f.Name(), Err: err}
}

// Close closes the file, ending a Read or Write waiting on it.
func (r *rawFile) Close() error {
	r.closed.Store(true)
	return r.f.Close()
}
