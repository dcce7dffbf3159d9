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

// maxSocketPath is the longest path a Unix socket can be bound to on
// macOS: its sun_path holds 104 bytes with the terminating NUL (Linux's
// holds 108).
const maxSocketPath = 103

// longestSocketBase is the longest temporary directory under which a
// worker's socket path, a directory fsmcp-N and a file pluginN with N up
// to 10 digits each, fits maxSocketPath.
const longestSocketBase = maxSocketPath - len("/fsmcp-4294967295/plugin4294967295")

// TestSupervisorLeavesNoSocket: each worker's go-plugin socket is made in
// a directory of its own under the supervisor's temporary directory, and
// the supervisor removes it once connected, so nothing is left whether a
// worker is killed and restarted, the supervisor stops, or the supervisor
// is killed (go-plugin unlinks the socket only when the worker returns
// from serving, and workers are ended with SIGKILL). Every socket path
// fits macOS's sun_path, whose $TMPDIR is long: under a temporary
// directory too deep for that, the sockets go under /tmp.
func TestSupervisorLeavesNoSocket(t *testing.T) {
	bins := buildSupervisorBins(t)
	endInput := func(p *supervisorProc) { _ = p.stdin.Close() }
	tests := []struct {
		name   string
		worker string
		stop   func(p *supervisorProc)
		// tmpLen, when not 0, is the length of $TMPDIR's path: the
		// longest whose sockets fit macOS's 104-byte sun_path, and
		// longer ones, whose sockets go under /tmp.
		tmpLen int
	}{
		{"real worker, end of input", bins.worker, endInput, 0},
		{"test worker, end of input", bins.testWorker, endInput, 0},
		{"real worker, supervisor killed", bins.worker, func(p *supervisorProc) { _ = p.cmd.Process.Kill() }, 0},
		{"real worker, longest TMPDIR used", bins.worker, endInput, longestSocketBase},
		{"real worker, TMPDIR one byte too deep", bins.worker, endInput, longestSocketBase + 1},
		{"real worker, deep TMPDIR", bins.worker, endInput, 100},
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
			if tc.tmpLen != 0 {
				tmp = filepath.Join(tmp, strings.Repeat("d", tc.tmpLen-len(tmp)-1))
				if err := os.Mkdir(tmp, 0o700); err != nil {
					t.Fatal(err)
				}
			}
			base := tmp
			if tc.tmpLen > longestSocketBase {
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
					if len(paths[0]) > maxSocketPath {
						t.Fatalf("%s: worker %d listens on %s, %d bytes: past the %d that macOS's sun_path holds", when, w, paths[0], len(paths[0]), maxSocketPath)
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
