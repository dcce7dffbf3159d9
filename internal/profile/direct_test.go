package profile

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fsmcp/fsmcp/internal/jsonl"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// lineServer serves a tool "t" (answering results[arguments.i]) and a tool
// "block" (answering once its context ends) on the jsonl transport, and
// sends it lines.
type lineServer struct {
	t      *testing.T
	in     io.Writer
	out    *bufio.Reader
	close  func()
	direct atomic.Int32  // calls whose handler ran on the direct path (no session)
	ended  chan struct{} // a "block" call's context ended
}

// How a lineServer serves.
type serving int

const (
	plainSDK   serving = iota // a go-sdk server with Options, results as the handler gave them
	sdkPath                   // New, on Transport: the profile without the direct path
	withDirect                // NewServer, by Run: the profile and the direct path
)

func newLineServer(t *testing.T, how serving, results []func() *mcp.CallToolResult) *lineServer {
	impl := &mcp.Implementation{Name: "test", Version: "1 <&>"}
	ls := &lineServer{t: t, ended: make(chan struct{}, 4)}
	var add func(*mcp.Tool, mcp.ToolHandler)
	var run func(context.Context, mcp.Transport) error
	switch how {
	case plainSDK:
		s := mcp.NewServer(impl, OptionsFor(Config{}))
		add, run = s.AddTool, func(ctx context.Context, t mcp.Transport) error { return s.Run(ctx, Transport(t)) }
	case sdkPath:
		s := New(impl, "")
		add, run = s.AddTool, func(ctx context.Context, t mcp.Transport) error { return s.Run(ctx, Transport(t)) }
	case withDirect:
		s := NewServer(impl, "")
		add, run = s.AddTool, func(ctx context.Context, t mcp.Transport) error { return Run(ctx, s, t) }
	}
	schema := json.RawMessage(`{"type":"object"}`)
	add(&mcp.Tool{Name: "t", InputSchema: schema}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if req.Session == nil {
			ls.direct.Add(1)
		}
		var a struct{ I int }
		_ = json.Unmarshal(req.Params.Arguments, &a)
		return results[a.I%len(results)](), nil
	})
	add(&mcp.Tool{Name: "block", InputSchema: schema}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if req.Session == nil {
			ls.direct.Add(1)
		}
		<-ctx.Done()
		ls.ended <- struct{}{}
		return page(`{"items":[],"next_cursor":null}`), nil
	})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	ls.in, ls.out = inW, bufio.NewReader(outR)
	ls.close = func() { inW.Close() }
	t.Cleanup(func() { cancel(); inW.Close(); outR.Close() })
	go run(ctx, &jsonl.Transport{Reader: inR, Writer: outW})
	return ls
}

func (ls *lineServer) send(line string) {
	ls.t.Helper()
	if _, err := io.WriteString(ls.in, line+"\n"); err != nil {
		ls.t.Fatal(err)
	}
}

func (ls *lineServer) answer() string {
	ls.t.Helper()
	line, err := ls.out.ReadString('\n')
	if err != nil {
		ls.t.Fatal(err)
	}
	return line
}

const (
	claim = `"io.modelcontextprotocol/protocolVersion":"2026-07-28"`
	caps  = `"io.modelcontextprotocol/clientCapabilities":{}`
)

