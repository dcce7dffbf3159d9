//go:build linux

package e2e

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sys/unix"

	"github.com/fsmcp/fsmcp/e2e/internal/fusefs"
)

// raceMount mounts a SyncGate that holds fsyncs over a fresh host
// directory owned by uid:gid, at a mount point that uid can reach, and
// returns both paths and the gate.
func raceMount(t *testing.T, uid, gid int, plain bool) (host, mnt string, gate *fusefs.SyncGate) {
	t.Helper()
	base := t.TempDir()
	for _, d := range []string{filepath.Dir(base), base} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	host, mnt = filepath.Join(base, "host"), filepath.Join(base, "mnt")
	for _, d := range []string{host, mnt} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chown(host, uid, gid); err != nil {
		t.Fatal(err)
	}
	root := fusefs.NewSyncGate(t, host, true, true, true)
	gate = fusefs.Gate(root)
	gate.PlainRenameOnly.Store(plain)
	fusefs.Mount(t, mnt, root)
	return host, mnt, gate
}

// swapAt puts the entry made by make at name in dir by renaming it over
// name, as an editor saving a file or an attacker does.
func swapAt(t *testing.T, dir, name string, make func(p string) error) {
	t.Helper()
	p := filepath.Join(dir, "swap-"+name)
	if err := make(p); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(p, filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
}

// TestWriteRaceAtDestination holds a write at its temp file's fsync (a
// FUSE filesystem whose fsync waits), between the destination check and
// the replacement, puts another entry at the destination name, and lets
// the write go on. A FIFO, or a file the worker's user may not write, is
// refused as if it had been there at the check, and left in place
// unchanged; a writable file saved there meanwhile is replaced and its
// mode and attributes kept. Each case runs with renameat2's flags and on
// a filesystem that refuses them.
func TestWriteRaceAtDestination(t *testing.T) {
	needRoot(t)
	const dst = "dst.md"
	tests := []struct {
		name  string
		uid   int // the worker's uid and gid
		old   bool
		swap  func(t *testing.T, mnt string)
		want  string // the error text, or "" for success
		check func(t *testing.T, host string)
	}{
		{"a FIFO swapped in", 0, true, func(t *testing.T, mnt string) {
			swapAt(t, mnt, dst, func(p string) error { return unix.Mkfifo(p, 0o666) })
		}, errWriteDest, nil},
		{"a FIFO where there was nothing", 0, false, func(t *testing.T, mnt string) {
			if err := unix.Mkfifo(filepath.Join(mnt, dst), 0o666); err != nil {
				t.Fatal(err)
			}
		}, errWriteDest, nil},
		{"a directory where there was nothing", 0, false, func(t *testing.T, mnt string) {
			if err := os.Mkdir(filepath.Join(mnt, dst), 0o755); err != nil {
				t.Fatal(err)
			}
		}, errWriteDest, nil},
		{"another user's read-only file swapped in", nobody, true, func(t *testing.T, mnt string) {
			swapAt(t, mnt, dst, func(p string) error { return os.WriteFile(p, []byte("root's\n"), 0o644) })
		}, errWriteDest, func(t *testing.T, host string) {
			if b, err := os.ReadFile(filepath.Join(host, dst)); err != nil || string(b) != "root's\n" {
				t.Errorf("%s holds %q (%v), want root's file unchanged", dst, b, err)
			}
		}},
		{"a writable file saved meanwhile", 0, true, func(t *testing.T, mnt string) {
			swapAt(t, mnt, dst, func(p string) error {
				if err := os.WriteFile(p, []byte("saved\n"), 0o600); err != nil {
					return err
				}
				if err := os.Chmod(p, 0o640); err != nil {
					return err
				}
				return unix.Setxattr(p, "user.editor", []byte("kept"), 0)
			})
		}, "", func(t *testing.T, host string) {
			p := filepath.Join(host, dst)
			if b, err := os.ReadFile(p); err != nil || string(b) != "new\n" {
				t.Errorf("%s holds %q (%v), want the new text", dst, b, err)
			}
			var st unix.Stat_t
			if err := unix.Lstat(p, &st); err != nil || st.Mode&0o7777 != 0o640 {
				t.Errorf("mode %o (%v), want the saved file's 0640", st.Mode&0o7777, err)
			}
			if got := xattrs(t, p); got != "[user.editor=6b657074]" {
				t.Errorf("attributes %s, want the saved file's", got)
			}
		}},
	}
	for _, tt := range tests {
		for _, plain := range []bool{false, true} {
			way := "/renameat2"
			if plain {
				way = "/plain rename"
			}
			t.Run(tt.name+way, func(t *testing.T) {
				host, mnt, gate := raceMount(t, tt.uid, tt.uid, plain)
				if tt.old {
					plant(t, filepath.Join(host, dst), "old\n", tt.uid, tt.uid, 0o644)
				}
				var cs *mcp.ClientSession
				if tt.uid == 0 {
					cs = worker(t, mnt, "--include", "**")
				} else {
					cs = workerAs(t, uint32(tt.uid), uint32(tt.uid), mnt, "--include", "**")
				}
				var swapped *unix.Stat_t
				r := gatedWrite(t, cs, gate, func() {
					tt.swap(t, mnt)
					swapped = lstatOrNil(t, filepath.Join(host, dst))
				}, map[string]any{"path": dst, "content": "new\n"})
				after := lstatOrNil(t, filepath.Join(host, dst))
				switch {
				case tt.want == "" && r.isError:
					t.Errorf("write failed: %s", r.text)
				case tt.want != "" && (!r.isError || r.text != tt.want):
					t.Errorf("write: isError=%v %q, want %q", r.isError, r.text, tt.want)
				case tt.want != "" && (after == nil || after.Ino != swapped.Ino || after.Mode != swapped.Mode || after.Uid != swapped.Uid):
					t.Errorf("%s is %+v, want the entry swapped in, %+v", dst, after, swapped)
				}
				if tt.check != nil {
					tt.check(t, host)
				}
				// A write over a file asks the filesystem for renameat2's
				// flags: on the plain one once (refused), then never
				// again. (Where the name is taken, the kernel refuses
				// RENAME_NOREPLACE itself.)
				if n := gate.FlagRenames.Load(); tt.old && (n == 0 || plain && n != 1) {
					t.Errorf("%d renames with flags reached the filesystem", n)
				}
				if temps := tempNames(t, host); len(temps) != 0 {
					t.Errorf("temporary files left: %v", temps)
				}
			})
		}
	}
}

// gatedWrite calls write_text_file with args while the gate holds fsyncs:
// once the write waits at its temp file's fsync, between, then the gate
// lets it go. It returns the write's result.
func gatedWrite(t *testing.T, cs *mcp.ClientSession, gate *fusefs.SyncGate, between func(), args map[string]any) *result {
	t.Helper()
	type answer struct {
		r   *result
		err error
	}
	done := make(chan answer, 1)
	go func() {
		r, err := tryCall(cs, "write_text_file", args)
		done <- answer{r, err}
	}()
	select {
	case <-gate.Waiting:
	case a := <-done:
		t.Fatalf("the write answered (%+v, %v) before it reached its fsync", a.r, a.err)
	case <-time.After(20 * time.Second):
		t.Fatal("the write never reached its fsync")
	}
	between()
	gate.Release()
	select {
	case a := <-done:
		if a.err != nil {
			t.Fatalf("write_text_file: %v", a.err)
		}
		return a.r
	case <-time.After(20 * time.Second):
		t.Fatal("the write did not answer within 20s of its fsync's release")
	}
	return nil
}

// lstatOrNil is the Lstat of p, or nil when there is nothing there.
func lstatOrNil(t *testing.T, p string) *unix.Stat_t {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		t.Fatal(err)
	}
	return &st
}
