//go:build linux

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fsmcp/fsmcp/internal/jsonl"
)

// rootSpec is one root of a manifest written by a test.
type rootSpec struct {
	name, path, extra string // extra: more YAML keys, each line indented by 4
}

// writeManifest writes a manifest of read-only roots and returns its path.
func writeManifest(t testing.TB, roots ...rootSpec) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("version: 1\nroots:\n")
	for _, r := range roots {
		fmt.Fprintf(&b, "  - name: %s\n    path: %s\n    include: [\"**\"]\n    tools: read\n", r.name, r.path)
		if r.extra != "" {
			b.WriteString("    " + r.extra + "\n")
		}
	}
	file := filepath.Join(t.TempDir(), "fsmcp.yaml")
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// readCall calls <root>_read_text_file on path with a deadline.
func readCall(s *mcp.ClientSession, root, path string, within time.Duration) (*mcp.CallToolResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	return s.CallTool(ctx, &mcp.CallToolParams{Name: root + "_read_text_file", Arguments: map[string]any{"path": path}})
}

// goneWithin waits until none of pids is a live process.
func goneWithin(t *testing.T, pids []int, d time.Duration) {
	t.Helper()
	eventually(t, d, "the workers to be gone", func() bool {
		for _, pid := range pids {
			if alive(pid) {
				return false
			}
		}
		return true
	})
}

// TestSupervisorFrozenWorker: a worker stopped with SIGSTOP misses its
// probes while a call is pending; it is killed, the pending call gets a
// tool error saying the root is not responding, the root comes back with
// a new worker, and the healthy root answers every call meanwhile.
func TestSupervisorFrozenWorker(t *testing.T) {
	bins := buildSupervisorBins(t)
	ws := tree(t, map[string]string{"a.txt": "a\n"})
	file := writeManifest(t, rootSpec{name: "frozen", path: ws}, rootSpec{name: "healthy", path: ws})
	p := startSupervisor(t, file, bins.worker)
	old := p.workerOf(t, "frozen")
	freeze(t, old)
	t.Cleanup(func() { _ = syscall.Kill(old, syscall.SIGKILL) })
	type outcome struct {
		res  *mcp.CallToolResult
		err  error
		took time.Duration
	}
	pending := make(chan outcome, 1)
	start := time.Now()
	go func() {
		res, err := readCall(p.session, "frozen", "a.txt", 60*time.Second)
		pending <- outcome{res, err, time.Since(start)}
	}()
	var healthy int
	var o outcome
	for waiting := true; waiting; {
		select {
		case o = <-pending:
			waiting = false
		case <-time.After(50 * time.Millisecond):
			res, err := readCall(p.session, "healthy", "a.txt", 10*time.Second)
			if err != nil || res.IsError {
				t.Fatalf("healthy root while the other is frozen: %v %s", err, resultText(res))
			}
			healthy++
		}
	}
	if o.err != nil || !o.res.IsError || !strings.Contains(resultText(o.res), "root frozen") || !strings.Contains(resultText(o.res), "not responding") {
		t.Fatalf("call to the frozen root: %v %+v; want a tool error naming root frozen and saying it is not responding", o.err, o.res)
	}
	if o.took > 20*time.Second {
		t.Errorf("the frozen root's call took %s to fail", o.took)
	}
	t.Logf("figures: frozen worker detected and its call failed after %s; %d healthy-root calls answered meanwhile", o.took.Round(time.Millisecond), healthy)
	if !p.logged("frozen: worker not responding; killing it") {
		t.Errorf("stderr lacks the not-responding line:\n%s", p.stderr)
	}
	eventually(t, 20*time.Second, "the frozen root to come back", func() bool {
		res, err := readCall(p.session, "frozen", "a.txt", 10*time.Second)
		return err == nil && !res.IsError
	})
	if pid := p.workerOf(t, "frozen"); pid == old {
		t.Error("the frozen root is served by its old worker")
	}
}

