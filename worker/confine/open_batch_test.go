//go:build linux

package confine

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestOpenReaders opens openFileCases in batches, in several orders, and
// checks each answer against OpenReader's: the same error text, or a
// Reader of the same file with the same Identity and bytes. In the Linux
// backend with openat2 the batches must go through io_uring; the test
// fails, naming the sysctl, where io_uring is turned off.
func TestOpenReaders(t *testing.T) {
	var rels []string
	for _, tt := range openFileCases {
		rels = append(rels, tt.rel)
	}
	orders := map[string][]string{"table": rels, "reversed": reversed(rels), "one": rels[:1]}
	modes(t, func(t *testing.T, r *Root, root, outside string) {
		for name, order := range orders {
			t.Run(name, func(t *testing.T) {
				for start := 0; start < len(order); start += BatchSize {
					chunk := order[start:min(len(order), start+BatchSize)]
					out := make([]Opened, len(chunk))
					withTimeout(t, func() { r.OpenReaders(chunk, out) })
					for i, rel := range chunk {
						sameAsOpenReader(t, r, rel, out[i], root, outside)
					}
				}
			})
		}
		checkBatched(t, r)
	})
}

// sameErr reports whether a and b are both nil, or say the same and are
// the same sentinel errors.
func sameErr(a, b error) bool {
	if a == nil || b == nil {
		return a == b
	}
	for _, s := range []error{ErrNotExist, ErrSymlink, ErrNotDir, ErrNotRegular, ErrPermission, errInvalidPath} {
		if errors.Is(a, s) != errors.Is(b, s) {
			return false
		}
	}
	return a.Error() == b.Error()
}

func reversed(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[len(s)-1-i] = v
	}
	return out
}

// sameAsOpenReader checks got, OpenReaders' answer for rel, against
// OpenReader's, and closes both readers.
func sameAsOpenReader(t *testing.T, r *Root, rel string, got Opened, root, outside string) {
	t.Helper()
	want, wantID, wantErr := r.OpenReader(rel)
	if !sameErr(got.Err, wantErr) {
		t.Fatalf("%q: OpenReaders error %v, OpenReader's %v", rel, got.Err, wantErr)
	}
	if got.Err != nil {
		noHostPath(t, got.Err, root, outside)
		if got.R != nil {
			t.Fatalf("%q: a Reader with the error", rel)
		}
		return
	}
	defer want.Close()
	defer got.R.Close()
	if got.ID != wantID || got.R.rel != want.rel || got.R.nlink != want.nlink {
		t.Fatalf("%q: OpenReaders %+v (%q, %d links), OpenReader %+v (%q, %d links)", rel, got.ID, got.R.rel, got.R.nlink, wantID, want.rel, want.nlink)
	}
	buf := make([]byte, len(insideBytes)+1)
	n, err := got.R.ReadAt(buf, 0)
	if err != io.EOF || string(buf[:n]) != insideBytes {
		t.Fatalf("%q: read %q, %v", rel, buf[:n], err)
	}
	if flags, err := unix.FcntlInt(uintptr(got.R.fd), unix.F_GETFL, 0); err != nil || flags&unix.O_NONBLOCK == 0 || flags&unix.O_ACCMODE != unix.O_RDONLY {
		t.Fatalf("%q: flags %#x, %v; want read-only, non-blocking", rel, flags, err)
	}
}

// TestOpenReadersNeverOpensAFIFO: a writer blocked opening a FIFO stays
// blocked while OpenReaders is asked for the FIFO among regular files.
func TestOpenReadersNeverOpensAFIFO(t *testing.T) {
	root, _ := fixture(t)
	r, err := Open(root)
	must(t, err)
	defer r.Close()
	opened := make(chan error, 1)
	go func() {
		f, err := os.OpenFile(filepath.Join(root, "fifo"), os.O_WRONLY, 0)
		if err == nil {
			f.Close()
		}
		opened <- err
	}()
	time.Sleep(50 * time.Millisecond) // let the writer block
	out := make([]Opened, 3)
	r.OpenReaders([]string{"f.txt", "fifo", "d/g.txt"}, out)
	if out[0].Err != nil || out[2].Err != nil || out[1].Err == nil {
		t.Fatalf("answers %+v", out)
	}
	out[0].R.Close()
	out[2].R.Close()
	select {
	case err := <-opened:
		t.Fatalf("the FIFO's writer was let through (%v): OpenReaders opened it", err)
	case <-time.After(200 * time.Millisecond):
	}
	rd, err := os.OpenFile(filepath.Join(root, "fifo"), os.O_RDONLY, 0) // release the writer
	must(t, err)
	rd.Close()
	<-opened
}

// BenchmarkOpenReaders opens 16 files of a directory a batch, against
// OpenReader one by one; ns/op is per file, and each file is closed.
//
//	go test -run '^$' -bench OpenReaders -count 3 ./worker/confine/
func BenchmarkOpenReaders(b *testing.B) {
	root := b.TempDir()
	rels := make([]string, BatchSize)
	for i := range rels {
		rels[i] = filepath.Join("d", "e", "f"+strconv.Itoa(i)+".txt")
	}
	must(b, os.MkdirAll(filepath.Join(root, "d", "e"), 0o755))
	for _, rel := range rels {
		must(b, os.WriteFile(filepath.Join(root, rel), []byte(insideBytes), 0o644))
	}
	r, err := Open(root)
	must(b, err)
	defer r.Close()
	out := make([]Opened, BatchSize)
	for _, mode := range []string{"batch", "one-by-one"} {
		b.Run(mode, func(b *testing.B) {
			for b.Loop() {
				if mode == "batch" {
					r.OpenReaders(rels, out)
				} else {
					r.openEach(rels, out)
				}
				for _, o := range out {
					if o.Err != nil {
						b.Fatal(o.Err)
					}
					o.R.Close()
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*BatchSize), "ns/file")
		})
	}
}

// openDir opens root as a Root and its directory rel, both closed when
// tb ends.
func openDir(tb testing.TB, root, rel string) (*Root, *Dir) {
	tb.Helper()
	r, err := Open(root)
	must(tb, err)
	tb.Cleanup(func() { r.Close() })
	d, err := r.OpenDir(rel)
	must(tb, err)
	tb.Cleanup(func() { d.Close() })
	return r, d
}
