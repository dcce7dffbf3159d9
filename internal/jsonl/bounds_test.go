package jsonl

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fsmcp/fsmcp/internal/profile"
)

// These tests run a real server on the transport and speak raw lines to it.

const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

func listReq(id int) string {
	return `{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"tools/list","params":{` + meta + `}}`
}

func blockReq(id int) string {
	return `{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"tools/call","params":{` + meta + `,"name":"block","arguments":{}}}`
}

type harness struct {
	in      *io.PipeWriter
	out     *bufio.Scanner
	entered atomic.Int32  // block calls started
	left    atomic.Int32  // block calls returned
	release chan struct{} // closed to let block calls return
	done    chan struct{} // closed when the server's Run returns
}

func serve(t *testing.T, tr *Transport) *harness {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	tr.Reader, tr.Writer = inR, outW
	h := &harness{in: inW, out: bufio.NewScanner(outR), release: make(chan struct{}), done: make(chan struct{})}
	h.out.Buffer(make([]byte, 1<<20), 1<<20)
	srv := profile.New(&mcp.Implementation{Name: "t", Version: "1"}, "")
	srv.AddTool(&mcp.Tool{Name: "block", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			h.entered.Add(1)
			select {
			case <-h.release:
			case <-ctx.Done():
			}
			h.left.Add(1)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "released"}}}, nil
		})
	// hang ignores its cancellation, like a read stuck in the kernel.
	srv.AddTool(&mcp.Tool{Name: "hang", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			h.entered.Add(1)
			<-h.release
			h.left.Add(1)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "released"}}}, nil
		})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { srv.Run(ctx, tr); outW.Close(); close(h.done) }()
	t.Cleanup(func() {
		cancel()
		inW.Close()
		h.let()
		go io.Copy(io.Discard, outR)
		select {
		case <-h.done:
		case <-time.After(10 * time.Second):
			t.Error("server did not stop")
		}
	})
	return h
}

func (h *harness) let() {
	select {
	case <-h.release:
	default:
		close(h.release)
	}
}

func (h *harness) waitEntered(t *testing.T, n int32) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); h.entered.Load() < n; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d calls started, want %d", h.entered.Load(), n)
		}
	}
}

type response struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func (h *harness) recv(t *testing.T) response {
	t.Helper()
	got := make(chan bool, 1)
	go func() { got <- h.out.Scan() }()
	select {
	case ok := <-got:
		if !ok {
			t.Fatalf("output ended: %v", h.out.Err())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no response within 10s")
	}
	var r response
	if err := json.Unmarshal(h.out.Bytes(), &r); err != nil {
		t.Fatalf("output line is not JSON: %q", h.out.Text())
	}
	return r
}

func (h *harness) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(h.in, line+"\n"); err != nil {
		t.Fatal(err)
	}
}