// TestSupervisorFrozenAfterTimeout: a call to a frozen worker that times
// out leaves nothing pending, yet the worker goes on being probed, is
// found not responding and killed, with no further call (a root's probe
// sleeps only while nothing is pending and no call has timed out since
// the worker last answered one).
func TestSupervisorFrozenAfterTimeout(t *testing.T) {
	bins := buildSupervisorBins(t)
	ws := tree(t, map[string]string{"a.txt": "a\n"})
	file := writeManifest(t, rootSpec{name: "frozen", path: ws, extra: "call_timeout: 500ms"})
	p := startSupervisor(t, file, bins.worker)
	old := p.workerOf(t, "frozen")
	freeze(t, old)
	t.Cleanup(func() { _ = syscall.Kill(old, syscall.SIGKILL) })
	res, err := readCall(p.session, "frozen", "a.txt", 20*time.Second)
	if err != nil || !res.IsError || !strings.Contains(resultText(res), "the call did not finish within 500ms") {
		t.Fatalf("call to the frozen root: %v %q; want the timeout tool error", err, resultText(res))
	}
	start := time.Now()
	eventually(t, 20*time.Second, "the frozen worker to be killed", func() bool { return !alive(old) })
	t.Logf("figures: frozen worker killed %s after its call timed out", time.Since(start).Round(time.Millisecond))
	if !p.logged("frozen: worker not responding; killing it") {
		t.Errorf("stderr lacks the not-responding line:\n%s", p.stderr)
	}
}

// freeze stops process pid with SIGSTOP and waits until every thread of
// it is stopped. kill(2) returns before that: the thread picked for the
// signal stops the others once it runs, and meanwhile they run on, so a
// call sent at once can still be answered (on a loaded machine it was,
// failing TestSupervisorFrozenWorker).
func freeze(t testing.TB, pid int) {
	t.Helper()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, fmt.Sprintf("every thread of process %d to stop", pid), func() bool {
		return allStopped(pid)
	})
}

// allStopped reports whether every thread of process pid is in state T
// (stopped).
func allStopped(pid int) bool {
	task := filepath.Join("/proc", strconv.Itoa(pid), "task")
	tids, err := os.ReadDir(task)
	if err != nil || len(tids) == 0 {
		return false
	}
	for _, tid := range tids {
		b, err := os.ReadFile(filepath.Join(task, tid.Name(), "stat"))
		if err != nil {
			return false
		}
		// The state follows the parenthesised command name.
		s := string(b)
		if i := strings.LastIndexByte(s, ')'); i < 0 || !strings.HasPrefix(s[i+1:], " T") {
			return false
		}
	}
	return true
}

// TestSupervisorCallTimeout: a call past its root's call_timeout gets a
// tool error naming the root and the timeout, and is cancelled in the
// worker; a read stuck in the kernel (FUSE) times out the same way while
// the same root keeps serving other files.
func TestSupervisorCallTimeout(t *testing.T) {
	bins := buildSupervisorBins(t)
	t.Run("cancelled in the worker", func(t *testing.T) {
		ws := tree(t, map[string]string{"a.txt": "a\n"})
		file := writeManifest(t, rootSpec{name: "slow", path: ws, extra: "call_timeout: 500ms"})
		p := startSupervisor(t, file, bins.testWorker)
		start := time.Now()
		res, err := readCall(p.session, "slow", "slow-30s", 20*time.Second)
		took := time.Since(start)
		if err != nil || !res.IsError || !strings.Contains(resultText(res), "root slow: the call did not finish within 500ms") {
			t.Fatalf("slow call: %v %q; want the timeout tool error", err, resultText(res))
		}
		if took > 10*time.Second {
			t.Errorf("the timeout error came after %s", took)
		}
		t.Logf("figures: call_timeout 500ms: tool error after %s", took.Round(time.Millisecond))
		eventually(t, 5*time.Second, "the worker to see the cancellation", func() bool {
			return strings.Contains(p.stderr.String(), "slow: testworker: slow call cancelled")
		})
	})
	t.Run("read stuck in the kernel", func(t *testing.T) {
		dir, s := stuckMount(t)
		file := writeManifest(t, rootSpec{name: "share", path: dir, extra: "call_timeout: 1s"})
		p := startSupervisor(t, file, bins.worker)
		start := time.Now()
		res, err := readCall(p.session, "share", "stuck.txt", 20*time.Second)
		took := time.Since(start)
		if err != nil || !res.IsError || !strings.Contains(resultText(res), "root share: the call did not finish within 1s (the root's call_timeout) and was cancelled") {
			t.Fatalf("stuck read: %v %q; want the timeout tool error", err, resultText(res))
		}
		if s.Blocked.Load() == 0 {
			t.Error("the read never reached the file system")
		}
		t.Logf("figures: call_timeout 1s, read blocked in FUSE: tool error after %s", took.Round(time.Millisecond))
		// The worker still answers its probes: it is not killed, and the
		// root serves its other files.
		pid := p.workerOf(t, "share")
		for range 5 {
			res, err := readCall(p.session, "share", "ok.txt", 10*time.Second)
			if err != nil || res.IsError {
				t.Fatalf("ok.txt after the timeout: %v %s", err, resultText(res))
			}
			time.Sleep(300 * time.Millisecond)
		}
		if now := p.workerOf(t, "share"); now != pid {
			t.Errorf("the worker was replaced (%d -> %d) though it answers its probes", pid, now)
		}
	})
}

