//go:build linux

package confine

import (
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

const (
	insideBytes  = "inside"
	outsideBytes = "OUTSIDE"
)

// fixture builds:
//
//	root/f.txt            "inside"
//	root/d/g.txt          "inside"
//	root/d/e/h.txt        "inside"
//	root/d/link-e      -> e                 (ancestor symlink inside)
//	root/link-f        -> f.txt             (leaf symlink inside)
//	root/link-out      -> outside/secret.txt (leaf symlink outside)
//	root/link-d        -> d                 (ancestor symlink inside)
//	root/link-outd     -> outside           (ancestor symlink outside)
//	root/link-abs-d    -> root/d (absolute, inside)
//	root/dangling      -> nowhere
//	root/fifo             (named pipe, no writer)
//	outside/secret.txt, outside/g.txt, outside/e/h.txt, outside/d/g.txt: "OUTSIDE"
func fixture(t testing.TB) (root, outside string) {
	t.Helper()
	base := t.TempDir()
	root = filepath.Join(base, "root")
	outside = filepath.Join(base, "outside")
	for _, d := range []string{root, outside, filepath.Join(root, "d", "e"), filepath.Join(outside, "e"), filepath.Join(outside, "d")} {
		must(t, os.MkdirAll(d, 0o755))
	}
	write := func(p, s string) { must(t, os.WriteFile(p, []byte(s), 0o644)) }
	write(filepath.Join(root, "f.txt"), insideBytes)
	write(filepath.Join(root, "d", "g.txt"), insideBytes)
	write(filepath.Join(root, "d", "e", "h.txt"), insideBytes)
	for _, p := range []string{"secret.txt", "g.txt", "e/h.txt", "d/g.txt"} {
		write(filepath.Join(outside, p), outsideBytes)
	}
	links := map[string]string{
		"d/link-e":   "e",
		"link-f":     "f.txt",
		"link-out":   filepath.Join(outside, "secret.txt"),
		"link-d":     "d",
		"link-outd":  outside,
		"link-abs-d": filepath.Join(root, "d"),
		"dangling":   "nowhere",
	}
	for name, target := range links {
		must(t, os.Symlink(target, filepath.Join(root, name)))
	}
	must(t, unix.Mkfifo(filepath.Join(root, "fifo"), 0o644))
	return root, outside
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// modes runs f once in each way the backend resolves paths (walkModes):
// in the Linux backend with openat2 (if the kernel allows it) and with the
// forced per-component walk.
func modes(t *testing.T, f func(t *testing.T, r *Root, root, outside string)) {
	for _, walk := range walkModes {
		name := "openat2"
		if walk {
			name = "walk"
		}
		t.Run(name, func(t *testing.T) {
			root, outside := fixture(t)
			r, err := Open(root)
			must(t, err)
			t.Cleanup(func() { r.Close() })
			if walk {
				r.setForceWalk(true)
				if r.UsesOpenat2() {
					t.Fatal("UsesOpenat2 true with forced walk")
				}
			} else if !r.UsesOpenat2() {
				t.Skip("openat2 not available on this kernel")
			}
			f(t, r, root, outside)
		})
	}
}

func checkErr(t *testing.T, err, want error, root, outside string) {
	t.Helper()
	if want == nil {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("got nil error, want %v", want)
	}
	if !errors.Is(err, want) {
		t.Fatalf("got error %q, want errors.Is %q", err, want)
	}
	noHostPath(t, err, root, outside)
}

func noHostPath(t *testing.T, err error, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if strings.Contains(err.Error(), p) {
			t.Fatalf("error %q contains host path %q", err, p)
		}
	}
	if strings.Contains(err.Error(), os.TempDir()) {
		t.Fatalf("error %q contains a host path", err)
	}
}

// withTimeout fails the test if f does not return quickly (e.g. blocked on
// a FIFO).
func withTimeout(t *testing.T, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("operation blocked")
	}
}

