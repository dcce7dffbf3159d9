//go:build linux

package e2e

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestProtocolOnly20260728(t *testing.T) {
	root := tree(t, map[string]string{"a.txt": "x"})
	p := startRaw(t, workerBin, "--root", root, "--include", "**")
	resp := p.roundTrip(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	e, _ := resp["error"].(map[string]any)
	if e == nil || e["code"] != float64(-32022) {
		t.Fatalf("initialize answered %v, want error -32022", resp)
	}
	if !strings.Contains(e["message"].(string), "2026-07-28") {
		t.Errorf("error message %q does not name 2026-07-28", e["message"])
	}
	data, _ := e["data"].(map[string]any)
	if sup, _ := data["supported"].([]any); len(sup) != 1 || sup[0] != "2026-07-28" {
		t.Errorf("error data %v, want supported [2026-07-28]", data)
	}
	// The connection stays usable.
	resp = p.roundTrip(t, `{"jsonrpc":"2.0","id":2,"method":"server/discover","params":{`+newMeta+`}}`)
	res, _ := resp["result"].(map[string]any)
	if res == nil {
		t.Fatalf("discover after a refused initialize: %v", resp)
	}
	vs, _ := res["supportedVersions"].([]any)
	if len(vs) != 1 || vs[0] != "2026-07-28" {
		t.Errorf("supportedVersions = %v", res["supportedVersions"])
	}
	caps, _ := res["capabilities"].(map[string]any)
	if len(caps) != 1 || caps["tools"] == nil {
		t.Errorf("capabilities = %v, want tools only", caps)
	}
	resp = p.roundTrip(t, `{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{`+newMeta+`}}`)
	tools := resp["result"].(map[string]any)["tools"].([]any)
	if len(tools) != 5 {
		t.Errorf("tools/list has %d tools, want 5", len(tools))
	}
	for _, tl := range tools {
		m := tl.(map[string]any)
		meta, _ := m["_meta"].(map[string]any)
		if meta["io.modelcontextprotocol/cacheScope"] != "private" {
			t.Errorf("tool %v lacks cacheScope private", m["name"])
		}
	}
}

func TestGoClientConnects(t *testing.T) {
	cs := worker(t, tree(t, map[string]string{"a.txt": "hello"}), "--include", "**")
	if v := cs.InitializeResult(); v == nil || v.ProtocolVersion != "2026-07-28" {
		t.Fatalf("negotiated %+v", v)
	}
	r := ok(t, cs, "read_text_file", map[string]any{"path": "a.txt"})
	if got := items[struct{ Text string }](t, r); len(got) != 1 || got[0].Text != "hello" {
		t.Fatalf("read = %+v", got)
	}
}

// TestExitPaths checks that end of stdin, SIGINT and SIGTERM all end the
// worker with status 0, and that it wrote nothing but protocol to stdout.
func TestExitPaths(t *testing.T) {
	root := tree(t, map[string]string{"a.txt": "x"})
	for _, how := range []string{"eof", "sigint", "sigterm"} {
		t.Run(how, func(t *testing.T) {
			cmd := exec.Command(workerBin, "--root", root, "--include", "**")
			cmd.Env = []string{}
			stdin, _ := cmd.StdinPipe()
			stdoutPipe, _ := cmd.StdoutPipe()
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			stdin.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + newMeta + `}}` + "\n"))
			out := bufio.NewReader(stdoutPipe)
			first, err := out.ReadString('\n')
			if err != nil {
				t.Fatalf("no answer: %v", err)
			}
			switch how {
			case "eof":
				stdin.Close()
			case "sigint":
				cmd.Process.Signal(os.Interrupt)
			case "sigterm":
				cmd.Process.Signal(syscall.SIGTERM)
			}
			rest, _ := io.ReadAll(out)
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("exit: %v (stderr %q)", err, stderr.String())
				}
			case <-time.After(10 * time.Second):
				cmd.Process.Kill()
				t.Fatal("worker did not exit within 10s")
			}
			for _, l := range strings.Split(strings.TrimSpace(first+string(rest)), "\n") {
				if !strings.HasPrefix(l, `{"jsonrpc":"2.0"`) {
					t.Errorf("non-protocol stdout line %q", l)
				}
			}
			if stderr.Len() != 0 {
				t.Errorf("stderr not silent: %q", stderr.String())
			}
		})
	}
}