// TestSupervisorStuckRootIsolation: with a root whose reads never return
// (FUSE), the front keeps reading: calls past the root's quota are refused
// at once, a duplicate of an id in flight gets -32600, cancellations are
// applied (nothing is sent for a cancelled id, and its id may be reused),
// ids come back byte for byte, and every call to the healthy root is
// answered.
func TestSupervisorStuckRootIsolation(t *testing.T) {
	bins := buildSupervisorBins(t)
	dir, s := stuckMount(t)
	ws := tree(t, map[string]string{"a.txt": "a\n"})
	file := writeManifest(t, rootSpec{name: "share", path: dir}, rootSpec{name: "healthy", path: ws})
	p := startLines(t, bins.supervisor, "--manifest", file, "--worker", bins.worker, "--grace", "1s")
	p.send(t, `{"jsonrpc":"2.0","id":"list","method":"tools/list","params":{`+newMeta+`}}`)
	if r := p.recv(t, 30*time.Second); string(r.ID) != `"list"` || r.Error != nil {
		t.Fatalf("tools/list: %s %+v", r.ID, r.Error)
	}
	const stuck = 64 + 16
	for i := range stuck {
		p.send(t, rawCall(fmt.Sprintf(`"s%d"`, i), "share_read_text_file", `{"path":"stuck.txt"}`))
	}
	// The 16 past the quota are refused at once.
	for range stuck - 64 {
		r := p.recv(t, 20*time.Second)
		if r.Result == nil || !r.Result.IsError || !strings.Contains(r.text(), "root share has 64 calls in flight") {
			t.Fatalf("call past the quota: id %s %+v %+v", r.ID, r.Result, r.Error)
		}
	}
	waitBlocked(t, s, 1)
	// A call reusing the id of one in flight is refused by the front.
	p.send(t, rawCall(`"s20"`, "healthy_read_text_file", `{"path":"a.txt"}`))
	if r := p.recv(t, 20*time.Second); string(r.ID) != `"s20"` || r.Error == nil || r.Error.Code != -32600 {
		t.Fatalf("duplicate of an id in flight: id %s %+v %+v", r.ID, r.Error, r.Result)
	}
	// Cancel the first 8, then reuse their ids on the healthy root.
	for i := range 8 {
		p.send(t, rawCancel(fmt.Sprintf(`"s%d"`, i)))
	}
	ids := []string{`9007199254740993`, `18446744073709551615`, `2.50e1`, `1E400`}
	for i := range 8 {
		ids = append(ids, fmt.Sprintf(`"s%d"`, i))
	}
	for i := range 200 {
		ids = append(ids, fmt.Sprintf(`%d`, 1000+i))
	}
	start := time.Now()
	answered := map[string]bool{}
	for len(ids[len(answered):]) > 0 {
		// Batches of 32, within the healthy root's own quota.
		batch := ids[len(answered):]
		batch = batch[:min(32, len(batch))]
		for _, id := range batch {
			p.send(t, rawCall(id, "healthy_read_text_file", `{"path":"a.txt"}`))
		}
		for range batch {
			r := p.recv(t, 20*time.Second)
			if r.Result == nil || r.Result.IsError || r.Error != nil {
				t.Fatalf("healthy call %s: %+v %+v", r.ID, r.Result, r.Error)
			}
			answered[string(r.ID)] = true
		}
	}
	for _, id := range ids {
		if !answered[id] {
			t.Errorf("no answer with id %s (ids must come back byte for byte)", id)
		}
	}
	t.Logf("figures: %d healthy-root calls answered in %s with 64 calls stuck on another root", len(ids), time.Since(start).Round(time.Millisecond))
	p.quiet(t, 300*time.Millisecond)
	// End of input with 56 calls stuck: the supervisor exits within
	// --grace plus a second, and its workers are gone.
	pids := childPIDs(t, p.cmd.Process.Pid)
	if len(pids) != 2 {
		t.Fatalf("workers %v, want 2", pids)
	}
	_ = p.stdin.Close()
	took := p.exitsWithin(t, 15*time.Second)
	goneWithin(t, pids, 5*time.Second)
	t.Logf("figures: end of input with calls stuck in a FUSE read, --grace 1s: exit after %s", took.Round(time.Millisecond))
}

