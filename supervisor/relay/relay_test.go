package relay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fsmcp/fsmcp/internal/profile"
)

const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

type echoIn struct {
	Text  string `json:"text"`
	Block bool   `json:"block,omitempty"`
}

// serve runs a 2026-07-28 server with an echo tool (which, asked to block,
// waits for its cancellation and reports it on cancelled) and returns a
// Relay on a connection to it.
func serve(t *testing.T, cancelled chan<- struct{}) *Relay {
	t.Helper()
	srv := profile.New(&mcp.Implementation{Name: "peer", Version: "1"}, "")
	mcp.AddTool(srv, &mcp.Tool{Name: "echo"}, func(ctx context.Context, _ *mcp.CallToolRequest, a echoIn) (*mcp.CallToolResult, any, error) {
		if a.Block {
			<-ctx.Done()
			cancelled <- struct{}{}
			return nil, nil, ctx.Err()
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "said " + a.Text}}}, nil, nil
	})
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	conn, err := ct.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	r := New(conn)
	t.Cleanup(func() { r.Close() })
	return r
}

func echoParams(text string, block bool) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{%s,"name":"echo","arguments":{"text":%q,"block":%t}}`, meta, text, block))
}

func TestCallsMatchTheirResponses(t *testing.T) {
	r := serve(t, nil)
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
	r := serve(t, nil)
	resp, err := r.Call(context.Background(), "no/such/method", json.RawMessage(`{`+meta+`}`))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Error == nil {
		t.Fatalf("unknown method answered %s, want a JSON-RPC error", resp.Result)
	}
}

func TestCancellationReachesThePeer(t *testing.T) {
	cancelled := make(chan struct{}, 1)
	r := serve(t, cancelled)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	if _, err := r.Call(ctx, "tools/call", echoParams("wait", true)); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call returned %v, want context.Canceled", err)
	}
	select {
	case <-cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("the peer's handler was never cancelled")
	}
	// The relay still serves after a cancellation.
	if resp, err := r.Call(context.Background(), "tools/call", echoParams("after", false)); err != nil || !strings.Contains(string(resp.Result), "said after") {
		t.Fatalf("call after a cancellation: %v %s", err, resp.Result)
	}
}

func TestCloseFailsWaitingAndLaterCalls(t *testing.T) {
	cancelled := make(chan struct{}, 1)
	r := serve(t, cancelled)
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
	r := serve(t, nil)
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
