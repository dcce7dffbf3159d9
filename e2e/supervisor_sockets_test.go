//go:build linux

package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// listeningPaths are the paths of the Unix sockets process pid listens
// on, from its descriptors and its /proc/PID/net/unix.
func listeningPaths(t *testing.T, pid int) []string {
	t.Helper()
	proc := "/proc/" + strconv.Itoa(pid)
	fds, err := os.ReadDir(proc + "/fd")
	if err != nil {
		t.Fatal(err)
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		link, err := os.Readlink(proc + "/fd/" + fd.Name())
		if ino, ok := strings.CutPrefix(link, "socket:["); err == nil && ok {
			inodes[strings.TrimSuffix(ino, "]")] = true
		}
	}
	table, err := os.ReadFile(proc + "/net/unix")
	if err != nil {
		t.Fatal(err)
	}
	// Num RefCount Protocol Flags Type St Inode [Path]; flags 00010000 is
	// __SO_ACCEPTCON, a listening socket.
	var paths []string
	for _, line := range strings.Split(string(table), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) == 8 && f[3] == "00010000" && inodes[f[6]] {
			paths = append(paths, f[7])
		}
	}
	return paths
}

// TestSupervisorLeavesNoSocket: each worker's go-plugin socket is made in
// a directory of its own under the supervisor's temporary directory, and
// the supervisor removes it once connected, so nothing is left whether a
// worker is killed and restarted, the supervisor stops, or the supervisor
// is killed. go-plugin unlinks the socket only when the worker returns
// from serving, and workers are ended with SIGKILL: before this every
// worker start left a socket file in /tmp.
func TestSupervisorLeavesNoSocket(t *testing.T) {
	bins := buildSupervisorBins(t)
	endInput := func(p *supervisorProc) { _ = p.stdin.Close() }
	tests := []struct {
		name   string
		worker string
		stop   func(p *supervisorProc)
		deep   bool // $TMPDIR too deep for a socket path: /tmp is used
	}{
		{"real worker, end of input", bins.worker, endInput, false},
		{"test worker, end of input", bins.testWorker, endInput, false},
		{"real worker, supervisor killed", bins.worker, func(p *supervisorProc) { _ = p.cmd.Process.Kill() }, false},
		{"real worker, deep TMPDIR", bins.worker, endInput, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Short: a socket's path must fit in 108 bytes, and the
			// test's own temporary directories carry its name.
			tmp, err := os.MkdirTemp("/tmp", "sock")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = os.RemoveAll(tmp) })
			base := tmp
			if tc.deep {
				tmp = filepath.Join(tmp, strings.Repeat("d", 80))
				if err := os.Mkdir(tmp, 0o700); err != nil {
					t.Fatal(err)
				}
				base = "/tmp"
			}
			file, dir := exampleManifest(t, "reader-writer.yaml", "workspace", "outbox")
			writeFile(t, filepath.Join(dir, "workspace", "a.txt"), "a\n")
			p := startSupervisor(t, file, tc.worker, "TMPDIR="+tmp)
			// Each serving worker listens in a directory of its own
			// under base, which is gone, and tmp is empty.
			check := func(when string) {
				t.Helper()
				workers := p.workerPIDs(t)
				if len(workers) != 2 {
					t.Fatalf("%s: workers %v, want 2", when, workers)
				}
				seen := map[string]bool{}
				for _, w := range workers {
					paths := listeningPaths(t, w)
					if len(paths) != 1 || !strings.HasPrefix(paths[0], filepath.Join(base, "fsmcp-")) || seen[filepath.Dir(paths[0])] {
						t.Fatalf("%s: worker %d listens on %v, want one socket in a directory of its own under %s", when, w, paths, base)
					}
					seen[filepath.Dir(paths[0])] = true
					if _, err := os.Lstat(filepath.Dir(paths[0])); !os.IsNotExist(err) {
						t.Fatalf("%s: worker %d's socket directory is still there (%v), want it removed once connected", when, w, err)
					}
				}
				if left, _ := os.ReadDir(tmp); len(left) != 0 {
					t.Fatalf("%s: %s holds %v, want nothing once the workers are connected", when, tmp, left)
				}
			}
			check("started")
			old := p.workerOf(t, "reader")
			if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			// A call that succeeds is served by the new worker.
			eventually(t, 15*time.Second, "the reader to come back", func() bool {
				return !callTool(t, p.session, "reader_read_text_file", map[string]any{"path": "a.txt"}).IsError
			})
			if p.workerOf(t, "reader") == old {
				t.Fatal("the reader's worker was not restarted")
			}
			check("after the reader's restart")
			tc.stop(p)
			p.wait(t, 10*time.Second)
			if left, _ := os.ReadDir(tmp); len(left) != 0 {
				t.Errorf("after the supervisor stopped, %s holds %v, want nothing", tmp, left)
			}
		})
	}
}

// TestSupervisorTempDirMissing: with no temporary directory for the
// workers' sockets, the supervisor says so in one line and exits 1 rather
// than restarting workers that cannot listen.
func TestSupervisorTempDirMissing(t *testing.T) {
	bins := buildSupervisorBins(t)
	file, _ := exampleManifest(t, "reader-writer.yaml", "workspace", "outbox")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bins.supervisor, "--manifest", file, "--worker", bins.worker)
	cmd.Env = []string{"TMPDIR=" + filepath.Join(t.TempDir(), "gone")}
	cmd.Stdin = strings.NewReader("")
	out, _ := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); code != 1 {
		t.Fatalf("exit %d, want 1; output:\n%s", code, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "worker did not start: create the worker's socket directory") {
		t.Errorf("output %q, want one line saying the socket directory could not be made", out)
	}
}
