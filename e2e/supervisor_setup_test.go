//go:build linux

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// supBins are the binaries the supervisor tests run: the supervisor, the
// worker it launches (the real fsmcp-worker once it builds), and the
// test-only plugin worker that can hold a call open.
type supBins struct {
	supervisor string
	worker     string
	testWorker string
	bareRelay  string // supervisor/internal/barerelay
	floor      string // e2e/internal/floorsearch
	real       bool   // worker is the real fsmcp-worker
}

var (
	supBinsOnce sync.Once
	supBinsVal  supBins
	supBinsErr  error
)

// buildSupervisorBins returns the binaries: the supervisor and the real
// worker come from TestMain (supervisorBin, workerBin); the test-only
// plugin worker is built here once per test process.
func buildSupervisorBins(t testing.TB) supBins {
	t.Helper()
	supBinsOnce.Do(func() {
		// Inside TestMain's directory, which goes when the tests end.
		dir, err := os.MkdirTemp(filepath.Dir(workerBin), "supervisor-")
		if err != nil {
			supBinsErr = err
			return
		}
		args := []string{"build", "-tags=" + buildTags}
		if raceEnabled {
			args = append(args, "-race")
		}
		// Under -race the supervisor is rebuilt with the detector as well.
		pkgs := []string{"./supervisor/internal/testworker", "./supervisor/internal/barerelay", "./e2e/internal/floorsearch"}
		sup := supervisorBin
		if raceEnabled {
			pkgs = append(pkgs, "./cmd/fsmcp-supervisor")
			sup = filepath.Join(dir, "fsmcp-supervisor")
		}
		args = append(args, "-o", dir+string(filepath.Separator))
		cmd := exec.Command("go", append(args, pkgs...)...)
		cmd.Dir = ".."
		if out, err := cmd.CombinedOutput(); err != nil {
			supBinsErr = &commandError{cmd: cmd.Args, dir: ".", err: err, out: string(out)}
			return
		}
		supBinsVal = supBins{
			supervisor: sup,
			worker:     workerBin,
			testWorker: filepath.Join(dir, "testworker"),
			bareRelay:  filepath.Join(dir, "barerelay"),
			floor:      filepath.Join(dir, "floorsearch"),
			real:       true,
		}
	})
	if supBinsErr != nil {
		t.Fatal(supBinsErr)
	}
	return supBinsVal
}

// commandError is a set-up command that failed, as it was run and where
// (dir, from the module root), so it can be run again by hand, with its
// output.
type commandError struct {
	cmd []string
	dir string
	err error
	out string
}

func (e *commandError) Error() string {
	return strings.Join(e.cmd, " ") + " (in " + e.dir + "): " + e.err.Error() + "\n" + e.out
}

// syncBuffer is a bytes.Buffer safe for a writer goroutine and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// supervisorProc is a running fsmcp-supervisor with a client session on its
// stdio.
type supervisorProc struct {
	cmd     *exec.Cmd
	session *mcp.ClientSession
	stdin   io.WriteCloser
	stdout  io.ReadCloser
	lines   *bufio.Reader // stdout, once read line by line (roundTripLine)
	stderr  *syncBuffer
	done    chan struct{}
	waitErr error
}

// startSupervisor runs the supervisor on manifest with the worker binary
// and extra environment, and connects a client. The process is stopped at
// cleanup.
func startSupervisor(t testing.TB, manifest, worker string, env ...string) *supervisorProc {
	t.Helper()
	return startSupervisorArgs(t, []string{"--manifest", manifest, "--worker", worker}, env...)
}