// TestSupervisorKilledWithCallStuck: the supervisor killed while a call of
// one root is stuck in a FUSE read. Once the read fails, its answer has no
// one to go to; the worker ends all the same, since a worker stops when its
// call channel ends, however it ends. (The Linux build's parent-death
// signal ends the workers first; the portable build, as on macOS, has
// none.)
func TestSupervisorKilledWithCallStuck(t *testing.T) {
	bins := buildSupervisorBins(t)
	dir, s := stuckMount(t)
	ws := tree(t, map[string]string{"a.txt": "a\n"})
	file := writeManifest(t, rootSpec{name: "share", path: dir}, rootSpec{name: "healthy", path: ws})
	p := startLines(t, bins.supervisor, "--manifest", file, "--worker", bins.worker)
	p.send(t, `{"jsonrpc":"2.0","id":"list","method":"tools/list","params":{`+newMeta+`}}`)
	if r := p.recv(t, 30*time.Second); string(r.ID) != `"list"` || r.Error != nil {
		t.Fatalf("tools/list: %s %+v", r.ID, r.Error)
	}
	for i := range 64 { // the root's quota
		p.send(t, rawCall(fmt.Sprintf(`"s%d"`, i), "share_read_text_file", `{"path":"stuck.txt"}`))
	}
	waitBlocked(t, s, 1)
	time.Sleep(500 * time.Millisecond) // the calls reach the worker
	pids := childPIDs(t, p.cmd.Process.Pid)
	if len(pids) != 2 {
		t.Fatalf("workers %v, want 2", pids)
	}
	_ = p.cmd.Process.Kill()
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		t.Fatal("the supervisor did not end 5s after SIGKILL")
	}
	s.Release()
	goneWithin(t, pids, 10*time.Second)
}

