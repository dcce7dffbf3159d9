//go:build linux

package e2e

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fsmcp/fsmcp/e2e/internal/fusefs"
)

// lineProc is a process spoken to with raw JSON-RPC lines, its output read
// by one goroutine into a channel (so a test can also see that nothing
// comes).
type lineProc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string
	done  chan struct{}
}

func startLines(t *testing.T, bin string, args ...string) *lineProc {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = []string{}
	cmd.Stderr = &testWriter{t: t}
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &lineProc{cmd: cmd, stdin: stdin, lines: make(chan string, 1024), done: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
	}()
	go func() { _ = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.done
	})
	return p
}

func (p *lineProc) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(p.stdin, line+"\n"); err != nil {
		t.Fatal(err)
	}
}

// idReply is a response with its id kept as written.
type idReply struct {
	ID     json.RawMessage `json:"id"`
	Result *struct {
		IsError bool `json:"isError"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		StructuredContent json.RawMessage `json:"structuredContent"`
	} `json:"result"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func (r idReply) text() string {
	if r.Result == nil || len(r.Result.Content) == 0 {
		return ""
	}
	return r.Result.Content[0].Text
}

func (p *lineProc) recv(t *testing.T, within time.Duration) idReply {
	t.Helper()
	select {
	case l, ok := <-p.lines:
		if !ok {
			t.Fatal("output ended")
		}
		var r idReply
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("output line is not JSON: %q", l)
		}
		return r
	case <-time.After(within):
		t.Fatalf("no line within %s", within)
	}
	return idReply{}
}

// quiet fails if a line is written within d.
func (p *lineProc) quiet(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case l, ok := <-p.lines:
		if ok {
			t.Fatalf("unexpected line %q", l)
		}
	case <-time.After(d):
	}
}

// exitsWithin waits for the process to exit and returns how long it took.
func (p *lineProc) exitsWithin(t *testing.T, d time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	select {
	case <-p.done:
	case <-time.After(d):
		t.Fatalf("still running %s later", d)
	}
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("exit status %d, want 0", code)
	}
	return time.Since(start)
}

func rawCall(id, tool, args string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{` + newMeta + `,"name":"` + tool + `","arguments":` + args + `}}`
}

func rawCancel(id string) string {
	return `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + id + `,"reason":"test"}}`
}

// stuckMount mounts a fusefs.Stuck file system in a fresh directory.
func stuckMount(t testing.TB) (string, *fusefs.Stuck) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "share")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	s := fusefs.NewStuck(t)
	fusefs.Mount(t, dir, s)
	return dir, s
}

func waitBlocked(t testing.TB, s *fusefs.Stuck, n int32) {
	t.Helper()
	eventually(t, 10*time.Second, "the read to block in the file system", func() bool { return s.Blocked.Load() >= n })
}

// TestWorkerIDsExact: ids (strings and integers, however written) come
// back as the bytes they were sent as; a number with a fraction, which no
// answer may carry, is refused with -32600 and no id.
func TestWorkerIDsExact(t *testing.T) {
	root := tree(t, map[string]string{"a.txt": "hello"})
	p := startLines(t, workerBin, "--root", root, "--include", "**")
	for _, id := range []string{`9007199254740993`, `18446744073709551615`, `2.0`, `150e-1`, `1E400`, `-7`, `"x"`, `"\u00e9"`} {
		p.send(t, rawCall(id, "read_text_file", `{"path":"a.txt"}`))
		r := p.recv(t, 20*time.Second)
		if string(r.ID) != id || r.Result == nil || r.Result.IsError {
			t.Errorf("id %s answered with id %s, result %+v, error %+v", id, r.ID, r.Result, r.Error)
		}
	}
	p.send(t, rawCall(`1.5`, "read_text_file", `{"path":"a.txt"}`))
	if r := p.recv(t, 20*time.Second); r.ID != nil || r.Error == nil || r.Error.Code != -32600 {
		t.Errorf("id 1.5 answered with id %s, result %+v, error %+v; want -32600 without an id", r.ID, r.Result, r.Error)
	}
}

