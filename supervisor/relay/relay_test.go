package relay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fsmcp/fsmcp/internal/jsonl"
	"github.com/fsmcp/fsmcp/internal/profile"
	"github.com/fsmcp/fsmcp/internal/wire"
)

const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

type echoIn struct {
	Text  string `json:"text"`
	Block bool   `json:"block,omitempty"`
}

// peer is the server end of a relay: a 2026-07-28 server with an echo
// tool (which, asked to block, waits for its cancellation and reports it
// on cancelled), served over a call channel's pipes as a worker serves
// them, its reading of requests behind a gate the test can hold.
type peer struct {
	cancelled chan struct{}
	calls     atomic.Int32 // echo calls started
	gate      sync.RWMutex // held: the server does not read its requests
}

// gated is the server's reader of requests, waiting while the gate is held.
type gated struct {
	p *peer
	r io.Reader
}

func (g gated) Read(b []byte) (int, error) {
	g.p.gate.RLock()
	g.p.gate.RUnlock()
	return g.r.Read(b)
}

// both is the relay side's reader, whose Close closes its writer too.
type both struct {
	io.Reader
	ends wire.CallEnds
}

func (b both) Close() error { return b.ends.Close() }

// serve starts a peer and returns a Relay on it, reading answers of at
// most maxAnswer bytes (0: the transport's default).
func serve(t *testing.T, maxAnswer int) (*Relay, *peer) {
	t.Helper()
	p := &peer{cancelled: make(chan struct{}, 8)}
	srv := profile.New(&mcp.Implementation{Name: "peer", Version: "1"}, "")
	mcp.AddTool(srv, &mcp.Tool{Name: "echo"}, func(ctx context.Context, _ *mcp.CallToolRequest, a echoIn) (*mcp.CallToolResult, any, error) {
		p.calls.Add(1)
		if a.Block {
			<-ctx.Done()
			p.cancelled <- struct{}{}
			return nil, nil, ctx.Err()
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "said " + a.Text}}}, nil, nil
	})
	local, remote, err := wire.CallsPipes()
	if err != nil {
		t.Fatal(err)
	}
	ss, err := srv.Connect(context.Background(), &jsonl.Transport{Reader: gated{p, remote.In}, Writer: remote.Out}, nil)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := (&jsonl.Transport{Reader: both{local.In, local}, Writer: local.Out, MaxLine: maxAnswer, ReadsAnswers: true}).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	r := New(conn, local.Out)
	t.Cleanup(func() {
		r.Close()
		ss.Close()
		remote.Close()
	})
	return r, p
}

