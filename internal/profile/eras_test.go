package profile

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fsmcp/fsmcp/internal/jsonl"
)

// eraServer serves NewFor(c) with one tool "t" on TransportFor(c) over
// JSON lines, and returns a function that sends a line and reads the
// answer (nil for a notification).
func eraServer(t *testing.T, c Config) func(line string) map[string]any {
	t.Helper()
	s := NewFor(&mcp.Implementation{Name: "eras", Version: "1"}, c)
	s.AddTool(&mcp.Tool{Name: "t", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
	})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); inW.Close(); outR.Close() })
	go func() { _ = s.Run(ctx, TransportFor(&jsonl.Transport{Reader: inR, Writer: outW}, c)) }()
	out := bufio.NewReader(outR)
	return func(line string) map[string]any {
		t.Helper()
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(line, `"id"`) {
			return nil
		}
		answer, err := out.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(answer), &m); err != nil {
			t.Fatalf("%s: %v", answer, err)
		}
		return m
	}
}

const (
	claimedMeta = `"_meta":{` + claim + `,` + caps + `}`
	initReq     = `{"jsonrpc":"2.0","id":%ID,"method":"initialize","params":{"protocolVersion":"%V","capabilities":{},"clientInfo":{"name":"h","version":"1"}}}`
)

func initLine(id, version string) string {
	return strings.NewReplacer("%ID", id, "%V", version).Replace(initReq)
}