func call(id int, params string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s}`, id, params)
}

// TestDirectPath sends each call twice to a server with the direct path
// and to one without, and requires the same answers byte for byte, and
// the second call on the direct path exactly where the table says. Rows
// with a _meta of their own (clientInfo) show that one spelling vouched
// for does not vouch for another.
func TestDirectPath(t *testing.T) {
	tests := []struct {
		name, params string
		direct       bool
	}{
		{"plain", `{"_meta":{` + claim + `,` + caps + `},"name":"t","arguments":{"i":0}}`, true},
		{"members in another order, white space", `{ "name" : "t", "arguments" : {"i":1} , "_meta" : { ` + caps + ` , ` + claim + ` } }`, true},
		{"capabilities of a client", `{"_meta":{` + claim + `,"io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true},"sampling":{}}},"name":"t","arguments":{"i":2}}`, true},
		{"client info", `{"_meta":{` + claim + `,` + caps + `,"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"}},"name":"t","arguments":{"i":3}}`, true},
		{"progress token, a number", `{"_meta":{` + claim + `,` + caps + `,"progressToken":7},"name":"t","arguments":{"i":4}}`, true},
		{"progress token, a string", `{"_meta":{` + claim + `,` + caps + `,"progressToken":"p-1"},"name":"t","arguments":{"i":5}}`, true},
		{"log level", `{"_meta":{` + claim + `,` + caps + `,"io.modelcontextprotocol/logLevel":"debug"},"name":"t","arguments":{"i":6}}`, true},
		// The SDK refuses these _meta: never vouched for.
		{"capabilities of the wrong type", `{"_meta":{` + claim + `,"io.modelcontextprotocol/clientCapabilities":{"roots":5}},"name":"t","arguments":{"i":0}}`, false},
		{"capabilities null", `{"_meta":{` + claim + `,"io.modelcontextprotocol/clientCapabilities":null},"name":"t","arguments":{"i":0}}`, false},
		{"no capabilities", `{"_meta":{` + claim + `},"name":"t","arguments":{"i":0}}`, false},
		{"client info not an object", `{"_meta":{` + claim + `,` + caps + `,"io.modelcontextprotocol/clientInfo":"c"},"name":"t","arguments":{"i":0}}`, false},
		// Left to the SDK as they are spelled.
		{"a host's own _meta members", `{"_meta":{` + claim + `,` + caps + `,"claudecode/toolUseId":"toolu_01","x":1,"y":true,"z":null},"name":"t","arguments":{"i":0}}`, true},
		{"a host's own _meta member, an object", `{"_meta":{` + claim + `,` + caps + `,"x":{}},"name":"t","arguments":{"i":0}}`, false},
		{"a host's own _meta member, a fraction", `{"_meta":{` + claim + `,` + caps + `,"x":1e999},"name":"t","arguments":{"i":0}}`, false},
		{"another member of the protocol's", `{"_meta":{` + claim + `,` + caps + `,"io.modelcontextprotocol/subscriptionId":"s"},"name":"t","arguments":{"i":0}}`, false},
		{"progress token with a fraction", `{"_meta":{` + claim + `,` + caps + `,"progressToken":1.5},"name":"t","arguments":{"i":0}}`, false},
		{"progress token with an escape", `{"_meta":{` + claim + `,` + caps + `,"progressToken":"p\u002d1"},"name":"t","arguments":{"i":0}}`, false},
		{"escaped version", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-2\u0038",` + caps + `},"name":"t","arguments":{"i":0}}`, false},
		{"escaped key", `{"_meta":{` + claim + `,` + caps + `},"n\u0061me":"t","arguments":{"i":0}}`, false},
		{"name twice", `{"_meta":{` + claim + `,` + caps + `},"name":"x","name":"t","arguments":{"i":0}}`, false},
		{"capabilities twice", `{"_meta":{` + claim + `,` + caps + `,` + caps + `},"name":"t","arguments":{"i":0}}`, false},
		{"_meta in another case", `{"_META":{` + claim + `,` + caps + `},"name":"t","arguments":{"i":0}}`, false},
		{"another params member", `{"_meta":{` + claim + `,` + caps + `},"name":"t","arguments":{"i":0},"x":1}`, false},
		{"no arguments", `{"_meta":{` + claim + `,` + caps + `},"name":"t"}`, false},
		{"arguments null", `{"_meta":{` + claim + `,` + caps + `},"name":"t","arguments":null}`, false},
		{"arguments an array", `{"_meta":{` + claim + `,` + caps + `},"name":"t","arguments":[1]}`, false},
		{"unknown tool", `{"_meta":{` + claim + `,` + caps + `},"name":"u","arguments":{}}`, false},
		{"name not a string", `{"_meta":{` + claim + `,` + caps + `},"name":7,"arguments":{}}`, false},
		{"no claim", `{"_meta":{` + caps + `},"name":"t","arguments":{"i":0}}`, false},
	}
	ours, sdk := newLineServer(t, withDirect, textResults), newLineServer(t, sdkPath, textResults)
	id := 0
	for _, tt := range tests {
		for send := range 2 {
			id++
			before := ours.direct.Load()
			ours.send(call(id, tt.params))
			sdk.send(call(id, tt.params))
			got, want := ours.answer(), sdk.answer()
			if got != want {
				t.Errorf("%s, call %d:\n got %s\nwant %s", tt.name, send+1, got, want)
			}
			if direct := ours.direct.Load() > before; send == 1 && direct != tt.direct {
				t.Errorf("%s: the second call direct %v, want %v", tt.name, direct, tt.direct)
			}
		}
	}
	if sdk.direct.Load() != 0 {
		t.Errorf("the server without the direct path served %d calls directly", sdk.direct.Load())
	}
}

// TestDirectCancel: a direct call's context ends when the peer cancels it
// (and nothing is sent for it), and when the input ends.
func TestDirectCancel(t *testing.T) {
	ls := newLineServer(t, withDirect, textResults)
	params := func(tool string) string {
		return `{"_meta":{` + claim + `,` + caps + `},"name":"` + tool + `","arguments":{}}`
	}
	ls.send(call(1, params("t"))) // vouches for the _meta
	ls.answer()
	ended := func(why string) {
		t.Helper()
		select {
		case <-ls.ended:
		case <-time.After(10 * time.Second):
			t.Fatalf("the blocked call's context did not end %s", why)
		}
	}
	ls.send(call(2, params("block")))
	ls.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`)
	ended("on notifications/cancelled")
	ls.send(call(3, params("t")))
	if got := ls.answer(); !strings.HasPrefix(got, `{"jsonrpc":"2.0","id":3,`) {
		t.Errorf("after the cancelled call, got %s; want the answer to call 3 (none for call 2)", got)
	}
	ls.send(call(4, params("block")))
	ls.send(call(5, params("t")))
	if got := ls.answer(); !strings.HasPrefix(got, `{"jsonrpc":"2.0","id":5,`) {
		t.Errorf("got %s; want the answer to call 5", got)
	}
	// Call 4 blocks, so the answer to call 5 may come before its handler
	// has even started: wait for it to start.
	for deadline := time.Now().Add(10 * time.Second); ls.direct.Load() < 4 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if n := ls.direct.Load(); n != 4 {
		t.Errorf("%d calls served on the direct path, want 4", n)
	}
	ls.close()
	ended("when the input ended")
}

func TestCancelledID(t *testing.T) {
	for _, tt := range []struct {
		params string
		want   string // the id as JSON; "" for none
	}{
		{`{"requestId":7}`, `7`},
		{`{"requestId":7.0}`, `7`},
		{`{"requestId":"a-1","reason":"x"}`, `"a-1"`},
		{`{"requestId":null}`, ""},
		{`{"requestId":{}}`, ""},
		{`{"reason":"x"}`, ""},
		{`[]`, ""},
		{``, ""},
	} {
		id, ok := CancelledID(json.RawMessage(tt.params))
		got := ""
		if ok {
			b, err := json.Marshal(id.Raw())
			if err != nil {
				t.Fatal(err)
			}
			got = string(b)
		}
		if got != tt.want {
			t.Errorf("CancelledID(%s) = %s, want %s", tt.params, got, tt.want)
		}
	}
}
