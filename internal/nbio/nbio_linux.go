//go:build !fsmcp_portable

package nbio

import (
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Pollable returns f reopened with O_NONBLOCK when it is a pipe, f
// duplicated and made non-blocking when it is a socket read from, and f
// itself otherwise (or when that fails); flag is os.O_RDONLY or
// os.O_WRONLY, as f is used.
//
// Go reads a blocking pipe or socket on a thread parked in read(2); the
// runtime then takes that thread's P away and wakes it again for every
// line. A non-blocking descriptor is waited for by the runtime's poller
// instead. Opening /proc/self/fd/N gives a new open file description of
// the same pipe, so the flag does not reach the description the parent
// holds, nor the one a child started with f inherits.
//
// A socket (a Node.js host's child_process gives its child a socket pair
// for each of stdin and stdout) cannot be reopened, so the flag is set on
// its one description, as net.FileConn does with a socket a parent
// passed; the host closes its copy of the child's end. A socket written
// to is left alone: Writer writes it without the poller (see sockWriter).
func Pollable(f *os.File, flag int) *os.File {
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		return f
	}
	switch st.Mode & syscall.S_IFMT {
	case syscall.S_IFIFO:
		fd, err := syscall.Open(fmt.Sprintf("/proc/self/fd/%d", f.Fd()), flag|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
		if err != nil {
			return f
		}
		// os.NewFile sees O_NONBLOCK and registers the descriptor with the
		// poller.
		return os.NewFile(uintptr(fd), f.Name())
	case syscall.S_IFSOCK:
		if flag != os.O_RDONLY {
			return f
		}
		fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
		if err != nil {
			return f
		}
		if err := syscall.SetNonblock(fd, true); err != nil {
			syscall.Close(fd)
			return f
		}
		return os.NewFile(uintptr(fd), f.Name())
	}
	return f
}

// rawFile reads and writes through the descriptor of a polled,
// non-blocking file.
type rawFile struct {
	f      *os.File // kept reachable: its finalizer would close the descriptor
	rc     syscall.RawConn
	closed atomic.Bool
	fd     int // f's descriptor, polled by Yield while f is registered
	// waiting: a Read waits on the poller (see Yield).
	waiting atomic.Bool
}

func raw(f *os.File) *rawFile {
	// os.NewFile polls a descriptor that is non-blocking when it is
	// made, which is how fsmcp makes the ones it passes here. One made
	// blocking and switched later is not polled: waiting on it fails
	// ("waiting for unsupported file type"), so both are checked.
	if !polled(f) {
		return nil
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return nil
	}
	nonblocking := false
	desc := -1
	if err := rc.Control(func(fd uintptr) {
		flags, err := unix.FcntlInt(fd, unix.F_GETFL, 0)
		nonblocking = err == nil && flags&unix.O_NONBLOCK != 0
		desc = int(fd)
	}); err != nil || !nonblocking {
		return nil
	}
	return &rawFile{f: f, rc: rc, fd: desc}
}

// polled reports whether the runtime's poller waits on f: only such a
// file takes deadlines.
func polled(f *os.File) bool {
	return f.SetWriteDeadline(time.Time{}) == nil
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
	for {
		// The read deadline is this reader's own: Yield sets it in the
		// past to wake a Read waiting on the poller, which then clears it
		// and reads again.
		n, err := r.read(p)
		if err != nil && woken(err) && !r.closed.Load() {
			_ = r.f.SetReadDeadline(time.Time{})
			continue
		}
		return n, err
	}
}

func (r *rawFile) read(p []byte) (int, error) {
	var n int
	var rerr error
	defer r.waiting.Store(false)
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
				// Only a read that found nothing waits: the poller clears
				// the readiness it recorded before the wait, so a wait with
				// a line still unread could wait for good.
				r.waiting.Store(true)
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
	unregister(r)
	return r.f.Close()
}

// sockWriter writes a socket the runtime's poller does not wait on with
// send(MSG_DONTWAIT) as a raw system call: a write never waits in the
// kernel, and the scheduler is not told of it (see the package comment).
// When the socket is full (its reader is not reading) the write waits in
// poll(2), through the scheduler. The poller is kept out on purpose: a
// socket polled for writing is woken every time its peer reads (the end
// becomes writable again), which for a connection written line by line is
// a wake-up for nothing after every line. The description's O_NONBLOCK
// does not matter; MSG_NOSIGNAL makes a write after the reader closed an
// EPIPE error rather than a signal.
type sockWriter struct {
	f  *os.File
	rc syscall.RawConn
}

// socketWriter returns a sockWriter for f when f is a socket the poller
// does not wait on, else nil.
func socketWriter(f *os.File) *sockWriter {
	if polled(f) {
		return nil
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return nil
	}
	isSocket := false
	if err := rc.Control(func(fd uintptr) {
		var st unix.Stat_t
		isSocket = unix.Fstat(int(fd), &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFSOCK
	}); err != nil || !isSocket {
		return nil
	}
	return &sockWriter{f: f, rc: rc}
}

func (w *sockWriter) Write(p []byte) (int, error) {
	var written int
	var werr error
	err := w.rc.Write(func(fd uintptr) bool {
		for written < len(p) {
			b := p[written:]
			n, _, errno := unix.RawSyscall6(unix.SYS_SENDTO, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL, 0, 0)
			switch errno {
			case 0:
				written += int(n)
			case unix.EINTR:
			case unix.EAGAIN:
				if err := waitWritable(int(fd)); err != nil {
					werr = &os.PathError{Op: "write", Path: w.f.Name(), Err: err}
					return true
				}
			default:
				werr = &os.PathError{Op: "write", Path: w.f.Name(), Err: errno}
				return true
			}
		}
		return true
	})
	if werr != nil {
		return written, werr
	}
	if err != nil {
		return written, &os.PathError{Op: "write", Path: w.f.Name(), Err: err}
	}
	return written, nil
}

// waitWritable waits until fd has room, or an error or hang-up is pending
// on it (the next send reports it).
func waitWritable(fd int) error {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
	for {
		if _, err := unix.Poll(fds, -1); err != unix.EINTR {
			return err
		}
	}
}

// Close closes the socket. A Write waiting for room goes on waiting until
// the reader reads or closes its end.
func (w *sockWriter) Close() error { return w.f.Close() }