// TestWorkerStuckRead: with a read blocked in the kernel (a FUSE file
// whose reads never return), a duplicate of its id is refused, its
// cancellation sends nothing for it, other calls are answered, and end of
// input, SIGTERM or SIGINT end the process within its drain time.
func TestWorkerStuckRead(t *testing.T) {
	for _, stop := range []string{"end of input", "SIGTERM", "SIGINT"} {
		t.Run(stop, func(t *testing.T) {
			dir, s := stuckMount(t)
			p := startLines(t, workerBin, "--root", dir, "--include", "**")
			const id = `18446744073709551615`
			p.send(t, rawCall(id, "read_text_file", `{"path":"stuck.txt"}`))
			waitBlocked(t, s, 1)
			p.send(t, rawCall(id, "read_text_file", `{"path":"ok.txt"}`))
			if r := p.recv(t, 20*time.Second); string(r.ID) != id || r.Error == nil || r.Error.Code != -32600 {
				t.Fatalf("duplicate id answered id %s, error %+v, result %+v", r.ID, r.Error, r.Result)
			}
			p.send(t, rawCancel(id))
			p.send(t, rawCall(`1.0e1`, "read_text_file", `{"path":"ok.txt"}`))
			if r := p.recv(t, 20*time.Second); string(r.ID) != `1.0e1` || r.Result == nil || r.Result.IsError || !strings.Contains(string(r.Result.StructuredContent), "fine") {
				t.Fatalf("call after the cancellation: id %s, result %+v, error %+v", r.ID, r.Result, r.Error)
			}
			// A call still blocked that nobody cancelled.
			p.send(t, rawCall(`2`, "read_text_file", `{"path":"stuck.txt"}`))
			waitBlocked(t, s, 2)
			p.quiet(t, 300*time.Millisecond)
			switch stop {
			case "end of input":
				_ = p.stdin.Close()
			case "SIGTERM":
				_ = p.cmd.Process.Signal(syscall.SIGTERM)
			case "SIGINT":
				_ = p.cmd.Process.Signal(syscall.SIGINT)
			}
			took := p.exitsWithin(t, 20*time.Second)
			t.Logf("figures: worker with a read blocked in the kernel exited %s after %s (drain time 5s)", took.Round(time.Millisecond), stop)
			for l := range p.lines {
				var r idReply
				if json.Unmarshal([]byte(l), &r) == nil && string(r.ID) == id {
					t.Errorf("a line for the cancelled call: %s", l)
				}
			}
		})
	}
}

// TestWorkerStuckReadSignalled: a read blocked in the kernel stays blocked
// when the worker's threads get a signal they handle: the file system
// answers the interrupted read EINTR and the worker reads again, sending
// nothing for the call. The Go runtime sends such a signal itself (SIGURG
// preempts a goroutine): one reaching a thread as it entered its read of
// stuck.txt made TestWorkerCapStuckReads answer "path is not a readable
// regular file" now and then, while the file system answered an
// interrupted read EIO.
func TestWorkerStuckReadSignalled(t *testing.T) {
	dir, s := stuckMount(t)
	p := startLines(t, workerBin, "--root", dir, "--include", "**")
	p.send(t, rawCall("1", "read_text_file", `{"path":"stuck.txt"}`))
	waitBlocked(t, s, 1)
	for range 5 {
		signalThreads(t, p.cmd.Process.Pid, syscall.SIGURG)
		p.quiet(t, 50*time.Millisecond)
	}
	p.quiet(t, 200*time.Millisecond)
	if n := s.Interrupted.Load(); n < 1 {
		t.Fatalf("no read of stuck.txt was interrupted by the signals")
	}
	if n := s.Blocked.Load(); n != 1 {
		t.Fatalf("%d opens of stuck.txt were read, want 1 (the call's, read again after each interruption)", n)
	}
	p.send(t, rawCall("2", "read_text_file", `{"path":"ok.txt"}`))
	if r := p.recv(t, 20*time.Second); string(r.ID) != "2" || r.Result == nil || r.Result.IsError || !strings.Contains(string(r.Result.StructuredContent), "fine") {
		t.Fatalf("read of ok.txt: id %s, result %+v, error %+v", r.ID, r.Result, r.Error)
	}
	p.quiet(t, 200*time.Millisecond) // still nothing for call 1
}

