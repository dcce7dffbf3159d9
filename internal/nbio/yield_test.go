//go:build linux && !fsmcp_portable

package nbio

import (
	"runtime"
	"testing"
	"time"
)

// waitUntil lets other goroutines run (with GOMAXPROCS=1, only through
// Gosched) until ok holds.
func waitUntil(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		runtime.Gosched()
	}
}

// spin keeps the P busy, without entering the scheduler, for longer than
// Yield waits between looks.
func spin() {
	for start := time.Now(); time.Since(start) < 2*yieldEvery; {
	}
}

// TestYieldHandsThePToAWaitingReader runs with one P, as a worker does
// between searches: a goroutine that never blocks stands for a scan,
// and the line written to the reader's pipe reaches it only if Yield
// wakes it and gives it the P. Without Yield the runtime's poller would
// not be asked while the P has a goroutine to run.
func TestYieldHandsThePToAWaitingReader(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	pr, pw := nonblockingPipe(t)
	r := Reader(pr)
	rf := r.(*rawFile)
	defer r.Close()

	type read struct {
		s   string
		err error
	}
	got := make(chan read, 2)
	go func() {
		buf := make([]byte, 64)
		for range 2 {
			n, err := r.Read(buf)
			got <- read{string(buf[:n]), err}
		}
	}()
	waitUntil(t, "the reader waits on the poller", rf.waiting.Load)

	// No input: Yield leaves the reader waiting.
	spin()
	Yield()
	waitUntil(t, "the reader waits on the poller", rf.waiting.Load)
	select {
	case rd := <-got:
		t.Fatalf("with no input the reader returned %q, %v", rd.s, rd.err)
	default:
	}

	// Input: a Yield and the reader has read it, the P given back. The
	// scheduler takes a goroutine from its global queue first once in 61
	// turns, and Gosched puts the yielding one there, so a Yield may come
	// straight back: a few are allowed, all well within the 10 ms after
	// which the runtime's monitor would ask the poller itself.
	if _, err := pw.Write([]byte("call\n")); err != nil {
		t.Fatal(err)
	}
	var rd read
	taken := false
	for range 3 {
		spin()
		Yield()
		select {
		case rd = <-got:
			taken = true
		default:
		}
		if taken {
			break
		}
	}
	if !taken {
		t.Fatal("after three Yields the reader has not read the input")
	}
	if rd.s != "call\n" || rd.err != nil {
		t.Fatalf("read %q, %v; want %q", rd.s, rd.err, "call\n")
	}

	// Woken by a deadline, the reader cleared it: the next read waits for
	// input again and gets it whole.
	waitUntil(t, "the reader waits on the poller again", rf.waiting.Load)
	if _, err := pw.Write([]byte("next\n")); err != nil {
		t.Fatal(err)
	}
	select {
	case rd := <-got:
		if rd.s != "next\n" || rd.err != nil {
			t.Fatalf("read %q, %v; want %q", rd.s, rd.err, "next\n")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the second read never returned")
	}
}

// TestYieldForgetsClosedReaders: a closed reader is no longer looked at.
func TestYieldForgetsClosedReaders(t *testing.T) {
	pr, _ := nonblockingPipe(t)
	r := Reader(pr)
	r.Close()
	readers.mu.Lock()
	defer readers.mu.Unlock()
	for _, o := range readers.files {
		if o == r.(*rawFile) {
			t.Fatal("a closed reader is still registered")
		}
	}
}