func echoParams(text string, block bool) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{%s,"name":"echo","arguments":{"text":%q,"block":%t}}`, meta, text, block))
}

func TestCallsMatchTheirResponses(t *testing.T) {
	r, _ := serve(t, 0)
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			text := fmt.Sprintf("call %d", i)
			resp, err := r.Call(context.Background(), "tools/call", echoParams(text, false))
			if err != nil {
				t.Errorf("%s: %v", text, err)
				return
			}
			if resp.Error != nil || !strings.Contains(string(resp.Result), `"said `+text+`"`) {
				t.Errorf("%s: answered %s / %v", text, resp.Result, resp.Error)
			}
		}()
	}
	wg.Wait()
}

func TestPeerErrorsComeBackAsResponses(t *testing.T) {
	r, _ := serve(t, 0)
	resp, err := r.Call(context.Background(), "no/such/method", json.RawMessage(`{`+meta+`}`))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Error == nil {
		t.Fatalf("unknown method answered %s, want a JSON-RPC error", resp.Result)
	}
}

func TestCancellationReachesThePeer(t *testing.T) {
	r, p := serve(t, 0)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	if _, err := r.Call(ctx, "tools/call", echoParams("wait", true)); !errors.Is(err, context.Canceled) || errors.Is(err, ErrUnsent) {
		t.Fatalf("cancelled call returned %v, want context.Canceled (and sent)", err)
	}
	select {
	case <-p.cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("the peer's handler was never cancelled")
	}
	// The relay still serves after a cancellation.
	if resp, err := r.Call(context.Background(), "tools/call", echoParams("after", false)); err != nil || !strings.Contains(string(resp.Result), "said after") {
		t.Fatalf("call after a cancellation: %v %s", err, resp.Result)
	}
}

func TestCloseFailsWaitingAndLaterCalls(t *testing.T) {
	r, _ := serve(t, 0)
	errc := make(chan error, 1)
	go func() {
		_, err := r.Call(context.Background(), "tools/call", echoParams("wait", true))
		errc <- err
	}()
	time.Sleep(50 * time.Millisecond)
	r.Close()
	select {
	case err := <-errc:
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("waiting call returned %v, want ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("waiting call not failed by Close")
	}
	if _, err := r.Call(context.Background(), "tools/call", echoParams("late", false)); !errors.Is(err, ErrClosed) {
		t.Fatalf("call after Close returned %v, want ErrClosed", err)
	}
	select {
	case <-r.Done():
	default:
		t.Fatal("Done not closed after Close")
	}
}

// TestSentSignalsCalls: Sent has nothing before a call, one value after any
// number of calls, and nothing once that value is taken.
func TestSentSignalsCalls(t *testing.T) {
	r, _ := serve(t, 0)
	pending := func() bool {
		select {
		case <-r.Sent():
			return true
		default:
			return false
		}
	}
	if pending() {
		t.Fatal("Sent signalled before any call")
	}
	for range 3 {
		if _, err := r.Call(context.Background(), "tools/call", echoParams("x", false)); err != nil {
			t.Fatal(err)
		}
	}
	if !pending() {
		t.Fatal("Sent did not signal after three calls")
	}
	if pending() {
		t.Fatal("Sent signalled twice for calls sent before it was received")
	}
}

// TestPeerNotReading: with the peer not reading and a request of 1 MiB
// half written, every call behind it ends at its deadline (ErrUnsent)
// and none of them ever reaches the peer; the long request's own call
// ends when it is cancelled. Once the peer reads again it gets the long
// request whole and then its cancellation, and the relay serves as before.
func TestPeerNotReading(t *testing.T) {
	r, p := serve(t, 0)
	p.gate.Lock()
	big := make(chan error, 1)
	bctx, bcancel := context.WithCancel(context.Background())
	defer bcancel()
	go func() {
		_, err := r.Call(bctx, "tools/call", echoParams(strings.Repeat("x", 1<<20), true))
		big <- err
	}()
	// Queued first, the long request is written first: the calls after
	// it wait behind it.
	for r.Pending() == 0 {
		time.Sleep(time.Millisecond)
	}
	const deadline = 300 * time.Millisecond
	start := time.Now()
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), deadline)
			defer cancel()
			begin := time.Now()
			_, err := r.Call(ctx, "tools/call", echoParams(fmt.Sprint(i), false))
			if took := time.Since(begin); !errors.Is(err, ErrUnsent) || !errors.Is(err, context.DeadlineExceeded) || took > deadline+time.Second {
				t.Errorf("call %d behind the unread request: %v after %s; want ErrUnsent at its deadline", i, err, took)
			}
		}()
	}
	wg.Wait()
	took := time.Since(start)
	stalled := r.Wrote()
	time.Sleep(50 * time.Millisecond)
	if r.Wrote() != stalled || stalled >= 1<<20 || r.Pending() != 1 {
		t.Errorf("wrote %d then %d of a 1 MiB line to a peer not reading; %d calls pending, want the long one", stalled, r.Wrote(), r.Pending())
	}
	bcancel()
	if err := <-big; !errors.Is(err, ErrUnsent) || !errors.Is(err, context.Canceled) {
		t.Errorf("the half-written request, cancelled: %v, want ErrUnsent", err)
	}
	t.Logf("%d bytes written before the peer's pipe was full; 16 calls behind it ended after %s", stalled, took.Round(time.Millisecond))
	p.gate.Unlock()
	// The long line was written whole: the next line is read as the call
	// it is.
	if resp, err := r.Call(context.Background(), "tools/call", echoParams("after", false)); err != nil || !strings.Contains(string(resp.Result), "said after") {
		t.Fatalf("call once the peer reads again: %v %v", err, resp)
	}
	// The long request's handler, which waits for its cancellation, ran
	// and was cancelled, or its cancellation came before it could start;
	// none of the calls never written ran.
	switch n := p.calls.Load(); n {
	case 1:
	case 2:
		select {
		case <-p.cancelled:
		case <-time.After(20 * time.Second):
			t.Fatal("the long request, once read, was never cancelled")
		}
	default:
		t.Errorf("the peer started %d echo calls, want the last one and at most the long one", n)
	}
}

// TestAnswerPastTheLimit: an answer longer than the relay reads fails its
// own call at once, and the connection goes on.
func TestAnswerPastTheLimit(t *testing.T) {
	r, _ := serve(t, 4096)
	_, err := r.Call(context.Background(), "tools/call", echoParams(strings.Repeat("y", 8192), false))
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "message line exceeds 4096 bytes") {
		t.Fatalf("call answered past the limit: %v", err)
	}
	if resp, err := r.Call(context.Background(), "tools/call", echoParams("short", false)); err != nil || !strings.Contains(string(resp.Result), "said short") {
		t.Fatalf("call after the refused answer: %v %v", err, resp)
	}
}
