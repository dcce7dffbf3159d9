//go:build linux

package e2e

import (
	"encoding/binary"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Special files are never opened for reading: a FIFO's blocked writer stays
// blocked, a device node's open never reaches its driver.
func TestSpecialFilesNeverOpened(t *testing.T) {
	root := tree(t, map[string]string{"a.txt": "alpha needle\n", "sub/b.txt": "beta needle\n"})
	fifo := filepath.Join(root, "pipe.txt")
	if err := unix.Mkfifo(fifo, 0o666); err != nil {
		t.Fatalf("mkfifo: %v", err)
	}
	dev := filepath.Join(root, "sub", "null.txt")
	if err := unix.Mknod(dev, unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err != nil {
		t.Fatalf("mknod of a character device (1,3): %v (the test runs as root with CAP_MKNOD; in a container drop no capabilities)", err)
	}
	sock := filepath.Join(root, "sock.txt")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()

	// Every open of the FIFO or the device node shows as IN_OPEN on them.
	ifd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(ifd)
	for _, p := range []string{fifo, dev} {
		if _, err := unix.InotifyAddWatch(ifd, p, unix.IN_OPEN|unix.IN_ACCESS); err != nil {
			t.Fatal(err)
		}
	}

	// A writer blocked in open(2) until some reader opens the FIFO.
	opened := make(chan error, 1)
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err == nil {
			f.Close()
		}
		opened <- err
	}()
	time.Sleep(100 * time.Millisecond) // let it block

	cs := worker(t, root, "--include", "**")
	missing := call(t, cs, "read_text_file", map[string]any{"path": "nosuch.txt"})
	for _, p := range []string{"pipe.txt", "sub/null.txt", "sock.txt"} {
		r := call(t, cs, "read_text_file", map[string]any{"path": p})
		if !r.isError || r.text != strings.ReplaceAll(missing.text, "nosuch.txt", p) {
			t.Errorf("read %s: %v %q, want the missing file's answer %q", p, r.isError, r.text, missing.text)
		}
	}
	for _, tc := range []struct {
		tool string
		args map[string]any
		want int
	}{
		{"search_text", map[string]any{"query": "needle"}, 2},
		{"search_text", map[string]any{"query": "needle", "path": "sub"}, 1},
		{"search_files", map[string]any{"query": ".txt"}, 2},
		{"list_directory", map[string]any{}, 2}, // a.txt, sub
	} {
		r := ok(t, cs, tc.tool, tc.args)
		if len(r.page.Items) != tc.want {
			t.Errorf("%s %s: %d items %s, want %d", tc.tool, mustJSON(tc.args), len(r.page.Items), mustJSON(r.page.Items), tc.want)
		}
	}

	time.Sleep(200 * time.Millisecond)
	select {
	case err := <-opened:
		t.Errorf("the FIFO's blocked writer was woken (open returned %v): the worker opened the FIFO", err)
	default:
	}
	var buf [4096]byte
	if n, err := unix.Read(ifd, buf[:]); err == nil && n > 0 {
		var what []string
		for b := buf[:n]; len(b) >= unix.SizeofInotifyEvent; {
			mask := binary.NativeEndian.Uint32(b[4:])
			what = append(what, maskName(mask))
			b = b[unix.SizeofInotifyEvent+int(binary.NativeEndian.Uint32(b[12:])):]
		}
		t.Errorf("the worker opened a special file: inotify saw %v", what)
	}

	// Release the writer: this test's own reader opens the FIFO.
	r, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err == nil {
		r.Close()
	}
	select {
	case <-opened:
	case <-time.After(5 * time.Second):
		t.Error("the FIFO writer did not return once the test opened the FIFO")
	}
}

func maskName(m uint32) string {
	switch {
	case m&unix.IN_OPEN != 0:
		return "IN_OPEN"
	case m&unix.IN_ACCESS != 0:
		return "IN_ACCESS"
	}
	return "other"
}

// A file the worker's user may not open is neither readable nor
// searchable: read_text_file answers as for a missing file, search_text
// skips it as it skips a binary file, on every page of a traversal, and
// never answers that the filesystem changed.
func TestUnreadableFileAsUnprivilegedUser(t *testing.T) {
	files := map[string]string{
		"a.txt":        "needle a1\nneedle a2\n",
		"m-secret.txt": "needle hidden\n",
		"sub/n.txt":    "needle n\n",
		"z.txt":        "needle z\n",
	}
	root := tree(t, files)
	for _, p := range []string{"m-secret.txt", "sub/locked.txt"} {
		full := filepath.Join(root, p)
		if err := os.WriteFile(full, []byte("needle hidden\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(full, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// The nobody user must reach the root (workerAs opens the binary's
	// directory).
	for _, d := range []string{root, filepath.Dir(root)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	needRoot(t)
	cs := workerAs(t, 65534, 65534, root, "--include", "**")

	missing := call(t, cs, "read_text_file", map[string]any{"path": "nosuch.txt"})
	for _, p := range []string{"m-secret.txt", "sub/locked.txt"} {
		r := call(t, cs, "read_text_file", map[string]any{"path": p})
		if !r.isError || r.text != strings.ReplaceAll(missing.text, "nosuch.txt", p) {
			t.Errorf("read %s: %v %q, want the missing file's answer %q", p, r.isError, r.text, missing.text)
		}
	}
	want := []string{"a.txt:1", "a.txt:2", "sub/n.txt:1", "z.txt:1"}
	for _, limit := range []int{1, 2, 200} {
		var got []string
		cursor := ""
		for pages := 0; ; pages++ {
			if pages > 20 {
				t.Fatalf("limit %d: no end after 20 pages", limit)
			}
			args := map[string]any{"query": "needle", "limit": limit}
			if cursor != "" {
				args["cursor"] = cursor
			}
			r := call(t, cs, "search_text", args)
			if r.isError {
				t.Fatalf("limit %d: search_text failed: %q", limit, r.text)
			}
			for _, h := range items[textHit](t, r) {
				got = append(got, h.Path+":"+itoa(h.Line))
			}
			if r.page.NextCursor == nil {
				break
			}
			cursor = *r.page.NextCursor
		}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("limit %d: hits %v, want %v", limit, got, want)
		}
	}
}
