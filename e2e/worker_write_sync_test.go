//go:build linux

package e2e

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/fsmcp/fsmcp/e2e/internal/fusefs"
	"github.com/fsmcp/fsmcp/worker/confine"
)

// tempNames lists the temporary write files in dir.
func tempNames(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var temps []string
	for _, e := range es {
		if confine.IsTempName(e.Name()) {
			temps = append(temps, e.Name())
		}
	}
	return temps
}

// TestWriteKilledWhileSyncing: a worker killed while its write waits for
// the disk (an fsync that does not return, served by FUSE) leaves nothing
// in the root where the filesystem makes O_TMPFILE files: the new file has
// no name until it is complete. Where it cannot, the write goes through a
// named temporary file, which the kill leaves behind (no tool serves it;
// see TestAttackWriteKilled), as does the portable backend, which has no
// O_TMPFILE. Either way the destination keeps its bytes.
func TestWriteKilledWhileSyncing(t *testing.T) {
	tests := []struct {
		name      string
		tmpfile   bool
		wantTemps int
	}{
		{"O_TMPFILE", true, 0},
		{"no O_TMPFILE", false, 1},
	}
	if portableBackend {
		tests[0].wantTemps = 1
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			host, mnt := t.TempDir(), t.TempDir()
			writeFile(t, filepath.Join(host, "keep.txt"), "old\n")
			root := fusefs.NewSyncGate(t, host, tc.tmpfile, true, true)
			fusefs.Mount(t, mnt, root)
			gate := fusefs.Gate(root)
			cmd := exec.Command(workerBin, "--root", mnt, "--include", "**")
			cmd.Env = []string{}
			cmd.Stdout = io.Discard
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			req := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{` + newMeta + `,"name":"write_text_file","arguments":{"path":"keep.txt","content":"new\n"}}}` + "\n"
			if _, err := stdin.Write([]byte(req)); err != nil {
				t.Fatal(err)
			}
			select {
			case <-gate.Waiting:
			case <-time.After(10 * time.Second):
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
				t.Fatal("the write never reached its fsync")
			}
			// SIGKILL, then let the fsync go: the process dies before it
			// runs another system call.
			_ = cmd.Process.Kill()
			gate.Release()
			_ = cmd.Wait()
			if temps := tempNames(t, host); len(temps) != tc.wantTemps {
				t.Errorf("the killed write left %v in the root, want %d temporary files", temps, tc.wantTemps)
			}
			if b, err := os.ReadFile(filepath.Join(host, "keep.txt")); err != nil || string(b) != "old\n" {
				t.Errorf("keep.txt holds %q (%v), want its old bytes", b, err)
			}
		})
	}
}

// TestWriteWithoutTmpfile: where the filesystem cannot make O_TMPFILE
// files, or makes them but cannot finish one (go-fuse's own loopback
// cannot set its attributes or link it), a write still succeeds through a
// named temporary file, replaces the file with its mode kept, creates a
// new one with mode 0600, and leaves no temporary file. A root whose
// O_TMPFILE file could not be finished asks for no more; the portable
// backend asks for none.
func TestWriteWithoutTmpfile(t *testing.T) {
	tests := []struct {
		name          string
		tmpfile, link bool
		tmpfiles      int32 // asked of the filesystem by the two writes; -1: any
	}{
		{"no O_TMPFILE", false, false, -1},
		{"O_TMPFILE not finished", true, false, 1},
		{"O_TMPFILE", true, true, 2},
	}
	if portableBackend {
		for i := range tests {
			tests[i].tmpfiles = 0
		}
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			host, mnt := t.TempDir(), t.TempDir()
			writeFile(t, filepath.Join(host, "old.txt"), "old\n")
			if err := os.Chmod(filepath.Join(host, "old.txt"), 0o640); err != nil {
				t.Fatal(err)
			}
			root := fusefs.NewSyncGate(t, host, tc.tmpfile, tc.link, false)
			fusefs.Mount(t, mnt, root)
			cs := worker(t, mnt, "--include", "**")
			for _, w := range []struct {
				path string
				mode os.FileMode
			}{{"old.txt", 0o640}, {"new.txt", 0o600}} {
				ok(t, cs, "write_text_file", map[string]any{"path": w.path, "content": "written\n"})
				b, err := os.ReadFile(filepath.Join(host, w.path))
				if err != nil || string(b) != "written\n" {
					t.Errorf("%s holds %q (%v), want the written text", w.path, b, err)
				}
				if fi, err := os.Stat(filepath.Join(host, w.path)); err != nil || fi.Mode().Perm() != w.mode {
					t.Errorf("%s: mode %v (%v), want %v", w.path, fi.Mode().Perm(), err, w.mode)
				}
			}
			if temps := tempNames(t, host); len(temps) != 0 {
				t.Errorf("temporary files left: %v", temps)
			}
			if got := fusefs.Gate(root).Tmpfiles.Load(); tc.tmpfiles >= 0 && got != tc.tmpfiles {
				t.Errorf("the writes asked for %d O_TMPFILE files, want %d", got, tc.tmpfiles)
			}
		})
	}
}