// openFileCases are the names TestOpenFile and TestOpenReaders open in the
// fixture, with the error each gets.
var openFileCases = []struct {
	rel  string
	want error
}{
	{"f.txt", nil},
	{"./f.txt", nil},
	{"d/g.txt", nil},
	{"d/e/h.txt", nil},
	{"link-f", ErrSymlink},
	{"link-out", ErrSymlink},
	{"dangling", ErrSymlink},
	{"dangling/x", ErrSymlink},
	{"link-d/g.txt", ErrSymlink},
	{"link-d/e/h.txt", ErrSymlink},
	{"link-outd/g.txt", ErrSymlink},
	{"link-outd/e/h.txt", ErrSymlink},
	{"link-abs-d/g.txt", ErrSymlink},
	{"d/link-e/h.txt", ErrSymlink},
	{"fifo", ErrNotRegular},
	{"d", ErrNotRegular},
	{"d/e", ErrNotRegular},
	{"", ErrNotRegular},
	{"nope", ErrNotExist},
	{"d/nope", ErrNotExist},
	{"nope/x", ErrNotExist},
	{"f.txt/x", ErrNotDir},
	{"d/g.txt/x", ErrNotDir},
	{"fifo/x", ErrNotDir},
	{"../root/f.txt", errInvalidPath},
	{"d/../f.txt", errInvalidPath},
	{"/etc/passwd", errInvalidPath},
}

func TestOpenFile(t *testing.T) {
	tests := openFileCases
	modes(t, func(t *testing.T, r *Root, root, outside string) {
		for _, tt := range tests {
			t.Run(tt.rel, func(t *testing.T) {
				var (
					f   *os.File
					id  Identity
					err error
				)
				withTimeout(t, func() { f, id, err = r.OpenFile(tt.rel) })
				checkErr(t, err, tt.want, root, outside)
				// OpenReader follows the same rules and reads the same.
				var (
					rd   *Reader
					rdID Identity
					rErr error
				)
				withTimeout(t, func() { rd, rdID, rErr = r.OpenReader(tt.rel) })
				checkErr(t, rErr, tt.want, root, outside)
				if rErr == nil {
					buf := make([]byte, len(insideBytes)+1)
					n, rerr := rd.ReadAt(buf, 0)
					if rerr != io.EOF || string(buf[:n]) != insideBytes {
						t.Fatalf("Reader read %q, %v", buf[:n], rerr)
					}
					if again, err := rd.Identity(); err != nil || again != rdID || rdID != id {
						t.Fatalf("Reader identity %+v, %+v, %v; OpenFile's %+v", rdID, again, err, id)
					}
					must(t, rd.Close())
				}
				if err != nil {
					if f != nil {
						t.Fatal("non-nil file with error")
					}
					return
				}
				defer f.Close()
				b, err := io.ReadAll(f)
				must(t, err)
				if string(b) != insideBytes {
					t.Fatalf("read %q", b)
				}
				if id.Kind() != KindFile || id.Size != int64(len(insideBytes)) {
					t.Fatalf("identity %+v", id)
				}
				fi, err := os.Stat(filepath.Join(root, tt.rel))
				must(t, err)
				st := fi.Sys().(*syscall.Stat_t)
				if id.Ino != st.Ino || id.Dev != st.Dev || id.MtimeNs != fi.ModTime().UnixNano() {
					t.Fatalf("identity %+v does not match stat %+v", id, st)
				}
				id2, err := fstatIdentity(f)
				must(t, err)
				if id2 != id {
					t.Fatalf("fstat %+v != %+v", id2, id)
				}
				if strings.Contains(f.Name(), root) {
					t.Fatalf("file name %q contains host path", f.Name())
				}
			})
		}
	})
}

