package front

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fsmcp/fsmcp/internal/profile"
)

// root is a front.Root backed by a real MCP server over in-memory
// transports, or by a state error when down.
type root struct {
	name    string
	tools   []*mcp.Tool
	session *mcp.ClientSession
	down    error
	release chan struct{} // closing it ends the calls with wait set
}

func (r *root) Name() string       { return r.name }
func (r *root) Tools() []*mcp.Tool { return r.tools }
func (r *root) Session() (*mcp.ClientSession, error) {
	if r.down != nil {
		return nil, r.down
	}
	return r.session, nil
}
func (r *root) StateError() error { return r.down }

type echoIn struct {
	Text string `json:"text"`
	Fail bool   `json:"fail,omitempty"`
	Wait bool   `json:"wait,omitempty"` // answer once the root's release is closed
}

type echoOut struct {
	Text string `json:"text"`
}

func newRoot(t *testing.T, name string) *root {
	t.Helper()
	ctx := context.Background()
	srv := profile.New(&mcp.Implementation{Name: name, Version: "1"}, "")
	release := make(chan struct{})
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "Echo text.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, a echoIn) (*mcp.CallToolResult, echoOut, error) {
			if a.Wait {
				<-release
			}
			if a.Fail {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "refused: " + a.Text}}}, echoOut{}, nil
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "said " + a.Text}}}, echoOut{Text: a.Text}, nil
		})
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "front", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close(); _ = ss.Wait() })
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &root{name: name, tools: res.Tools, session: cs, release: release}
}

func serve(t *testing.T, roots ...Root) (*Server, *mcp.ClientSession) {
	t.Helper()
	fs, err := New(&mcp.Implementation{Name: "front", Version: "1"}, roots, time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	st, ct := mcp.NewInMemoryTransports()
	done := make(chan error, 1)
	go func() { done <- fs.Serve(context.Background(), st) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.Close()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Error("front server did not end")
		}
	})
	return fs, cs
}

func TestFront(t *testing.T) {
	a, b := newRoot(t, "alpha"), newRoot(t, "beta")
	b.down = errors.New("root beta is restarting after its worker exited; try again shortly")
	fs, host := serve(t, a, b)
	ctx := context.Background()

	list, err := host.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
		if tool.Name == "alpha_echo" {
			got, _ := json.Marshal(tool.InputSchema)
			want, _ := json.Marshal(a.tools[0].InputSchema)
			if string(got) != string(want) || tool.Description != "[alpha] Echo text." || tool.Annotations == nil || !tool.Annotations.ReadOnlyHint {
				t.Errorf("alpha_echo = %+v", tool)
			}
		}
	}
	if strings.Join(names, ",") != "alpha_echo,beta_echo" {
		t.Errorf("tools %v", names)
	}

	tests := []struct {
		name    string
		tool    string
		args    map[string]any
		isError bool
		text    string
		structT string
	}{
		{"passed through", "alpha_echo", map[string]any{"text": "hi"}, false, "said hi", "hi"},
		{"tool error passed through", "alpha_echo", map[string]any{"text": "no", "fail": true}, true, "refused: no", ""},
		{"root down", "beta_echo", map[string]any{"text": "hi"}, true, "root beta is restarting", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := host.CallTool(ctx, &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args})
			if err != nil {
				t.Fatal(err)
			}
			text := ""
			if len(res.Content) > 0 {
				text = res.Content[0].(*mcp.TextContent).Text
			}
			if res.IsError != tc.isError || !strings.Contains(text, tc.text) {
				t.Fatalf("isError=%v text=%q, want %v %q", res.IsError, text, tc.isError, tc.text)
			}
			if tc.structT != "" {
				if m, _ := res.StructuredContent.(map[string]any); m["text"] != tc.structT {
					t.Errorf("structuredContent %v", res.StructuredContent)
				}
			}
		})
	}

	// A worker's protocol error (arguments its schema rejects) comes back
	// as a protocol error, not a success.
	if res, err := host.CallTool(ctx, &mcp.CallToolParams{Name: "alpha_echo", Arguments: map[string]any{"text": 3}}); err == nil && !res.IsError {
		t.Errorf("bad arguments accepted: %+v", res)
	}

	// Once draining, new calls are refused with a tool error.
	fs.beginDrain()
	res, err := host.CallTool(ctx, &mcp.CallToolParams{Name: "alpha_echo", Arguments: map[string]any{"text": "late"}})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "shutting down") {
		t.Errorf("call while draining: %v %+v", err, res)
	}
}

