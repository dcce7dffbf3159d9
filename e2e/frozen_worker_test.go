//go:build linux

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fsmcp/fsmcp/internal/toolset"
	"github.com/fsmcp/fsmcp/supervisor/manifest"
	"github.com/fsmcp/fsmcp/supervisor/rootproc"
)

// pipeFillers are the loads that fill a frozen worker's call channel past
// its pipe (64 KiB): many searches of 3 KB each, or one write of 1 MiB
// with a few reads behind it.
var pipeFillers = []struct {
	name  string
	calls func() []mcp.CallToolParams
}{
	{"48 searches", func() []mcp.CallToolParams {
		var calls []mcp.CallToolParams
		for i := range 48 {
			terms := make([]string, 16)
			for k := range terms {
				terms[k] = fmt.Sprintf("%02d-%02d-%s", i, k, strings.Repeat("q", 180))
			}
			calls = append(calls, mcp.CallToolParams{Name: "frozen_search_text", Arguments: map[string]any{"any_of": terms}})
		}
		return calls
	}},
	{"a 1 MiB write", func() []mcp.CallToolParams {
		calls := []mcp.CallToolParams{{Name: "frozen_write_text_file", Arguments: map[string]any{"path": "big.txt", "content": strings.Repeat("w", 1<<20)}}}
		for range 4 {
			calls = append(calls, mcp.CallToolParams{Name: "frozen_read_text_file", Arguments: map[string]any{"path": "a.txt"}})
		}
		return calls
	}},
}

// TestSupervisorFrozenPipeFull: a worker frozen (SIGSTOP, and each cgroup
// freezer the machine has) while more than a pipe-full of requests is
// queued for it is replaced. Every call to it ends within its
// call_timeout with the supervisor's tool error (the worker is not
// responding, or the call timed out), never waiting on the write the
// worker does not read; the worker misses its probes, is killed and a new
// one serves the root; the other root answers throughout; and once the
// old worker is thawed it is gone, with no process left behind.
func TestSupervisorFrozenPipeFull(t *testing.T) {
	const callTimeout = 5 * time.Second
	// Room past call_timeout for a loaded machine: the answer is written
	// by the supervisor and read by this client.
	const margin = 2 * time.Second
	buildSupervisorBins(t)
	for _, fz := range freezers(t) {
		for _, load := range pipeFillers {
			t.Run(fz.name+" with "+load.name, func(t *testing.T) {
				ws := tree(t, map[string]string{"a.txt": "a\n"})
				file := filepath.Join(t.TempDir(), "fsmcp.yaml")
				writeFile(t, file, fmt.Sprintf("version: 1\nroots:\n"+
					"  - {name: frozen, path: %q, include: ['**'], tools: all, call_timeout: %s, limits: {max_write_bytes: 2097152}}\n"+
					"  - {name: healthy, path: %q, include: ['**'], tools: read}\n", ws, callTimeout, ws))
				p := startSupervisor(t, file, workerBin)
				old := p.workerOf(t, "frozen")
				thaw := fz.freeze(t, old)

				type outcome struct {
					res  *mcp.CallToolResult
					err  error
					took time.Duration
				}
				calls := load.calls()
				outcomes := make(chan outcome, len(calls))
				for _, c := range calls {
					go func() {
						ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
						defer cancel()
						start := time.Now()
						res, err := p.session.CallTool(ctx, &c)
						outcomes <- outcome{res, err, time.Since(start)}
					}()
				}
				healthy, longest := 0, time.Duration(0)
				for answered := 0; answered < len(calls); {
					select {
					case o := <-outcomes:
						answered++
						longest = max(longest, o.took)
						text := ""
						if o.res != nil {
							text = resultText(o.res)
						}
						if o.err != nil || !o.res.IsError || !strings.HasPrefix(text, "root frozen") ||
							(!strings.Contains(text, "is not responding") && !strings.Contains(text, "did not finish within 5s")) {
							t.Errorf("call to the frozen root: %v %q; want a tool error saying it is not responding or timed out", o.err, text)
						}
						if o.took > callTimeout+margin {
							t.Errorf("a call to the frozen root ended after %s, past its call_timeout %s", o.took, callTimeout)
						}
					case <-time.After(100 * time.Millisecond):
						res, err := readCall(p.session, "healthy", "a.txt", 10*time.Second)
						if err != nil || res.IsError {
							t.Fatalf("healthy root while the other is frozen: %v %s", err, resultText(res))
						}
						healthy++
					}
				}
				if !p.logged("frozen: worker not responding; killing it") {
					t.Errorf("stderr lacks the not-responding line:\n%s", p.stderr)
				}
				start := time.Now()
				eventually(t, 20*time.Second, "the frozen root to serve again", func() bool {
					res, err := readCall(p.session, "frozen", "a.txt", 10*time.Second)
					return err == nil && !res.IsError
				})
				back := time.Since(start)
				// A worker in a frozen cgroup v1 takes its SIGKILL only once
				// thawed: until then it is still there, next to the new one.
				held := alive(old)
				if workers := p.workersOf(t, "frozen"); !slices.ContainsFunc(workers, func(pid int) bool { return pid != old && alive(pid) }) {
					t.Fatalf("the frozen root's workers are %v, the old one %d", workers, old)
				}
				thaw()
				goneWithin(t, []int{old}, 10*time.Second)
				eventually(t, 10*time.Second, "two live workers and nothing else", func() bool {
					pids := p.workerPIDs(t)
					return len(pids) == 2 && alive(pids[0]) && alive(pids[1])
				})
				t.Logf("figures: %s, %s: %d calls to the frozen root ended within %s; root serving again %s later; %d healthy-root calls meanwhile; old worker still held until thawed: %t",
					fz.name, load.name, len(calls), longest.Round(time.Millisecond), back.Round(time.Millisecond), healthy, held)
			})
		}
	}
}