func TestOpenDir(t *testing.T) {
	tests := []struct {
		rel  string
		want error
	}{
		{"", nil},
		{".", nil},
		{"d", nil},
		{"d/e", nil},
		{"d/e/", nil},
		{"link-d", ErrSymlink},
		{"link-outd", ErrSymlink},
		{"link-outd/e", ErrSymlink},
		{"link-abs-d", ErrSymlink},
		{"link-d/e", ErrSymlink},
		{"d/link-e", ErrSymlink},
		{"dangling", ErrSymlink},
		{"link-f", ErrSymlink},
		{"f.txt", ErrNotDir},
		{"d/g.txt", ErrNotDir},
		{"fifo", ErrNotDir},
		{"f.txt/x", ErrNotDir},
		{"nope", ErrNotExist},
		{"d/nope", ErrNotExist},
		{"..", errInvalidPath},
	}
	modes(t, func(t *testing.T, r *Root, root, outside string) {
		for _, tt := range tests {
			t.Run(tt.rel, func(t *testing.T) {
				var (
					d   *Dir
					err error
				)
				withTimeout(t, func() { d, err = r.OpenDir(tt.rel) })
				checkErr(t, err, tt.want, root, outside)
				if err != nil {
					return
				}
				defer d.Close()
				ents, err := d.Entries()
				must(t, err)
				want, err := os.ReadDir(filepath.Join(root, tt.rel))
				must(t, err)
				if len(ents) != len(want) {
					t.Fatalf("Entries = %v, want %d entries", ents, len(want))
				}
			})
		}
	})
}

func TestDirMethods(t *testing.T) {
	modes(t, func(t *testing.T, r *Root, root, outside string) {
		rd, err := r.OpenDir("")
		must(t, err)
		defer rd.Close()

		ents, err := rd.Entries()
		must(t, err)
		got := map[string]Kind{}
		for _, e := range ents {
			got[e.Name] = e.Kind
		}
		want := map[string]Kind{
			"f.txt": KindFile, "d": KindDir, "fifo": KindOther,
			"link-f": KindSymlink, "link-out": KindSymlink, "link-d": KindSymlink,
			"link-outd": KindSymlink, "link-abs-d": KindSymlink, "dangling": KindSymlink,
		}
		if len(got) != len(want) {
			t.Fatalf("Entries = %v, want %v", got, want)
		}
		for n, k := range want {
			if got[n] != k {
				t.Errorf("entry %s: kind %v, want %v", n, got[n], k)
			}
		}
		// A second call re-reads from the start.
		ents2, err := rd.Entries()
		must(t, err)
		if len(ents2) != len(ents) {
			t.Fatalf("second Entries: %d entries, want %d", len(ents2), len(ents))
		}

		d, err := rd.OpenDir("d")
		must(t, err)
		defer d.Close()
		e, err := d.OpenDir("e")
		must(t, err)
		defer e.Close()

		f, id, err := r.OpenFile("d/e/h.txt")
		must(t, err)
		b, _ := io.ReadAll(f)
		f.Close()
		if string(b) != insideBytes || id.Kind() != KindFile {
			t.Fatalf("read %q, id %+v", b, id)
		}
		if f.Name() != "d/e/h.txt" {
			t.Errorf("Name() = %q", f.Name())
		}

		_, err = d.OpenDir("link-e")
		checkErr(t, err, ErrSymlink, root, outside)
		_, _, err = r.OpenFile("d/link-e")
		checkErr(t, err, ErrSymlink, root, outside)
		_, err = rd.OpenDir("link-outd")
		checkErr(t, err, ErrSymlink, root, outside)
		_, _, err = r.OpenFile("link-out")
		checkErr(t, err, ErrSymlink, root, outside)
		_, err = rd.OpenDir("f.txt")
		checkErr(t, err, ErrNotDir, root, outside)
		withTimeout(t, func() { _, _, err = r.OpenFile("fifo") })
		checkErr(t, err, ErrNotRegular, root, outside)
		_, _, err = r.OpenFile("d")
		checkErr(t, err, ErrNotRegular, root, outside)
		_, _, err = r.OpenFile("nope")
		checkErr(t, err, ErrNotExist, root, outside)
		for _, bad := range []string{"", ".", "..", "e/h.txt"} {
			if _, err := d.OpenDir(bad); err == nil {
				t.Errorf("OpenDir(%q) succeeded", bad)
			}
			if _, err := d.Stat(bad); err == nil {
				t.Errorf("Stat(%q) succeeded", bad)
			}
		}

		for name, k := range map[string]Kind{"link-e": KindSymlink, "e": KindDir, "g.txt": KindFile} {
			id, err := d.Stat(name)
			must(t, err)
			if id.Kind() != k {
				t.Errorf("Stat(%s).Kind() = %v, want %v", name, id.Kind(), k)
			}
		}
		id, err = rd.Stat("fifo")
		must(t, err)
		if id.Kind() != KindOther {
			t.Errorf("fifo kind %v", id.Kind())
		}
		_, err = d.Stat("nope")
		checkErr(t, err, ErrNotExist, root, outside)

		must(t, e.Close())
		if err := e.Close(); err == nil {
			t.Error("double Close succeeded")
		}
		if _, err := e.OpenDir("f"); err == nil {
			t.Error("OpenDir on closed Dir succeeded")
		}
		if _, err := e.Entries(); err == nil {
			t.Error("Entries on closed Dir succeeded")
		}
	})
}