// TestFrontStop: once stopped, the front still reads its input and
// answers a new call with the shutting-down tool error, while a call in
// flight is let finish; then Serve ends.
func TestFrontStop(t *testing.T) {
	a := newRoot(t, "alpha")
	fs, err := New(&mcp.Implementation{Name: "front", Version: "1"}, []Root{a}, 5*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	st, ct := mcp.NewInMemoryTransports()
	served := make(chan error, 1)
	go func() { served <- fs.Serve(context.Background(), st) }()
	ctx := context.Background()
	host, err := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	released := false
	defer func() {
		if !released {
			close(a.release) // so the root's session can end
		}
	}()
	held := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, _ := host.CallTool(ctx, &mcp.CallToolParams{Name: "alpha_echo", Arguments: map[string]any{"text": "held", "wait": true}})
		held <- res
	}()
	time.Sleep(100 * time.Millisecond) // the held call reaches the root
	fs.Stop()
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	res, err := host.CallTool(lctx, &mcp.CallToolParams{Name: "alpha_echo", Arguments: map[string]any{"text": "late"}})
	if err != nil || !res.IsError || res.Content[0].(*mcp.TextContent).Text != "the supervisor is shutting down; no new calls are taken" {
		t.Fatalf("call once stopped: %v %+v, want the shutting-down tool error", err, res)
	}
	select {
	case err := <-served:
		t.Fatalf("Serve ended (%v) with a call in flight", err)
	default:
	}
	close(a.release)
	released = true
	if res := <-held; res == nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "said held" {
		t.Errorf("the call in flight: %+v", res)
	}
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Error("Serve did not end once the call in flight was answered")
	}
}

func TestFrontDuplicateNames(t *testing.T) {
	a := newRoot(t, "alpha")
	if _, err := New(&mcp.Implementation{Name: "front", Version: "1"}, []Root{a, a}, time.Second, nil); err == nil {
		t.Fatal("two roots producing alpha_echo were accepted")
	}
}