// TestSupervisorStopsBounded: with a worker frozen by SIGSTOP and a call
// to it in flight, SIGTERM, SIGINT and end of input each end the
// supervisor within --grace plus a second (asserted with room for a
// loaded machine) with its workers gone; with nothing in flight, end of
// input ends it with status 0 at once.
func TestSupervisorStopsBounded(t *testing.T) {
	bins := buildSupervisorBins(t)
	ws := tree(t, map[string]string{"a.txt": "a\n"})
	for _, stop := range []string{"SIGTERM", "SIGINT", "end of input"} {
		t.Run("frozen worker, "+stop, func(t *testing.T) {
			file := writeManifest(t, rootSpec{name: "frozen", path: ws}, rootSpec{name: "healthy", path: ws})
			p := startSupervisorArgs(t, []string{"--manifest", file, "--worker", bins.worker, "--grace", "500ms"})
			pids := p.workerPIDs(t)
			frozen := p.workerOf(t, "frozen")
			freeze(t, frozen)
			t.Cleanup(func() { _ = syscall.Kill(frozen, syscall.SIGKILL) })
			go func() { _, _ = readCall(p.session, "frozen", "a.txt", 30*time.Second) }()
			time.Sleep(100 * time.Millisecond)
			start := time.Now()
			switch stop {
			case "SIGTERM":
				_ = p.cmd.Process.Signal(syscall.SIGTERM)
			case "SIGINT":
				_ = p.cmd.Process.Signal(syscall.SIGINT)
			case "end of input":
				_ = p.stdin.Close()
			}
			if code := p.wait(t, 10*time.Second); code != 0 {
				t.Errorf("exit %d, want 0\nstderr:\n%s", code, p.stderr)
			}
			took := time.Since(start)
			goneWithin(t, pids, 5*time.Second)
			t.Logf("figures: frozen worker, %s, --grace 500ms: exit after %s", stop, took.Round(time.Millisecond))
		})
	}
	t.Run("nothing in flight", func(t *testing.T) {
		file := writeManifest(t, rootSpec{name: "a", path: ws}, rootSpec{name: "b", path: ws})
		p := startSupervisor(t, file, bins.worker)
		pids := p.workerPIDs(t)
		start := time.Now()
		_ = p.stdin.Close()
		if code := p.wait(t, 5*time.Second); code != 0 {
			t.Errorf("exit %d, want 0\nstderr:\n%s", code, p.stderr)
		}
		took := time.Since(start)
		goneWithin(t, pids, 5*time.Second)
		t.Logf("figures: nothing in flight: exit %s after end of input", took.Round(time.Millisecond))
	})
}

// TestSupervisorStartFailure: a worker binary that is gone, not
// executable, or not a program the system runs when its root restarts is
// not a crash: the log and the root's tool errors say why, the root is
// never marked failed, and it comes back once the binary does.
func TestSupervisorStartFailure(t *testing.T) {
	bins := buildSupervisorBins(t)
	for _, tc := range []struct {
		name, why string
		breakIt   func(bin string) error
		fix       func(bin, saved string) error
	}{
		{"missing", "the worker binary is missing",
			func(bin string) error { return os.Rename(bin, bin+".saved") },
			func(bin, saved string) error { return os.Rename(saved, bin) }},
		{"not executable", "the worker binary is not executable",
			func(bin string) error { return os.Chmod(bin, 0o644) },
			func(bin, _ string) error { return os.Chmod(bin, 0o755) }},
		{"not a program", "the worker binary is not a program this OS and architecture can run",
			func(bin string) error {
				if err := os.Rename(bin, bin+".saved"); err != nil {
					return err
				}
				return os.WriteFile(bin, []byte("\x7fELF, but for no machine\n"), 0o755)
			},
			func(bin, saved string) error { return os.Rename(saved, bin) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bin := filepath.Join(t.TempDir(), "fsmcp-worker")
			data, err := os.ReadFile(bins.worker)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(bin, data, 0o755); err != nil {
				t.Fatal(err)
			}
			ws := tree(t, map[string]string{"a.txt": "a\n"})
			file := writeManifest(t, rootSpec{name: "gone", path: ws})
			p := startSupervisor(t, file, bin)
			if err := tc.breakIt(bin); err != nil {
				t.Fatal(err)
			}
			_ = syscall.Kill(p.workerOf(t, "gone"), syscall.SIGKILL)
			want := "root gone cannot start its worker: " + tc.why
			eventually(t, 10*time.Second, "the start failure in the tool error", func() bool {
				res, err := readCall(p.session, "gone", "a.txt", 10*time.Second)
				return err == nil && res.IsError && strings.Contains(resultText(res), want)
			})
			// Longer than it takes to fail a root that crashes (six
			// attempts within a minute, 3.1 s of backoff): still trying.
			time.Sleep(4 * time.Second)
			res, err := readCall(p.session, "gone", "a.txt", 10*time.Second)
			if err != nil || !strings.Contains(resultText(res), want) {
				t.Fatalf("after 4 s of failed starts: %v %q, want %q", err, resultText(res), want)
			}
			if !strings.Contains(p.stderr.String(), "gone: worker cannot start: "+tc.why) {
				t.Errorf("stderr lacks the start failure:\n%s", p.stderr)
			}
			if err := tc.fix(bin, bin+".saved"); err != nil {
				t.Fatal(err)
			}
			eventually(t, 20*time.Second, "the root to come back with its binary", func() bool {
				res, err := readCall(p.session, "gone", "a.txt", 10*time.Second)
				return err == nil && !res.IsError
			})
		})
	}
}