// signalThreads sends sig to every thread of process pid, as the Go
// runtime sends SIGURG to the one thread it preempts.
func signalThreads(t *testing.T, pid int, sig syscall.Signal) {
	t.Helper()
	tasks, err := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "task"))
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		tid, err := strconv.Atoi(task.Name())
		if err != nil {
			t.Fatalf("thread %q of process %d: %v", task.Name(), pid, err)
		}
		if err := syscall.Tgkill(pid, tid, sig); err != nil && err != syscall.ESRCH {
			t.Fatalf("signal thread %d of process %d: %v", tid, pid, err)
		}
	}
}

// nextPageSettle is long enough for a next page scanned ahead of its
// request to have begun reading.
const nextPageSettle = 500 * time.Millisecond

// TestSearchTextPageEndsBeforeStuckFile: a search_text page that ends in
// its first file (its result limit reached there) answers, though the file
// after it, which the page took up on another goroutine to scan ahead, is
// one whose reads never return: the page does not wait for files it did
// not reach, as it never did before scanning ahead. The first file's reads
// wait until the read of stuck.txt has begun, so the page cannot end
// before. No next page is scanned ahead (a FUSE filesystem's inventory is
// never kept), so nothing else reads stuck.txt; the worker answers on.
func TestSearchTextPageEndsBeforeStuckFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "share")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	s := fusefs.NewStuck(t)
	s.Gated = map[string][]byte{"a.txt": []byte("needle one\nneedle two\n")}
	fusefs.Mount(t, dir, s)
	p := startLines(t, workerBin, "--root", dir, "--include", "**")
	p.send(t, rawCall("1", "search_text", `{"query":"needle","limit":1}`))
	r := p.recv(t, 30*time.Second)
	if r.Result == nil || r.Result.IsError {
		t.Fatalf("search_text: result %+v, error %+v", r.Result, r.Error)
	}
	var page struct {
		Items []struct {
			Path string `json:"path"`
			Line int    `json:"line"`
		} `json:"items"`
		NextCursor *string `json:"next_cursor"`
	}
	if err := json.Unmarshal(r.Result.StructuredContent, &page); err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 1 || page.Items[0].Path != "a.txt" || page.Items[0].Line != 1 || page.NextCursor == nil {
		t.Fatalf("page %s, want a.txt line 1 and a cursor", r.Result.StructuredContent)
	}
	// stuck.txt was taken up ahead (a.txt's reads waited for that), so the
	// page answered while a read of it was blocked; nothing reads it again.
	if n := s.Blocked.Load(); n != 1 {
		t.Fatalf("%d reads of stuck.txt began when the page answered, want 1 (taken up ahead of the page)", n)
	}
	time.Sleep(nextPageSettle)
	if n := s.Blocked.Load(); n != 1 {
		t.Fatalf("%d reads of stuck.txt began %v after the page, want 1: no next page is scanned ahead on a FUSE filesystem", n, nextPageSettle)
	}
	// The worker still answers other calls.
	p.send(t, rawCall("2", "read_text_file", `{"path":"ok.txt"}`))
	if r := p.recv(t, 20*time.Second); r.Result == nil || r.Result.IsError || !strings.Contains(string(r.Result.StructuredContent), "fine") {
		t.Fatalf("read after the page: result %+v, error %+v", r.Result, r.Error)
	}
}