// TestEras sends each config's lines in order (a session's state carries
// from one to the next) and checks each answer: its error code and message
// prefix, or the result members it must and must not have.
func TestEras(t *testing.T) {
	type step struct {
		line    string
		code    float64 // 0: a result
		message string  // the error's message starts so
		has     []string
		hasNot  []string
		version string // the result's protocolVersion, for initialize
	}
	noClaim := "Unsupported protocol version: the request did not name a protocol version"
	tests := []struct {
		name  string
		c     Config
		steps []step
	}{
		{"both eras", Config{Versions: Revisions}, []step{
			{line: `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, code: -32022, message: noClaim + "; begin with initialize (2025-11-25, 2025-06-18, 2025-03-26), or name 2026-07-28 in each request's _meta"},
			{line: `{"jsonrpc":"2.0","id":2,"method":"ping"}`},
			{line: `{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-06-18"}}}`, code: -32022, message: "Unsupported protocol version: the request named 2025-06-18; that revision begins with initialize, so send initialize first"},
			{line: `{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2027-01-01"}}}`, code: -32022, message: "Unsupported protocol version: the request named 2027-01-01; this server implements 2026-07-28, 2025-11-25, 2025-06-18, 2025-03-26"},
			{line: initLine("5", "2025-06-18"), has: []string{"capabilities", "serverInfo", "instructions"}, version: "2025-06-18"},
			{line: `{"jsonrpc":"2.0","method":"notifications/initialized"}`},
			{line: `{"jsonrpc":"2.0","id":6,"method":"tools/list"}`, has: []string{"tools"}, hasNot: []string{"resultType", "_meta"}},
			{line: `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"t","arguments":{}}}`, has: []string{"content"}, hasNot: []string{"resultType", "_meta"}},
			{line: `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"t","arguments":{},` + claimedMeta + `}}`, has: []string{"content", "resultType", "_meta"}},
		}},
		{"a claimed call first", Config{Versions: Revisions}, []step{
			{line: `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + claimedMeta + `}}`, has: []string{"tools", "resultType"}},
			{line: `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, code: -32022, message: noClaim + "; begin with initialize"},
			{line: initLine("3", "2025-11-25"), code: -32600, message: alreadyBegun},
			{line: `{"jsonrpc":"2.0","id":4,"method":"tools/list"}`, code: -32022, message: noClaim + "; begin with initialize"},
		}},
		{"a second initialize", Config{Versions: Revisions}, []step{
			{line: initLine("1", "2025-11-25"), has: []string{"serverInfo"}, version: "2025-11-25"},
			{line: initLine("2", "2025-11-25"), code: -32600, message: alreadyBegun},
			{line: `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`, has: []string{"tools"}},
		}},
		{"an initialize refused leaves the session uninitialized", Config{Versions: Revisions}, []step{
			{line: `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":7}}`, code: -32602, message: "Invalid params: initialize takes an object"},
			{line: `{"jsonrpc":"2.0","id":3,"method":"initialize","params":null}`, code: -32602, message: "Invalid params: initialize takes an object"},
			{line: `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, code: -32022, message: noClaim + "; begin with initialize"},
			{line: initLine("4", "2025-11-25"), has: []string{"serverInfo"}, version: "2025-11-25"},
			{line: `{"jsonrpc":"2.0","id":5,"method":"tools/list"}`, has: []string{"tools"}},
		}},
		{"an unknown revision negotiates the newest 2025 one", Config{Versions: Revisions}, []step{
			{line: initLine("1", "2024-11-05"), has: []string{"serverInfo"}, version: "2025-11-25"},
		}},
		{"2026-07-28 only", Config{}, []step{
			{line: initLine("1", "2025-11-25"), code: -32022, message: "Unsupported protocol version: this server implements 2026-07-28 only, each request naming it in _meta (server/discover first); " + WorkerHint},
			{line: `{"jsonrpc":"2.0","id":2,"method":"ping"}`, code: -32022, message: noClaim},
			{line: `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`, code: -32022, message: noClaim},
			{line: `{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{` + claimedMeta + `}}`, has: []string{"tools", "resultType"}},
		}},
		{"2025 revisions only", Config{Versions: []string{"2025-11-25", "2025-06-18"}}, []step{
			{line: `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + claimedMeta + `}}`, code: -32022, message: "Unsupported protocol version: the request named 2026-07-28; this server implements 2025-11-25, 2025-06-18"},
			{line: `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, code: -32022, message: noClaim + "; begin with initialize (2025-11-25, 2025-06-18)"},
			{line: initLine("3", "2025-03-26"), has: []string{"serverInfo"}, version: "2025-11-25"},
			{line: `{"jsonrpc":"2.0","id":4,"method":"tools/list"}`, has: []string{"tools"}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			send := eraServer(t, tt.c)
			for i, st := range tt.steps {
				m := send(st.line)
				if m == nil {
					continue
				}
				e, _ := m["error"].(map[string]any)
				res, _ := m["result"].(map[string]any)
				switch {
				case st.code != 0 && e == nil:
					t.Fatalf("step %d: %v, want error %v", i, m, st.code)
				case st.code != 0:
					if e["code"] != st.code || !strings.HasPrefix(e["message"].(string), st.message) {
						t.Errorf("step %d: error %v, want %v %q", i, e, st.code, st.message)
					}
					continue
				case res == nil:
					t.Fatalf("step %d: %v, want a result", i, m)
				}
				for _, k := range st.has {
					if _, ok := res[k]; !ok {
						t.Errorf("step %d: result %v lacks %s", i, res, k)
					}
				}
				for _, k := range st.hasNot {
					if _, ok := res[k]; ok {
						t.Errorf("step %d: result %v has %s", i, res, k)
					}
				}
				if st.version != "" && res["protocolVersion"] != st.version {
					t.Errorf("step %d: protocolVersion %v, want %s", i, res["protocolVersion"], st.version)
				}
			}
		})
	}
}

func TestCheckVersions(t *testing.T) {
	for _, tt := range []struct {
		versions []string
		err      string
	}{
		{Revisions, ""},
		{[]string{"2025-03-26"}, ""},
		{nil, "no protocol revision listed; list some of 2026-07-28, 2025-11-25, 2025-06-18, 2025-03-26"},
		{[]string{"2024-11-05"}, `"2024-11-05" is not a protocol revision fsmcp serves; use 2026-07-28, 2025-11-25, 2025-06-18, 2025-03-26`},
		{[]string{"2026-07-28", "2026-07-28"}, `"2026-07-28" is listed twice`},
	} {
		err := CheckVersions(tt.versions)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tt.err {
			t.Errorf("CheckVersions(%v) = %q, want %q", tt.versions, got, tt.err)
		}
	}
}