// TestOverlongLineBounded streams a line 64 times the limit: it is refused
// with the id its start carries, what it allocates is a small multiple of
// the limit (not of the line), and the next request is served.
func TestOverlongLineBounded(t *testing.T) {
	const limit = 256 << 10
	h := serve(t, &Transport{MaxLine: limit})
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	chunk := bytes.Repeat([]byte("x"), 64<<10)
	io.WriteString(h.in, `{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{"text":"`)
	for sent := 0; sent < 64*limit; sent += len(chunk) {
		if _, err := h.in.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	h.send(t, `"}}`)
	r := h.recv(t)
	runtime.ReadMemStats(&after)
	if r.Error == nil || r.Error.Code != -32600 || string(r.ID) != `"big"` || !strings.Contains(r.Error.Message, "exceeds 262144 bytes") {
		t.Fatalf("over-long line answered id %s, %+v", r.ID, r.Error)
	}
	grew := after.TotalAlloc - before.TotalAlloc
	t.Logf("a %d-byte line allocated %d bytes", 64*limit, grew)
	if grew > 8*limit {
		t.Errorf("a %d-byte line allocated %d bytes; the bound is %d", 64*limit, grew, 8*limit)
	}
	h.send(t, listReq(2))
	if r := h.recv(t); r.Error != nil || string(r.ID) != "2" {
		t.Fatalf("after the over-long line: id %s, %+v", r.ID, r.Error)
	}
	// A malformed line keeps the id it starts with.
	h.send(t, `{"jsonrpc":"2.0","id":7,"method":`)
	if r := h.recv(t); r.Error == nil || r.Error.Code != -32700 || string(r.ID) != "7" {
		t.Fatalf("truncated line answered id %s, %+v", r.ID, r.Error)
	}
}

// TestInFlightBound: with MaxInFlight 3 and three calls blocked, further
// calls are refused at once with CodeBusy while input is still read: a
// cancellation for a blocked call is applied (nothing is sent for it) and,
// its slot free, the next call is served. Every call is answered exactly
// once.
func TestInFlightBound(t *testing.T) {
	h := serve(t, &Transport{MaxInFlight: 3})
	for i := range 3 {
		h.send(t, blockReq(i))
	}
	h.waitEntered(t, 3)
	answered := map[string]int{}
	for i := 3; i < 10; i++ {
		h.send(t, blockReq(i))
		r := h.recv(t)
		answered[string(r.ID)]++
		if string(r.ID) != strconv.Itoa(i) || r.Error == nil || r.Error.Code != CodeBusy || r.Error.Message != Busy("the server", 3) {
			t.Fatalf("call %d past the bound answered id %s, %+v; want %d %q", i, r.ID, r.Error, CodeBusy, Busy("the server", 3))
		}
	}
	if n := h.entered.Load(); n != 3 {
		t.Fatalf("%d calls running, want 3", n)
	}
	// Call 0 is cancelled: its slot is free at once (the next call is
	// served), its handler sees the cancellation, and nothing is sent for
	// it.
	h.send(t, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":0}}`)
	h.send(t, blockReq(10))
	for deadline := time.Now().Add(10 * time.Second); h.left.Load() < 1; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the cancelled call's handler did not return")
		}
	}
	h.waitEntered(t, 4)
	h.let()
	for range 3 {
		r := h.recv(t)
		if r.Error != nil {
			t.Fatalf("call %s: %+v", r.ID, r.Error)
		}
		answered[string(r.ID)]++
	}
	for _, id := range []string{"1", "2", "10"} {
		if answered[id] != 1 {
			t.Errorf("call %s answered %d times after release, want once", id, answered[id])
		}
	}
	if answered["0"] != 0 {
		t.Errorf("cancelled call 0 answered %d times", answered["0"])
	}
}