// TestRootFrozenLeavesNothing: a root whose worker is frozen with a 1 MiB
// request half written to it replaces the worker, and once the old one is
// thawed and gone, the supervisor's side (rootproc, in this process) holds
// no more goroutines than while it served the first worker, and no
// process but the new worker.
func TestRootFrozenLeavesNothing(t *testing.T) {
	ws := tree(t, map[string]string{"a.txt": "a\n"})
	for _, fz := range freezers(t) {
		t.Run(fz.name, func(t *testing.T) {
			p := rootproc.New(rootproc.Config{
				Root:      manifest.Root{Name: "frozen", Path: ws, Include: []string{"**"}, DefaultExclude: true, Tools: toolset.Mask(toolset.All), Limits: map[string]int64{"max_write_bytes": 2 << 20}},
				WorkerBin: workerBin,
				Stderr:    io.Discard,
			})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if err := p.Start(ctx); err != nil {
				t.Fatal(err)
			}
			ran := make(chan error, 1)
			go func() { ran <- p.Run(ctx) }()
			relayCall(t, p, "read_text_file", `{"path":"a.txt"}`, 10*time.Second)
			serving := settleGoroutines(0, 500*time.Millisecond)

			old := p.PID()
			thaw := fz.freeze(t, old)
			rl, err := p.Relay()
			if err != nil {
				t.Fatal(err)
			}
			// A write that fills the pipe, and reads queued behind it.
			args := []string{`{"path":"big.txt","content":"` + strings.Repeat("w", 1<<20) + `"}`, `{"path":"a.txt"}`, `{"path":"a.txt"}`}
			ended := make(chan error, len(args))
			for i, a := range args {
				tool := "read_text_file"
				if i == 0 {
					tool = "write_text_file"
				}
				go func() {
					cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
					defer ccancel()
					_, err := rl.Call(cctx, "tools/call", toolParams(tool, a))
					ended <- err
				}()
			}
			for range args {
				select {
				case err := <-ended:
					if err == nil {
						t.Error("a call to the frozen worker was answered")
					}
				case <-time.After(20 * time.Second):
					t.Fatal("a call to the frozen worker did not end within 20s; its call deadline is 5s")
				}
			}
			eventually(t, 20*time.Second, "a new worker", func() bool { pid := p.PID(); return pid != 0 && pid != old })
			relayCall(t, p, "read_text_file", `{"path":"a.txt"}`, 20*time.Second)
			thaw()
			goneWithin(t, []int{old}, 10*time.Second)
			after := settleGoroutines(serving, 10*time.Second)
			if after > serving {
				t.Errorf("%d goroutines serving the new worker, %d serving the first", after, serving)
			}
			var kids []int
			for _, pid := range childPIDs(t, os.Getpid()) {
				if alive(pid) {
					kids = append(kids, pid)
				}
			}
			if len(kids) != 1 || kids[0] != p.PID() {
				t.Errorf("live child processes %v, want only the new worker %d", kids, p.PID())
			}
			cancel()
			if err := <-ran; err != nil {
				t.Errorf("Run: %v", err)
			}
			t.Logf("figures: %s: goroutines serving the first worker %d, the second %d", fz.name, serving, after)
		})
	}
}

