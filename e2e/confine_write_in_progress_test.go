//go:build linux

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/fsmcp/fsmcp/e2e/internal/fusefs"
)

// The writer of TestSearchWaitsOutWriteInProgress runs as this test binary
// started again with these variables set (TestMain): the file it writes
// to, and the mapped source that holds its write.
const (
	heldWriteEnv  = "FSMCP_E2E_HELD_WRITE"
	heldSourceEnv = "FSMCP_E2E_HELD_SOURCE"
)

// heldNeedle is in the bytes the held write copies first.
const heldNeedle = "written-by-the-held-write"

// heldWriteAt is where the held write starts in its file: a page before
// the largest folio the page cache may give a file (a PMD-sized huge
// page), so the write's first step copies exactly one page, whatever
// folio size the filesystem uses, before its second faults on the mapped
// page.
func heldWriteAt() int {
	huge := 2 << 20
	if b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && n > 0 {
			huge = n
		}
	}
	return huge - os.Getpagesize()
}

// heldWrite writes two pages to dest at heldWriteAt in one pwrite: a page
// of text holding heldNeedle, then a page mapped from src, a Held file
// whose reads wait for the test. The kernel copies the first page into
// the file and then, the destination's inode lock still held, waits on
// the second's page fault: the write is in progress until the test lets
// src's read answer.
func heldWrite(dest, src string) error {
	page := os.Getpagesize()
	buf, err := unix.Mmap(-1, 0, 2*page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return fmt.Errorf("map two pages: %w", err)
	}
	line := "this line was " + heldNeedle + "\n"
	for i := 0; i+len(line) <= page; i += len(line) {
		copy(buf[i:], line)
	}
	for i := page - page%len(line); i < page; i++ {
		buf[i] = '\n'
	}
	sfd, err := unix.Open(src, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open the source: %w", err)
	}
	if _, err := unix.MmapPtr(sfd, 0, unsafe.Pointer(&buf[page]), uintptr(page), unix.PROT_READ, unix.MAP_PRIVATE|unix.MAP_FIXED); err != nil {
		return fmt.Errorf("map the source over the second page: %w", err)
	}
	dfd, err := unix.Open(dest, unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open the destination: %w", err)
	}
	if n, err := unix.Pwrite(dfd, buf, int64(heldWriteAt())); err != nil || n != len(buf) {
		return fmt.Errorf("pwrite: %d bytes, %v", n, err)
	}
	return unix.Close(dfd)
}

// TestSearchWaitsOutWriteInProgress: a write in the middle of its copy
// when search_text reads the file (the first page of new bytes in place,
// the second not yet: the writer's source is a page whose read the test
// holds) is waited out, and the page is refused as changed, never served
// from the half-written file. The write holds the file's inode lock for
// its whole copy; the worker, after reading, waits for that lock
// (Guard.Settle), so the search cannot answer while the write is held.
// On the filesystem of the test's temporary directory (ext4 here).
func TestSearchWaitsOutWriteInProgress(t *testing.T) {
	at := heldWriteAt()
	line := "an old line of plain text\n"
	old := strings.Repeat(line, at/len(line)) + strings.Repeat("\n", at%len(line))
	root := tree(t, map[string]string{"notes.txt": old})
	mnt := t.TempDir()
	held := fusefs.NewHeld(t)
	fusefs.Mount(t, mnt, held)
	cs := worker(t, root, "--include", "**")
	// The case is a file read as the search finds it, mid-write.
	search := map[string]any{"query": heldNeedle}

	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	w := exec.Command(self)
	w.Env = []string{heldWriteEnv + "=" + filepath.Join(root, "notes.txt"), heldSourceEnv + "=" + filepath.Join(mnt, "held.bin")}
	w.Stdout, w.Stderr = &testWriter{t: t}, &testWriter{t: t}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	wrote := make(chan error, 1)
	go func() { wrote <- w.Wait() }()
	t.Cleanup(func() { held.Release(); <-wrote })
	eventually(t, 10*time.Second, "the write to fault on its held page", func() bool { return held.Reading.Load() > 0 })
	fi, err := os.Stat(filepath.Join(root, "notes.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(at + os.Getpagesize()); fi.Size() != want {
		t.Fatalf("with the write held, notes.txt has %d bytes, want %d: its first page written", fi.Size(), want)
	}

	answered := make(chan *result, 1)
	go func() {
		r, err := tryCall(cs, "search_text", search)
		if err != nil {
			r = &result{isError: true, text: err.Error()}
		}
		answered <- r
	}()
	select {
	case r := <-answered:
		t.Fatalf("search_text answered while a write to the file was in progress: error %v, %d items, %.200q", r.isError, len(r.page.Items), r.text)
	case <-time.After(500 * time.Millisecond):
	}
	held.Release()
	select {
	case r := <-answered:
		if !r.isError || r.text != changedReading {
			t.Fatalf("search_text over a write in progress: error %v, %d items, %.200q; want the refusal %q", r.isError, len(r.page.Items), r.text, changedReading)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("search_text did not answer within 30s of the write's release")
	}
	if err := <-wrote; err != nil {
		t.Fatalf("the held write: %v", err)
	}
	wrote <- nil // for the cleanup
	if r := ok(t, cs, "search_text", search); len(r.page.Items) == 0 {
		t.Fatal("search after the write found no match of the bytes it wrote")
	}
}