// TestWorkerParams: the worker gets its own tool name and every other
// member as the host sent it, in its order, a 2025 host's _meta with the
// 2026-07-28 claim added; params whose meaning takes a decoder to settle
// go the SDK's way (ok false).
func TestWorkerParams(t *testing.T) {
	const claim = `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}`
	tests := []struct {
		name, params string
		front, want  string // the front tool name and the worker's params
		modern, ok   bool
	}{
		{"2026-07-28: members kept as sent", `{"_meta":{"progressToken":7,` + claim + `}, "name" : "reader_read_text_file","arguments":{ "path" : "a\"b.txt" }}`,
			"reader_read_text_file", `{"name":"read_text_file","_meta":{"progressToken":7,` + claim + `},"arguments":{ "path" : "a\"b.txt" }}`, true, true},
		{"2025: the claim added to _meta", `{"_meta":{"progressToken":7}, "name" : "reader_read_text_file","arguments":{ "path" : "a\"b.txt" }}`,
			"reader_read_text_file", `{"name":"read_text_file","_meta":{` + claim + `,"progressToken":7},"arguments":{ "path" : "a\"b.txt" }}`, false, true},
		{"2025: an empty _meta", `{"_meta":{ }, "name":"reader_read_text_file"}`, "reader_read_text_file", `{"name":"read_text_file","_meta":{` + claim + `}}`, false, true},
		{"2025: name only", `{"name":"reader_read_text_file"}`, "reader_read_text_file", `{"name":"read_text_file","_meta":{` + claim + `}}`, false, true},
		{"2025: a revision of its own named", `{"name":"r_t","_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25"}}`, "", "", false, false},
		{"2025: another protocol member", `{"name":"r_t","_meta":{"io.modelcontextprotocol/clientInfo":{}}}`, "", "", false, false},
		{"escaped name decoded", `{"name":"reader_read\u005ftext_file","arguments":{}}`,
			"reader_read_text_file", `{"name":"read_text_file","arguments":{},"_meta":{` + claim + `}}`, false, true},
		{"_meta null", `{"name":"a","_meta":null}`, "", "", false, false},
		{"_meta in another case", `{"name":"a","_Meta":{}}`, "", "", false, false},
		{"_meta key escaped", `{"name":"a","_meta":{"io.modelcontextprotocol\/protocolVersion":"2026-07-28"}}`, "", "", false, false},
		{"no name", `{"arguments":{}}`, "", "", false, false},
		{"name not a string", `{"name":7}`, "", "", false, false},
		{"name twice", `{"name":"a","name":"b"}`, "", "", false, false},
		{"member twice", `{"name":"a","arguments":{},"arguments":{"x":1}}`, "", "", false, false},
		{"escaped key", `{"name":"a","argum\u0065nts":{}}`, "", "", false, false},
		{"not an object", `["name"]`, "", "", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, ok := splitCall(json.RawMessage(tt.params))
			if ok != tt.ok || c.name != tt.front || c.modern != tt.modern {
				t.Fatalf("splitCall = %q, modern %v, %v; want %q, %v, %v", c.name, c.modern, ok, tt.front, tt.modern, tt.ok)
			}
			if !ok {
				return
			}
			got, err := c.workerParams("read_text_file")
			if err != nil || string(got) != tt.want || !json.Valid(got) {
				t.Errorf("workerParams = %s, %v; want %s", got, err, tt.want)
			}
		})
	}
}

// FuzzSplitCall: wherever the relay path takes a call's params, the
// worker's params decode to the host's, with the worker's tool name.
func FuzzSplitCall(f *testing.F) {
	for _, s := range []string{
		`{"name":"reader_read_text_file","arguments":{"path":"a"},"_meta":{"k":1}}`,
		`{"name":"a\u0062","arguments":{}}`, `{"arguments":{},"name":"x","name":"y"}`, `{"name":1}`, `[]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, params []byte) {
		var host map[string]json.RawMessage
		if !json.Valid(params) || json.Unmarshal(params, &host) != nil {
			return // the relay path sees only parsed params
		}
		c, ok := splitCall(params)
		if !ok {
			return
		}
		var name string
		if err := json.Unmarshal(host["name"], &name); err != nil || name != c.name {
			t.Fatalf("splitCall(%q) named %q, the decoder %q (%v)", params, c.name, name, err)
		}
		got, err := c.workerParams("tool")
		if err != nil {
			t.Fatal(err)
		}
		var worker map[string]any
		if err := json.Unmarshal(got, &worker); err != nil {
			t.Fatalf("workerParams(%q) = %s: %v", params, got, err)
		}
		var want map[string]any
		if err := json.Unmarshal(params, &want); err != nil {
			t.Fatal(err)
		}
		want["name"] = "tool"
		if !c.modern {
			// A 2025 call gets the claim, and has no protocol member of its own.
			meta, _ := want["_meta"].(map[string]any)
			if meta == nil {
				meta = map[string]any{}
			}
			for k := range meta {
				if strings.HasPrefix(k, "io.modelcontextprotocol/") {
					t.Fatalf("splitCall(%q) took a 2025 call with %s", params, k)
				}
			}
			meta["io.modelcontextprotocol/protocolVersion"] = "2026-07-28"
			meta["io.modelcontextprotocol/clientCapabilities"] = map[string]any{}
			want["_meta"] = meta
		}
		if !reflect.DeepEqual(worker, want) {
			t.Fatalf("workerParams(%q) = %s, want %v", params, got, want)
		}
	})
}