// toolParams are the params of a tools/call of a worker's tool.
func toolParams(tool, args string) json.RawMessage {
	return json.RawMessage(`{` + newMeta + `,"name":"` + tool + `","arguments":` + args + `}`)
}

// relayCall calls the root's worker through its relay, retrying while the
// root is not ready, until within passes.
func relayCall(t *testing.T, p *rootproc.Proc, tool, args string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		rl, err := p.Relay()
		if err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			var resp *jsonrpc.Response
			resp, err = rl.Call(ctx, "tools/call", toolParams(tool, args))
			cancel()
			switch {
			case err == nil && resp.Error != nil:
				err = resp.Error
			case err == nil && strings.Contains(string(resp.Result), `"isError":true`):
				err = fmt.Errorf("tool error: %s", resp.Result)
			case err == nil:
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("root %s did not answer within %s: %v", p.Name(), within, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// settleGoroutines waits for this process's goroutine count to drop to at
// most n and returns the last count seen.
func settleGoroutines(n int, within time.Duration) int {
	deadline := time.Now().Add(within)
	for {
		got := runtime.NumGoroutine()
		if got <= n || time.Now().After(deadline) {
			return got
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestSupervisorFrozenSDKPath: a call the front leaves to the go-sdk
// (its params spell a key with an escape), with more for a frozen worker
// than its gRPC stream takes unread (6 MiB of a 4 MiB window), ends within
// its call_timeout with the supervisor's tool error, and the worker is
// then found not responding and replaced.
func TestSupervisorFrozenSDKPath(t *testing.T) {
	const callTimeout = 10 * time.Second
	bins := buildSupervisorBins(t)
	ws := tree(t, map[string]string{"a.txt": "a\n"})
	file := filepath.Join(t.TempDir(), "fsmcp.yaml")
	writeFile(t, file, fmt.Sprintf("version: 1\nroots:\n"+
		"  - {name: frozen, path: %q, include: ['**'], tools: all, call_timeout: %s, limits: {max_write_bytes: 8388608}}\n", ws, callTimeout))
	p := startLines(t, bins.supervisor, "--manifest", file, "--worker", workerBin)
	p.send(t, `{"jsonrpc":"2.0","id":"list","method":"tools/list","params":{`+newMeta+`}}`)
	if r := p.recv(t, 30*time.Second); string(r.ID) != `"list"` || r.Error != nil {
		t.Fatalf("tools/list: %s %+v", r.ID, r.Error)
	}
	// call sends the write and returns its answer and how long it took
	// once the supervisor had read all but a pipe-full of it.
	call := func(id string) (idReply, time.Duration) {
		t.Helper()
		p.send(t, `{"jsonrpc":"2.0","id":`+id+`,"method":"tools/call","params":{`+newMeta+`,"\u006eame":"frozen_write_text_file","arguments":{"path":"big.txt","content":"`+strings.Repeat("w", 6<<20)+`"}}}`)
		start := time.Now()
		r := p.recv(t, 60*time.Second)
		return r, time.Since(start)
	}
	// The same call to the worker running: what decoding and relaying 6
	// MiB take here, before and after the call's own time.
	r, live := call("6")
	if string(r.ID) != "6" || r.Result == nil || r.Result.IsError {
		t.Fatalf("the write to the running worker: id %s %+v %q", r.ID, r.Error, r.text())
	}
	kids := childPIDs(t, p.cmd.Process.Pid)
	if len(kids) != 1 {
		t.Fatalf("workers %v, want 1", kids)
	}
	old := kids[0]
	freeze(t, old)
	t.Cleanup(func() { _ = syscall.Kill(old, syscall.SIGKILL) })
	r, took := call("7")
	if string(r.ID) != "7" || r.Result == nil || !r.Result.IsError || !strings.HasPrefix(r.text(), "root frozen") ||
		(!strings.Contains(r.text(), "did not finish within 10s") && !strings.Contains(r.text(), "is not responding")) {
		t.Fatalf("call to the frozen worker: id %s %+v %q; want the timeout or not-responding tool error", r.ID, r.Error, r.text())
	}
	if took > live+callTimeout+2*time.Second {
		t.Errorf("the call ended after %s, past its call_timeout %s and the %s the running worker took", took, callTimeout, live)
	}
	goneWithin(t, []int{old}, 20*time.Second)
	t.Logf("figures: a 6 MiB call on the SDK path: %s to the running worker, %s to the frozen one", live.Round(time.Millisecond), took.Round(time.Millisecond))
}