// TestSupervisorWorkerBusy: a worker in plugin mode takes 68 calls at once
// (the front's 64 and 4 for probes) and lets go of at most 68 cancelled
// calls whose reads never return; past that, cancelled calls keep its
// slots while the front, whose quota they no longer hold, sends it more.
// The worker refuses those with its JSON-RPC busy error, which the host
// gets as the front's own quota refusal: a tool error naming the root.
// The calls are cancelled by the root's call_timeout: the front writes
// the cancellation to the worker before it answers the host, so the next
// round reaches the worker after it.
func TestSupervisorWorkerBusy(t *testing.T) {
	// A round stays under the front's quota of 64: the slot of the last
	// answer the host reads may still be on its way back.
	const takes, round = 68, 63
	bins := buildSupervisorBins(t)
	dir, s := stuckMount(t)
	ws := tree(t, map[string]string{"a.txt": "a\n"})
	file := writeManifest(t, rootSpec{name: "share", path: dir, extra: "call_timeout: 2s"}, rootSpec{name: "healthy", path: ws})
	p := startLines(t, bins.supervisor, "--manifest", file, "--worker", bins.worker, "--grace", "1s")
	p.send(t, `{"jsonrpc":"2.0","id":"list","method":"tools/list","params":{`+newMeta+`}}`)
	if r := p.recv(t, 30*time.Second); string(r.ID) != `"list"` || r.Error != nil {
		t.Fatalf("tools/list: %s %+v", r.ID, r.Error)
	}
	// Two rounds of stuck calls that time out: the front frees its quota
	// both times, the worker 68 slots in all.
	timedOut := "root share: the call did not finish within 2s (the root's call_timeout) and was cancelled"
	for k := range 2 {
		for i := range round {
			p.send(t, rawCall(fmt.Sprintf(`"r%d-%d"`, k, i), "share_read_text_file", `{"path":"stuck.txt"}`))
		}
		for range round {
			if r := p.recv(t, 20*time.Second); r.Result == nil || !r.Result.IsError || r.text() != timedOut {
				t.Fatalf("stuck call: id %s, error %+v, result %q; want %q", r.ID, r.Error, r.text(), timedOut)
			}
		}
	}
	waitBlocked(t, s, 2*round)
	// The worker holds the calls it did not let go of; of 16 more, it
	// takes as many as it has room for and refuses the rest.
	const more = 16
	held := 2*round - takes
	refused := more - (takes - held)
	for i := range more {
		p.send(t, rawCall(fmt.Sprintf(`"x%d"`, i), "share_read_text_file", `{"path":"stuck.txt"}`))
	}
	want := jsonl.Busy("root share", jsonl.DefaultMaxInFlight)
	for range refused {
		r := p.recv(t, 20*time.Second)
		if !strings.HasPrefix(string(r.ID), `"x`) || r.Error != nil || r.Result == nil || !r.Result.IsError || r.text() != want {
			t.Fatalf("call to a worker holding %d calls: id %s, error %+v, result %q; want the tool error %q", takes, r.ID, r.Error, r.text(), want)
		}
	}
	waitBlocked(t, s, int32(2*round+more-refused))
	p.send(t, rawCall(`"healthy"`, "healthy_read_text_file", `{"path":"a.txt"}`))
	for {
		r := p.recv(t, 20*time.Second)
		if strings.HasPrefix(string(r.ID), `"x`) && r.text() == timedOut {
			continue // a call the worker took, timed out meanwhile
		}
		if string(r.ID) != `"healthy"` || r.Result == nil || r.Result.IsError || r.Error != nil {
			t.Fatalf("healthy root: id %s %+v %+v", r.ID, r.Result, r.Error)
		}
		break
	}
}
