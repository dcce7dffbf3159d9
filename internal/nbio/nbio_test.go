//go:build linux && !fsmcp_portable

package nbio

import (
	"bytes"
	"errors"
	"io"
	"os"
	"syscall"
	"testing"
	"time"
)

// nonblockingPipe is a pipe whose ends are non-blocking and polled, as
// Pollable makes them.
func nonblockingPipe(t *testing.T) (r, w *os.File) {
	t.Helper()
	var fds [2]int
	if err := syscall.Pipe2(fds[:], syscall.O_NONBLOCK|syscall.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	r, w = os.NewFile(uintptr(fds[0]), "r"), os.NewFile(uintptr(fds[1]), "w")
	t.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}

func TestRawOnlyForNonblocking(t *testing.T) {
	br, bw, err := os.Pipe() // os.Pipe makes both ends non-blocking and polled
	if err != nil {
		t.Fatal(err)
	}
	defer br.Close()
	defer bw.Close()
	nr, nw := nonblockingPipe(t)
	reg, err := os.CreateTemp(t.TempDir(), "regular")
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	tests := []struct {
		name string
		f    *os.File
		raw  bool
	}{
		{"os.Pipe read end", br, true},
		{"os.Pipe write end", bw, true},
		{"non-blocking read end", nr, true},
		{"non-blocking write end", nw, true},
		{"regular file", reg, false},
	}
	for _, tc := range tests {
		_, isRaw := Reader(tc.f).(*rawFile)
		if isRaw != tc.raw {
			t.Errorf("%s: raw %v, want %v", tc.name, isRaw, tc.raw)
		}
	}
}

// TestWriteWaitsForRoom writes far more than a pipe holds to a reader
// that is slow to start: the writer meets EAGAIN, waits in the poller, and
// every byte arrives in order.
func TestWriteWaitsForRoom(t *testing.T) {
	r, w := nonblockingPipe(t)
	writeToSlowReader(t, Writer(w), Reader(r), 1<<20)
}

// writeToSlowReader writes size bytes (a multiple of 16) with w, closes
// it, and checks that a reader of r that starts 50 ms late gets every
// byte in order.
func writeToSlowReader(t *testing.T, w io.WriteCloser, r io.Reader, size int) {
	t.Helper()
	want := bytes.Repeat([]byte("0123456789abcdef"), size/16)
	got := make(chan []byte, 1)
	go func() {
		time.Sleep(50 * time.Millisecond)
		b, _ := io.ReadAll(r)
		got <- b
	}()
	n, err := w.Write(want)
	if err != nil || n != len(want) {
		t.Fatalf("Write: %d, %v; want %d, nil", n, err, len(want))
	}
	w.Close()
	if b := <-got; !bytes.Equal(b, want) {
		t.Fatalf("read %d bytes, not the %d written", len(b), len(want))
	}
}

// readLineWrittenLater checks that rd, empty at first, reads the line w
// writes 20 ms later and then io.EOF when w closes.
func readLineWrittenLater(t *testing.T, rd io.Reader, w io.WriteCloser) {
	t.Helper()
	go func() {
		time.Sleep(20 * time.Millisecond)
		w.Write([]byte("line\n"))
		w.Close()
	}()
	b, err := io.ReadAll(rd)
	if err != nil || string(b) != "line\n" {
		t.Fatalf("ReadAll: %q, %v", b, err)
	}
}

// TestReadWaitsAndEnds: a Read on an empty pipe waits for input, returns
// io.EOF once the writer is gone, and a Close ends a Read that waits.
func TestReadWaitsAndEnds(t *testing.T) {
	r, w := nonblockingPipe(t)
	readLineWrittenLater(t, Reader(r), w)

	r2, _ := nonblockingPipe(t)
	rd2 := Reader(r2)
	done := make(chan error, 1)
	go func() {
		_, err := rd2.Read(make([]byte, 10))
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	rd2.Close()
	select {
	case err := <-done:
		if !errors.Is(err, os.ErrClosed) {
			t.Fatalf("Read after Close: %v, want os.ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end the waiting Read")
	}
}

// TestPollable reopens a blocking pipe non-blocking, leaving the original
// description blocking.
func TestPollable(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if err := syscall.SetNonblock(int(r.Fd()), false); err != nil {
		t.Fatal(err)
	}
	p := Pollable(r, os.O_RDONLY)
	if p == r {
		t.Fatal("a pipe was not reopened")
	}
	defer p.Close()
	if !nonblocking(t, p) || nonblocking(t, r) {
		t.Fatalf("reopened non-blocking %v, original non-blocking %v; want true, false", nonblocking(t, p), nonblocking(t, r))
	}
	f, err := os.CreateTemp(t.TempDir(), "x")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if Pollable(f, os.O_RDONLY) != f {
		t.Fatal("a regular file was reopened")
	}
}

func nonblocking(t *testing.T, f *os.File) bool {
	rc, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var nb bool
	rc.Control(func(fd uintptr) {
		fl, _, _ := syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_GETFL, 0)
		nb = fl&syscall.O_NONBLOCK != 0
	})
	return nb
}
