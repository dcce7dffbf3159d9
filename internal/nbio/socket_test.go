//go:build linux && !fsmcp_portable

package nbio

import (
	"errors"
	"os"
	"syscall"
	"testing"
	"time"
)

// blockingSockets is a connected socket pair whose ends are blocking and
// not polled, as a Node.js host gives its child stdin and stdout.
func blockingSockets(t *testing.T) (a, b *os.File) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	a, b = os.NewFile(uintptr(fds[0]), "a"), os.NewFile(uintptr(fds[1]), "b")
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

// TestPollableSocket: a socket read from is duplicated non-blocking and
// polled (reads then take the raw path); one written to is left as it is.
func TestPollableSocket(t *testing.T) {
	a, b := blockingSockets(t)
	p := Pollable(a, os.O_RDONLY)
	if p == a {
		t.Fatal("a socket read from was not made pollable")
	}
	defer p.Close()
	if !nonblocking(t, p) || !polled(p) {
		t.Fatalf("non-blocking %v, polled %v; want both", nonblocking(t, p), polled(p))
	}
	if Pollable(b, os.O_WRONLY) != b {
		t.Fatal("a socket written to was replaced")
	}
	rd := Reader(p)
	if _, ok := rd.(*rawFile); !ok {
		t.Fatalf("Reader of the pollable socket is %T, want *rawFile", rd)
	}
	readLineWrittenLater(t, rd, b)
}

// TestSocketWriter: a socket the poller does not wait on is written with
// sockWriter, whether its description is blocking or was made
// non-blocking after the file was made (stdin and stdout one socket,
// stdin made pollable). More than the socket holds is written to a reader
// slow to start: the writer meets EAGAIN, waits in poll(2), and every
// byte arrives in order.
func TestSocketWriter(t *testing.T) {
	for _, tc := range []struct {
		name        string
		nonblocking bool
	}{
		{"blocking", false},
		{"made non-blocking later", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := blockingSockets(t)
			if err := syscall.SetNonblock(int(a.Fd()), tc.nonblocking); err != nil {
				t.Fatal(err)
			}
			w := Writer(a)
			if _, ok := w.(*sockWriter); !ok {
				t.Fatalf("Writer is %T, want *sockWriter", w)
			}
			writeToSlowReader(t, w, b, 8<<20)
		})
	}
}

// TestSocketWriterReaderGone: writing after the reader closed its end is
// an EPIPE error, and a write waiting for room ends with it when the
// reader closes. (The SIGPIPE a raw write without MSG_NOSIGNAL raises would
// not end a Go program either; the flag only spares sending it.)
func TestSocketWriterReaderGone(t *testing.T) {
	a, b := blockingSockets(t)
	w := Writer(a)
	done := make(chan error, 1)
	go func() {
		_, err := w.Write(make([]byte, 16<<20)) // more than the socket holds
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	b.Close()
	select {
	case err := <-done:
		if !errors.Is(err, syscall.EPIPE) && !errors.Is(err, syscall.ECONNRESET) {
			t.Fatalf("Write after the reader closed: %v, want EPIPE", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting Write did not end when the reader closed")
	}
	if _, err := w.Write([]byte("again\n")); !errors.Is(err, syscall.EPIPE) {
		t.Fatalf("second Write: %v, want EPIPE", err)
	}
}