// TestCancelledStuckCallsBounded: a cancelled call whose handler never
// returns frees its slot at once, but only MaxInFlight such calls are let
// go; past that a cancelled call keeps its slot, so the handlers running
// stay bounded (2*MaxInFlight) whatever the peer sends.
func TestCancelledStuckCallsBounded(t *testing.T) {
	h := serve(t, &Transport{MaxInFlight: 2})
	hang := func(id int) string { return strings.Replace(blockReq(id), `"name":"block"`, `"name":"hang"`, 1) }
	cancel := func(id int) string {
		return `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + strconv.Itoa(id) + `}}`
	}
	busy := func(id int) {
		t.Helper()
		h.send(t, listReq(id))
		if r := h.recv(t); string(r.ID) != strconv.Itoa(id) || r.Error == nil || r.Error.Code != CodeBusy {
			t.Fatalf("call %d answered id %s, %+v; want %d", id, r.ID, r.Error, CodeBusy)
		}
	}
	// Two rounds of two hung calls, each cancelled: the first round's
	// slots are freed at once, the second's are not.
	for round := range 2 {
		h.send(t, hang(10*round))
		h.send(t, hang(10*round+1))
		h.waitEntered(t, int32(2*round+2))
		busy(10*round + 2)
		h.send(t, cancel(10*round))
		h.send(t, cancel(10*round+1))
	}
	busy(100)
	if n := h.entered.Load(); n != 4 {
		t.Fatalf("%d handlers running, want 4", n)
	}
	// Once they return, nothing is sent for them and the slots are free.
	h.let()
	for deadline := time.Now().Add(10 * time.Second); h.left.Load() < 4; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("released handlers did not return")
		}
	}
	// (A handler's slot is freed when the SDK hands its dropped answer to
	// the transport, just after it returns: a call may be refused until
	// then.)
	for id, served, deadline := 200, 0, time.Now().Add(10*time.Second); served < 2; id++ {
		h.send(t, listReq(id))
		r := h.recv(t)
		if string(r.ID) != strconv.Itoa(id) {
			t.Fatalf("call %d after the release answered id %s: a line for a cancelled call?", id, r.ID)
		}
		switch {
		case r.Error == nil:
			served++
		case r.Error.Code != CodeBusy || time.Now().After(deadline):
			t.Fatalf("call %d after the release: %+v", id, r.Error)
		default:
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// TestDrainAtEndOfInput: calls read before the input ends are answered
// before the server stops; one that never ends holds it only for
// DrainTimeout.
func TestDrainAtEndOfInput(t *testing.T) {
	h := serve(t, &Transport{DrainTimeout: 5 * time.Second})
	for i := range 3 {
		h.send(t, blockReq(i))
	}
	h.waitEntered(t, 3)
	h.in.Close()
	time.Sleep(50 * time.Millisecond)
	h.let()
	for range 3 {
		if r := h.recv(t); r.Error != nil || len(r.Result) == 0 {
			t.Fatalf("call %s after end of input: %+v", r.ID, r.Error)
		}
	}
	select {
	case <-h.done:
	case <-time.After(5 * time.Second):
		t.Fatal("server did not stop after draining")
	}

	h = serve(t, &Transport{DrainTimeout: 100 * time.Millisecond})
	h.send(t, blockReq(1))
	h.waitEntered(t, 1)
	begin := time.Now()
	h.in.Close()
	go func() {
		for h.out.Scan() {
		}
	}()
	select {
	case <-h.done:
	case <-time.After(5 * time.Second):
		t.Fatal("a hung call held the server past its drain timeout")
	}
	if took := time.Since(begin); took < 100*time.Millisecond {
		t.Errorf("stopped after %s, before the drain timeout", took)
	}
}

// FuzzLine: a line is delivered as one message (and is valid JSON), or answered with exactly
// one JSON-RPC error (-32700 or -32600) with no id, or one that is a string
// or an integer, or (blank) ignored.
func FuzzLine(f *testing.F) {
	for _, s := range []string{listReq(1), "not json", "[]", "42", `{"jsonrpc":"2.0","id":{}}`, `{"jsonrpc":"2.0","id":"x","method":`, " ", `{"id":1e400,"jsonrpc":"2.0"}`, `{"id":1.5}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			return
		}
		var out bytes.Buffer
		c := &conn{w: &out, done: make(chan struct{}), maxCalls: 1}
		msg := c.decode(line)
		lines := bytes.Count(out.Bytes(), []byte("\n"))
		if msg != nil {
			if lines != 0 {
				t.Fatalf("%q delivered and answered", line)
			}
			if !json.Valid(line) {
				t.Fatalf("%q delivered, but it is not valid JSON", line)
			}
			return
		}
		var r response
		if lines != 1 || json.Unmarshal(out.Bytes(), &r) != nil || r.Error == nil || (r.Error.Code != -32700 && r.Error.Code != -32600) {
			t.Fatalf("%q answered %q", line, out.String())
		}
		if id := string(r.ID); id != "" && id[0] != '"' && id[0] != '-' && (id[0] < '0' || id[0] > '9') {
			t.Fatalf("%q answered with id %s", line, id)
		}
	})
}