// TestProtocolProfile walks docs/reference.md's protocol rows over raw stdio
// against both binaries: a call without the _meta claim, or naming another
// revision, gets -32022 with the supported list (never code 0); a legacy
// initialize gets -32022 with both lists from the worker and the
// connection stays usable; an unknown method -32601; an unknown tool "Tool
// <name> not found" and arguments that are not an object -32602;
// server/discover is complete, private, uncached and carries
// instructions. The supervisor serves the 2025 initialize handshake too:
// its refusals say so, and it answers a ping and an initialize.
func TestProtocolProfile(t *testing.T) {
	const (
		noClaim      = "Unsupported protocol version: the request did not name a protocol version"
		frontNoClaim = noClaim + "; begin with initialize (2025-11-25, 2025-06-18, 2025-03-26), or name 2026-07-28 in each request's _meta"
		workerOnly   = `{"supported":["2026-07-28"]}`
		frontAll     = `{"supported":["2026-07-28","2025-11-25","2025-06-18","2025-03-26"]}`
	)
	type answer struct {
		code    int    // 0: a result
		message string // exact
		data    string // exact JSON, or "" for none
	}
	rows := []struct {
		name          string
		line          string // %s: the tool name prefix
		worker, front answer
	}{
		{"no params", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, answer{-32022, noClaim, workerOnly}, answer{-32022, frontNoClaim, frontAll}},
		{"params without _meta", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"%sread_text_file","arguments":{"path":"a.txt"}}}`, answer{-32022, noClaim, workerOnly}, answer{-32022, frontNoClaim, frontAll}},
		{"_meta without the version", `{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":{}}}}`, answer{-32022, noClaim, workerOnly}, answer{-32022, frontNoClaim, frontAll}},
		{"version not a string", `{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":20260728}}}`, answer{-32022, noClaim, workerOnly}, answer{-32022, frontNoClaim, frontAll}},
		{"ping without the claim", `{"jsonrpc":"2.0","id":5,"method":"ping"}`, answer{-32022, noClaim, workerOnly}, answer{}},
		{"discover without the claim", `{"jsonrpc":"2.0","id":6,"method":"server/discover","params":{}}`, answer{-32022, noClaim, workerOnly}, answer{-32022, frontNoClaim, frontAll}},
		{"an older revision", `{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-06-18","io.modelcontextprotocol/clientCapabilities":{}}}}`,
			answer{-32022, "Unsupported protocol version: the request named 2025-06-18; this server implements 2026-07-28", `{"requested":"2025-06-18","supported":["2026-07-28"]}` /* keys sorted: re-marshalled from a map */},
			answer{-32022, "Unsupported protocol version: the request named 2025-06-18; that revision begins with initialize, so send initialize first", `{"requested":"2025-06-18","supported":["2026-07-28","2025-11-25","2025-06-18","2025-03-26"]}`}},
		{"a revision neither serves", `{"jsonrpc":"2.0","id":16,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2024-11-05","io.modelcontextprotocol/clientCapabilities":{}}}}`,
			answer{-32022, "Unsupported protocol version: the request named 2024-11-05; this server implements 2026-07-28", `{"requested":"2024-11-05","supported":["2026-07-28"]}`},
			answer{-32022, "Unsupported protocol version: the request named 2024-11-05; this server implements 2026-07-28, 2025-11-25, 2025-06-18, 2025-03-26", `{"requested":"2024-11-05","supported":["2026-07-28","2025-11-25","2025-06-18","2025-03-26"]}`}},
		{"legacy initialize", `{"jsonrpc":"2.0","id":8,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
			answer{-32022, "Unsupported protocol version: this server implements 2026-07-28 only, each request naming it in _meta (server/discover first); a host that begins with initialize connects through fsmcp-supervisor, which serves 2025-11-25, 2025-06-18 and 2025-03-26 too", `{"requested":"2025-06-18","supported":["2026-07-28"]}`},
			// The supervisor's connection began with the calls above.
			answer{-32600, "Invalid request: this connection has begun already, with an initialize or a request naming 2026-07-28 in _meta; a connection begins once", ""}},
		{"unknown method", `{"jsonrpc":"2.0","id":9,"method":"files/delete","params":{` + newMeta + `}}`, answer{-32601, `method not found: "files/delete"`, ""}, answer{-32601, `method not found: "files/delete"`, ""}},
		{"unknown tool", `{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{` + newMeta + `,"name":"delete_file","arguments":{}}}`, answer{-32602, "Tool delete_file not found", ""}, answer{-32602, "Tool delete_file not found", ""}},
		{"arguments a string", `{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{` + newMeta + `,"name":"%sread_text_file","arguments":"a.txt"}}`, answer{-32602, "Invalid params: arguments must be a JSON object", ""}, answer{-32602, "Invalid params: arguments must be a JSON object", ""}},
		{"arguments an array", `{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{` + newMeta + `,"name":"%sread_text_file","arguments":[]}}`, answer{-32602, "Invalid params: arguments must be a JSON object", ""}, answer{-32602, "Invalid params: arguments must be a JSON object", ""}},
		{"arguments a number", `{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{` + newMeta + `,"name":"%swrite_text_file","arguments":7}}`, answer{-32602, "Invalid params: arguments must be a JSON object", ""}, answer{-32602, "Invalid params: arguments must be a JSON object", ""}},
		{"arguments true", `{"jsonrpc":"2.0","id":14,"method":"tools/call","params":{` + newMeta + `,"name":"%sread_text_file","arguments":true}}`, answer{-32602, "Invalid params: arguments must be a JSON object", ""}, answer{-32602, "Invalid params: arguments must be a JSON object", ""}},
	}
	for _, p := range protoTargets(t) {
		t.Run(p.name, func(t *testing.T) {
			roundTrip := func(line string) map[string]any {
				t.Helper()
				p.send(t, line)
				l, err := p.out.ReadString('\n')
				if err != nil {
					t.Fatalf("no answer to %.100s: %v; stderr:\n%s", line, err, p.stderr)
				}
				var m map[string]any
				if err := json.Unmarshal([]byte(l), &m); err != nil {
					t.Fatalf("answer is not JSON: %.200q", l)
				}
				return m
			}
			for _, row := range rows {
				want := row.worker
				if p.name == "supervisor" {
					want = row.front
				}
				line := strings.ReplaceAll(row.line, "%s", p.prefix)
				m := roundTrip(line)
				e, _ := m["error"].(map[string]any)
				switch {
				case want.code == 0 && m["result"] == nil:
					t.Errorf("%s: answered %v, want a result", row.name, m)
				case want.code == 0:
				case e == nil:
					t.Errorf("%s: answered %v, want error %d", row.name, m, want.code)
				default:
					data := ""
					if d, ok := e["data"]; ok {
						data = string(mustJSON(d))
					}
					if e["code"] != float64(want.code) || e["message"] != want.message || data != want.data {
						t.Errorf("%s: error %v %q data %s, want %d %q data %s", row.name, e["code"], e["message"], data, want.code, want.message, want.data)
					}
				}
				// The connection stays usable after every refusal.
				if r := roundTrip(`{"jsonrpc":"2.0","id":100,"method":"tools/list","params":{` + newMeta + `}}`); r["result"] == nil {
					t.Fatalf("%s: tools/list afterwards: %v", row.name, r)
				}
			}
			// null arguments count as absent, as go-sdk's client sends them.
			m := roundTrip(`{"jsonrpc":"2.0","id":15,"method":"tools/call","params":{` + newMeta + `,"name":"` + p.prefix + `list_directory","arguments":null}}`)
			if r, _ := m["result"].(map[string]any); r == nil || r["isError"] == true {
				t.Errorf("list_directory with null arguments: %v", m)
			}
			m = roundTrip(`{"jsonrpc":"2.0","id":101,"method":"server/discover","params":{` + newMeta + `}}`)
			res, _ := m["result"].(map[string]any)
			if res == nil {
				t.Fatalf("discover: %v", m)
			}
			instr, _ := res["instructions"].(string)
			if res["resultType"] != "complete" || res["ttlMs"] != float64(0) || res["cacheScope"] != "private" ||
				!strings.Contains(instr, "relative to that root") || !strings.Contains(instr, "next_cursor") || !strings.Contains(instr, "until it is null") {
				t.Errorf("discover result %v, want resultType complete, ttlMs 0, cacheScope private and the instructions", res)
			}
			wantVersions := `["2026-07-28"]`
			if p.name == "supervisor" {
				wantVersions = `["2026-07-28","2025-11-25","2025-06-18","2025-03-26"]`
			}
			if v := mustJSON(res["supportedVersions"]); string(v) != wantVersions {
				t.Errorf("supportedVersions %s, want %s", v, wantVersions)
			}
		})
	}
}