// TestParseDirentsUnknown covers DT_UNKNOWN resolution, which real file
// systems used in tests rarely produce.
func TestParseDirentsUnknown(t *testing.T) {
	root, _ := fixture(t)
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	must(t, err)
	defer unix.Close(fd)

	var buf []byte
	add := func(ino uint64, name string, typ byte) {
		reclen := (direntNameOff + len(name) + 1 + 7) &^ 7
		rec := make([]byte, reclen)
		binary.NativeEndian.PutUint64(rec, ino)
		binary.NativeEndian.PutUint16(rec[direntReclenOff:], uint16(reclen))
		rec[direntTypeOff] = typ
		copy(rec[direntNameOff:], name)
		buf = append(buf, rec...)
	}
	add(1, ".", unix.DT_DIR)
	add(1, "..", unix.DT_DIR)
	add(2, "f.txt", unix.DT_UNKNOWN)
	add(3, "d", unix.DT_UNKNOWN)
	add(4, "link-d", unix.DT_UNKNOWN)
	add(5, "fifo", unix.DT_UNKNOWN)
	add(6, "vanished", unix.DT_UNKNOWN)
	add(0, "deleted", unix.DT_REG)
	add(7, "sock", unix.DT_SOCK)

	ents, err := parseDirents(fd, buf, nil)
	must(t, err)
	want := []Entry{{"f.txt", KindFile}, {"d", KindDir}, {"link-d", KindSymlink}, {"fifo", KindOther}, {"sock", KindOther}}
	if len(ents) != len(want) {
		t.Fatalf("got %v, want %v", ents, want)
	}
	for i := range want {
		if ents[i] != want[i] {
			t.Errorf("entry %d = %v, want %v", i, ents[i], want[i])
		}
	}
	if _, err := parseDirents(fd, buf[:10], nil); err == nil {
		t.Error("short buffer accepted")
	}
}

func TestOpenRoot(t *testing.T) {
	root, outside := fixture(t)
	_, err := Open(filepath.Join(root, "f.txt"))
	checkErr(t, err, ErrNotDir, root, outside)
	_, err = Open(filepath.Join(root, "nope"))
	checkErr(t, err, ErrNotExist, root, outside)

	_, err = Open(filepath.Join(root, "f.txt", "sub"))
	checkErr(t, err, ErrNotExist, root, outside)
	// The root itself must not be a link, trailing slash or not; a link
	// among its ancestors is the operator's choice and is followed.
	for _, p := range []string{"link-outd", "link-outd/", "link-d//", "dangling"} {
		_, err = Open(filepath.Join(root, p) + strings.Repeat("/", strings.Count(p, "/")))
		checkErr(t, err, ErrSymlink, root, outside)
	}
	r, err := Open(filepath.Join(root, "link-d", "e") + "/")
	must(t, err)
	must(t, r.Close())
	r, err = Open(outside + "/")
	must(t, err)
	f, _, err := r.OpenFile("secret.txt")
	must(t, err)
	f.Close()
	must(t, r.Close())
	if err := r.Close(); err == nil {
		t.Error("double Close succeeded")
	}
	if _, _, err := r.OpenFile("secret.txt"); err == nil {
		t.Error("OpenFile on closed Root succeeded")
	}
	if err := r.WriteFileAtomic("x", nil); err == nil {
		t.Error("WriteFileAtomic on closed Root succeeded")
	}
}

func noTemp(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	must(t, err)
	for _, e := range ents {
		if IsTempName(e.Name()) || strings.HasPrefix(e.Name(), TempPrefix) {
			t.Fatalf("temp file %s left behind", e.Name())
		}
	}
}

