//go:build linux

package e2e

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fsmcp/fsmcp/internal/jsonl"
)

// TestWorkerCapStuckReads: with 64 calls stuck on reads that never return
// (a FUSE file), the worker keeps reading its input: a further call is
// refused at once with jsonl.CodeBusy, and a notifications/cancelled for a
// stuck call is applied: nothing is ever sent for it, and its slot is free
// at once, so server/discover and a read of another file are answered.
func TestWorkerCapStuckReads(t *testing.T) {
	dir, s := stuckMount(t)
	p := startLines(t, workerBin, "--root", dir, "--include", "**")
	const stuck = jsonl.DefaultMaxInFlight
	for i := range stuck {
		p.send(t, rawCall(strconv.Itoa(i), "read_text_file", `{"path":"stuck.txt"}`))
	}
	waitBlocked(t, s, stuck)
	p.quiet(t, 200*time.Millisecond)

	want := jsonl.Busy("the server", stuck)
	begin := time.Now()
	p.send(t, rawCall(`"past"`, "read_text_file", `{"path":"ok.txt"}`))
	r := p.recv(t, 5*time.Second)
	took := time.Since(begin)
	if string(r.ID) != `"past"` || r.Error == nil || r.Error.Code != jsonl.CodeBusy || r.Error.Message != want {
		t.Fatalf("call past the cap answered id %s, error %+v, result %+v; want %d %q", r.ID, r.Error, r.Result, jsonl.CodeBusy, want)
	}
	p.send(t, `{"jsonrpc":"2.0","id":"discover","method":"server/discover","params":{`+newMeta+`}}`)
	if r := p.recv(t, 5*time.Second); string(r.ID) != `"discover"` || r.Error == nil || r.Error.Code != jsonl.CodeBusy || r.Error.Message != want {
		t.Fatalf("discover past the cap answered id %s, error %+v", r.ID, r.Error)
	}
	// The cancellation is read and applied although every slot is taken:
	// the peer no longer waits for call 0, so its slot is free at once
	// (its read stays blocked in the kernel) and the next calls are
	// served, one at a time.
	p.send(t, rawCancel("0"))
	p.send(t, `{"jsonrpc":"2.0","id":"discover","method":"server/discover","params":{`+newMeta+`}}`)
	if r := p.recv(t, 20*time.Second); string(r.ID) != `"discover"` || r.Error != nil || r.Result == nil {
		t.Fatalf("discover after the cancellation answered id %s, error %+v", r.ID, r.Error)
	}
	p.send(t, rawCall(`"ok"`, "read_text_file", `{"path":"ok.txt"}`))
	if r := p.recv(t, 20*time.Second); string(r.ID) != `"ok"` || r.Result == nil || r.Result.IsError || !strings.Contains(string(r.Result.StructuredContent), "fine") {
		t.Fatalf("read of ok.txt after the cancellation answered id %s, result %+v, error %+v", r.ID, r.Result, r.Error)
	}
	// The freed slot is one: a new stuck call takes it, and the cap holds.
	p.send(t, rawCall(`"again"`, "read_text_file", `{"path":"stuck.txt"}`))
	waitBlocked(t, s, stuck+1)
	p.send(t, rawCall(`"past2"`, "read_text_file", `{"path":"ok.txt"}`))
	if r := p.recv(t, 5*time.Second); string(r.ID) != `"past2"` || r.Error == nil || r.Error.Code != jsonl.CodeBusy {
		t.Fatalf("call past the cap after the cancellation answered id %s, error %+v", r.ID, r.Error)
	}
	p.quiet(t, 300*time.Millisecond) // nothing for id 0, nor for the 64 still stuck
	t.Logf("figures: worker with %d calls stuck refused the next call in %s", stuck, took.Round(time.Microsecond))
}