// startSupervisorArgs is startSupervisor with the whole command line.
func startSupervisorArgs(t testing.TB, args []string, env ...string) *supervisorProc {
	t.Helper()
	p := launchSupervisorArgs(t, args, env...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
	s, err := client.Connect(ctx, &mcp.IOTransport{Reader: p.stdout, Writer: p.stdin}, nil)
	if err != nil {
		t.Fatalf("connect to supervisor: %v\nstderr:\n%s", err, p.stderr)
	}
	p.session = s
	return p
}

func launchSupervisor(t testing.TB, manifest, worker string, env ...string) *supervisorProc {
	t.Helper()
	return launchSupervisorArgs(t, []string{"--manifest", manifest, "--worker", worker}, env...)
}

func launchSupervisorArgs(t testing.TB, args []string, env ...string) *supervisorProc {
	t.Helper()
	return launchSupervisorIn(t, "", args, env...)
}

// launchSupervisorIn is launchSupervisorArgs in the working directory dir
// ("": the test's).
func launchSupervisorIn(t testing.TB, dir string, args []string, env ...string) *supervisorProc {
	t.Helper()
	bins := buildSupervisorBins(t)
	cmd := exec.Command(bins.supervisor, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	// Its own process group, so a test can signal the whole group.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p := &supervisorProc{cmd: cmd, stderr: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stderr = p.stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.stdin, p.stdout = in, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		if p.session != nil {
			_ = p.session.Close()
		}
		_ = in.Close()
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-p.done
			t.Errorf("supervisor did not exit within 10s of end of input\nstderr:\n%s", p.stderr)
		}
		if strings.Contains(p.stderr.String(), "DATA RACE") {
			t.Errorf("race detected in the supervisor or a worker:\n%s", p.stderr)
		}
	})
	return p
}

// wait waits up to d for the supervisor to exit and returns its exit code.
func (p *supervisorProc) wait(t testing.TB, d time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(d):
		t.Fatalf("supervisor still running after %s\nstderr:\n%s", d, p.stderr)
	}
	return p.cmd.ProcessState.ExitCode()
}

// logged reports whether the supervisor's stderr holds line within 5 s.
// A line logged just before an event the test sees another way (a call's
// answer, a process gone) can still be in the pipe when the test looks.
func (p *supervisorProc) logged(line string) bool {
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(p.stderr.String(), line) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

// workerPIDs lists the supervisor's child processes.
func (p *supervisorProc) workerPIDs(t testing.TB) []int {
	t.Helper()
	return childPIDs(t, p.cmd.Process.Pid)
}

// childPIDs reads /proc for the processes whose parent is pid.
func childPIDs(t testing.TB, pid int) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid(n) == pid {
			out = append(out, n)
		}
	}
	return out
}

func ppid(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return -1
	}
	// Fields after the parenthesised command name: state ppid ...
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return -1
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return -1
	}
	n, _ := strconv.Atoi(f[1])
	return n
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && len(s) > i+2 && s[i+2] != 'Z'
}

// workerOf finds the supervisor's worker serving root (by its --name flag).
func (p *supervisorProc) workerOf(t testing.TB, root string) int {
	t.Helper()
	if pids := p.workersOf(t, root); len(pids) > 0 {
		return pids[0]
	}
	t.Fatalf("no worker for root %s among %v", root, p.workerPIDs(t))
	return 0
}

// workersOf lists the supervisor's child processes started for root.
func (p *supervisorProc) workersOf(t testing.TB, root string) []int {
	t.Helper()
	var pids []int
	for _, pid := range p.workerPIDs(t) {
		args := procCmdline(pid)
		for i, a := range args {
			if a == "--name" && i+1 < len(args) && args[i+1] == root {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

func procCmdline(pid int) []string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
}

func procEnviron(pid int) []string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if len(b) == 0 {
		return nil
	}
	return strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
}

// exampleManifest copies manifests/NAME into a fresh folder and creates the
// given sub-folders next to it; it returns the manifest's path.
func exampleManifest(t testing.TB, name string, dirs ...string) (string, string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "manifests", name))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, d := range dirs {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	file := filepath.Join(dir, name)
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return file, dir
}

func writeFile(t testing.TB, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// eventually polls cond every 20ms until it holds or d passes.
func eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// firstLine returns s up to its first newline.
func firstLine(s string) string {
	sc := bufio.NewScanner(strings.NewReader(s))
	if sc.Scan() {
		return sc.Text()
	}
	return ""
}

// raceEnabled is set when the tests run under -race (supervisor_race_test.go),
// so the test-only worker is built with the race detector too.
var raceEnabled bool