func readString(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	must(t, err)
	return string(b)
}

func TestIsTempName(t *testing.T) {
	for name, want := range map[string]bool{
		TempPrefix + "0123abcd" + TempSuffix: true,
		TempPrefix + TempSuffix:              false,
		TempPrefix + "x":                     false,
		"x" + TempSuffix:                     false,
		"file.txt":                           false,
	} {
		if got := IsTempName(name); got != want {
			t.Errorf("IsTempName(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestSwapAncestorRace swaps an ancestor directory with a symlink to an
// outside directory while OpenFile runs in a loop: outside bytes must never
// be returned.
func TestSwapAncestorRace(t *testing.T) {
	modes(t, func(t *testing.T, r *Root, root, outside string) {
		// root/a/b/f = inside; outside/b/f = OUTSIDE.
		must(t, os.MkdirAll(filepath.Join(root, "a", "b"), 0o755))
		must(t, os.WriteFile(filepath.Join(root, "a", "b", "f"), []byte(insideBytes), 0o644))
		must(t, os.MkdirAll(filepath.Join(outside, "b"), 0o755))
		must(t, os.WriteFile(filepath.Join(outside, "b", "f"), []byte(outsideBytes), 0o644))

		a, real := filepath.Join(root, "a"), filepath.Join(root, "a.real")
		var stop atomic.Bool
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				if os.Rename(a, real) != nil {
					continue
				}
				os.Symlink(outside, a)
				runtime.Gosched()
				os.Remove(a)
				os.Rename(real, a)
				runtime.Gosched()
			}
		}()
		var ok, refused int
		for range 2000 {
			f, _, err := r.OpenFile("a/b/f")
			if err == nil {
				b, rerr := io.ReadAll(f)
				f.Close()
				must(t, rerr)
				if string(b) != insideBytes {
					stop.Store(true)
					wg.Wait()
					t.Fatalf("read %q through a swapped ancestor", b)
				}
				ok++
				continue
			}
			if !errors.Is(err, ErrSymlink) && !errors.Is(err, ErrNotExist) {
				stop.Store(true)
				wg.Wait()
				t.Fatalf("unexpected error %v", err)
			}
			noHostPath(t, err, root, outside)
			refused++
		}
		stop.Store(true)
		wg.Wait()
		t.Logf("ok=%d refused=%d", ok, refused)
	})
}

// TestConcurrentClose checks that Close racing with operations is safe
// (run with -race).
func TestConcurrentClose(t *testing.T) {
	root, _ := fixture(t)
	r, err := Open(root)
	must(t, err)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				if f, _, err := r.OpenFile("d/e/h.txt"); err == nil {
					f.Close()
				}
			}
		}()
	}
	time.Sleep(time.Millisecond)
	must(t, r.Close())
	wg.Wait()
}

func BenchmarkOpenFile(b *testing.B) {
	root, _ := fixture(b)
	for _, walk := range walkModes {
		mode := "openat2"
		if walk {
			mode = "walk"
		}
		b.Run(mode, func(b *testing.B) {
			r, err := Open(root)
			must(b, err)
			defer r.Close()
			if walk {
				r.setForceWalk(true)
			} else if !r.UsesOpenat2() {
				b.Skip("openat2 not available")
			}
			b.ReportAllocs()
			for b.Loop() {
				f, _, err := r.OpenFile("d/e/h.txt")
				if err != nil {
					b.Fatal(err)
				}
				f.Close()
			}
		})
	}
	b.Run("os.Open", func(b *testing.B) {
		p := filepath.Join(root, "d", "e", "h.txt")
		b.ReportAllocs()
		for b.Loop() {
			f, err := os.Open(p)
			if err != nil {
				b.Fatal(err)
			}
			f.Close()
		}
	})
}

// fstatIdentity is the Identity fstat gives of an open file.
func fstatIdentity(f *os.File) (Identity, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return Identity{}, err
	}
	var st unix.Stat_t
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = unix.Fstat(int(fd), &st) }); err != nil {
		return Identity{}, err
	}
	return identityOf(&st), serr
}
