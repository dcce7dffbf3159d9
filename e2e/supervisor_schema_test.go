package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
)

// mcpSchemaFile is the MCP 2026-07-28 wire schema every answer to a client
// of that revision must validate against (vendored; see its $comment for
// provenance).
const mcpSchemaFile = "testdata/mcp-2026-07-28.schema.json"

// mcpSchemas resolves the named definitions of the 2026-07-28 schema, each
// as a schema of its own over the whole $defs.
func mcpSchemas(t *testing.T, defs ...string) map[string]*jsonschema.Resolved {
	t.Helper()
	data, err := os.ReadFile(mcpSchemaFile)
	if err != nil {
		t.Fatal(err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		t.Fatalf("%s: %v", mcpSchemaFile, err)
	}
	out := map[string]*jsonschema.Resolved{}
	for _, def := range defs {
		w, err := json.Marshal(map[string]any{"$schema": top["$schema"], "$defs": top["$defs"], "$ref": "#/$defs/" + def})
		if err != nil {
			t.Fatal(err)
		}
		var s jsonschema.Schema
		if err := json.Unmarshal(w, &s); err != nil {
			t.Fatalf("%s: %v", def, err)
		}
		if out[def], err = s.Resolve(nil); err != nil {
			t.Fatalf("resolve %s: %v", def, err)
		}
	}
	return out
}

// rawSession speaks JSON-RPC lines to a process: answers are matched to
// calls by id; an answer without an id goes to noID.
type rawSession struct {
	t    *testing.T
	p    *supervisorProc
	meta string // the _meta member every call's params carry ("": none)
	mu   sync.Mutex
	byID map[string]chan []byte
	noID chan []byte
	next int
}

func newRawSession(t *testing.T, p *supervisorProc, meta string) *rawSession {
	s := &rawSession{t: t, p: p, meta: meta, byID: map[string]chan []byte{}, noID: make(chan []byte, 16)}
	go func() {
		sc := bufio.NewScanner(p.stdout)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			line := append([]byte(nil), sc.Bytes()...)
			var m struct {
				ID json.RawMessage `json:"id"`
			}
			_ = json.Unmarshal(line, &m)
			if len(m.ID) == 0 {
				s.noID <- line
				continue
			}
			s.chanFor(string(m.ID)) <- line
		}
	}()
	return s
}

func (s *rawSession) chanFor(id string) chan []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := s.byID[id]
	if ch == nil {
		ch = make(chan []byte, 1)
		s.byID[id] = ch
	}
	return ch
}

// send writes a call of method with params (a JSON object without its
// braces, to which the session's _meta is added) and returns its id.
func (s *rawSession) send(kind, method, params string) string {
	s.t.Helper()
	s.next++
	id := strconv.Itoa(s.next)
	members := params
	if s.meta != "" {
		members = strings.TrimPrefix(s.meta+","+params, ",")
		members = strings.TrimSuffix(members, ",")
	}
	s.write(`{"jsonrpc":"2.0","id":` + id + `,"method":"` + method + `","params":{` + members + `}}`)
	return id
}

func (s *rawSession) write(line string) {
	s.t.Helper()
	if _, err := s.p.stdin.Write([]byte(line + "\n")); err != nil {
		s.t.Fatalf("write: %v", err)
	}
}

// await is the answer to call id, within d.
func (s *rawSession) await(id string, d time.Duration) []byte {
	s.t.Helper()
	select {
	case line := <-s.chanFor(id):
		return line
	case <-time.After(d):
		s.t.Fatalf("no answer to call %s within %s; stderr:\n%s", id, d, s.p.stderr)
	}
	return nil
}

// awaitNoID is the next answer without an id, within 30 s: the answer to
// a line whose id could not be read.
func (s *rawSession) awaitNoID() []byte {
	s.t.Helper()
	select {
	case line := <-s.noID:
		return line
	case <-time.After(30 * time.Second):
		s.t.Fatalf("no answer without an id within 30s; stderr:\n%s", s.p.stderr)
	}
	return nil
}

// call sends a call and returns its answer.
func (s *rawSession) call(kind, method, params string) []byte {
	s.t.Helper()
	return s.await(s.send(kind, method, params), 30*time.Second)
}

func isToolError(line []byte) bool {
	_, isErr := toolText(line)
	return isErr
}

// answer is one answer the supervisor gave, with what it answered.
type answer struct {
	kind, method string
	line         []byte
}

// toolText is the first text of a tools/call answer's result, and whether
// the result is a tool error.
func toolText(line []byte) (string, bool) {
	var m struct {
		Result struct {
			IsError bool `json:"isError"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"result"`
	}
	_ = json.Unmarshal(line, &m)
	if len(m.Result.Content) == 0 {
		return "", m.Result.IsError
	}
	return m.Result.Content[0].Text, m.Result.IsError
}

// answerKinds has the supervisor give every kind of answer it can in one
// era and returns them: server/discover (2026-07-28) or initialize and
// ping (2025), tools/list, relayed results and tool errors (by the relay
// and by the SDK path), protocol errors (its own and a worker's), and each
// of its own tool errors: a call past call_timeout, past a root's calls in
// flight, to a root whose worker died, to a worker that stopped answering,
// and once a stop has begun.
func answerKinds(t *testing.T, s *rawSession, modern bool) []answer {
	var out []answer
	keep := func(kind, method string, line []byte) []byte {
		out = append(out, answer{kind, method, line})
		return line
	}
	c := func(kind, method, params string) []byte { return keep(kind, method, s.call(kind, method, params)) }
	call := func(kind, tool, args string) []byte {
		return c(kind, "tools/call", `"name":"`+tool+`","arguments":`+args)
	}
	if modern {
		c("discover", "server/discover", "")
	} else {
		c("initialize", "initialize", `"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}`)
		s.write(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		c("ping", "ping", "")
	}
	c("tools/list", "tools/list", "")
	call("relayed read", "reader_read_text_file", `{"path":"a.txt"}`)
	call("relayed listing", "reader_list_directory", `{"path":"","limit":1}`)
	call("relayed search page", "reader_search_text", `{"query":"needle","limit":1}`)
	call("relayed write", "writer_write_text_file", `{"path":"report.md","content":"schema\n"}`)
	call("relayed tool error", "reader_read_text_file", `{"path":"../escape"}`)
	// An escaped key is left to the SDK path (the SDK decodes it).
	c("read by the SDK path", "tools/call", `"name":"reader_read_text_file","argum\u0065nts":{"path":"a.txt"}`)
	c("tool error by the SDK path", "tools/call", `"name":"reader_read_text_file","argum\u0065nts":{"path":"../escape"}`)
	call("a worker's protocol error", "reader_read_text_file", `"a.txt"`)
	call("unknown tool", "delete_everything", `{}`)
	c("unknown method", "files/delete", "")
	c("initialize again", "initialize", `"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}`)
	if modern {
		c("ping in 2026-07-28", "ping", "")
	}
	s.write(`not json`)
	keep("parse error", "", s.awaitNoID())
	s.write(`{"jsonrpc":"2.0","method":7}`)
	keep("invalid request", "", s.awaitNoID())

	call("timeout", "stuck_read_text_file", `{"path":"stuck.txt"}`)
	var held []string
	for range 65 {
		held = append(held, s.send("held", "tools/call", `"name":"held_read_text_file","arguments":{"path":"stuck.txt"}`))
	}
	keep("busy", "tools/call", s.await(held[64], 20*time.Second))

	// A killed worker's root is restarting for 100 ms, doubling with each
	// crash in a row: killed again once back, it is down long enough for
	// calls by both paths to find it so.
	var deadRelayed, deadSDK bool
	for kill, last := 0, 0; kill < 4 && !(deadRelayed && deadSDK); kill++ {
		var w int
		eventually(t, 20*time.Second, "a new reader worker", func() bool {
			pids := s.p.workerPIDs(t)
			for _, pid := range pids {
				if pid != last && alive(pid) && strings.Contains(strings.Join(procCmdline(pid), " "), "--name reader") {
					w = pid
					return true
				}
			}
			return false
		})
		_ = syscall.Kill(w, syscall.SIGKILL)
		last = w
		if line := s.call("relayed", "tools/call", `"name":"reader_read_text_file","arguments":{"path":"a.txt"}`); isToolError(line) {
			keep("a call to a dead worker", "tools/call", line)
			deadRelayed = true
		}
		if line := s.call("by the SDK path", "tools/call", `"name":"reader_read_text_file","argum\u0065nts":{"path":"a.txt"}`); isToolError(line) {
			keep("a call to a dead worker by the SDK path", "tools/call", line)
			deadSDK = true
		}
	}
	eventually(t, 20*time.Second, "the reader back", func() bool {
		_, isErr := toolText(s.call("probe", "tools/call", `"name":"reader_read_text_file","arguments":{"path":"a.txt"}`))
		return !isErr
	})
	freeze(t, s.p.workerOf(t, "reader"))
	keep("not responding", "tools/call", s.await(s.send("not responding", "tools/call", `"name":"reader_read_text_file","arguments":{"path":"a.txt"}`), 30*time.Second))

	// The held calls are in flight, so a stop waits for them (up to
	// --grace) and answers new calls meanwhile.
	if err := s.p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the shutting-down answer", func() bool {
		line := call("probe once stopping", "reader_read_text_file", `{"path":"a.txt"}`)
		text, _ := toolText(line)
		if strings.Contains(text, "shutting down") {
			out[len(out)-1].kind = "shutting down"
			return true
		}
		return false
	})
	return out
}

// erasSchemaManifest is the manifest answerKinds needs: reader and writer
// roots, and two read roots on a FUSE mount whose reads never return, one
// with a 500 ms call_timeout, one with a minute's.
func erasSchemaManifest(t *testing.T) string {
	t.Helper()
	root, _, _ := interopTree(t)
	stuck, _ := stuckMount(t)
	manifest := filepath.Join(t.TempDir(), "fsmcp.yaml")
	writeFile(t, manifest, fmt.Sprintf(`version: 1
roots:
  - {name: reader, path: %q, include: ["**"], tools: read}
  - {name: writer, path: %q, include: ["*.md"], tools: write}
  - {name: stuck, path: %q, include: ["**"], tools: read, call_timeout: 500ms}
  - {name: held, path: %q, include: ["**"], tools: read, call_timeout: 60s}
`, root, t.TempDir(), stuck, stuck))
	return manifest
}

// TestSupervisorAnswersValidate: every kind of answer the supervisor gives
// a client of the 2026-07-28 revision validates against that revision's
// wire schema: a result as its method's *ResultResponse, an error as a
// JSONRPCErrorResponse; its own tool errors included, by the relay and by
// the SDK path. Every answer to a client of the 2025 handshake validates
// against the 1.x TypeScript SDK's schemas of that era (drive.mjs), and
// carries neither resultType nor serverInfo.
func TestSupervisorAnswersValidate(t *testing.T) {
	bins := buildSupervisorBins(t)
	schemas := mcpSchemas(t, "DiscoverResultResponse", "ListToolsResultResponse", "CallToolResultResponse", "JSONRPCErrorResponse")
	resultDef := map[string]string{"server/discover": "DiscoverResultResponse", "tools/list": "ListToolsResultResponse", "tools/call": "CallToolResultResponse"}
	manifest := erasSchemaManifest(t)

	t.Run("2026-07-28", func(t *testing.T) {
		p := launchSupervisorArgs(t, []string{"--manifest", manifest, "--worker", bins.worker, "--grace", "1s"})
		s := newRawSession(t, p, newMeta)
		answers := answerKinds(t, s, true)
		kinds := map[string]bool{}
		for _, a := range answers {
			var m map[string]any
			if err := json.Unmarshal(a.line, &m); err != nil {
				t.Fatalf("%s: answer %q: %v", a.kind, a.line, err)
			}
			def := "JSONRPCErrorResponse"
			if _, ok := m["result"]; ok {
				def = resultDef[a.method]
			}
			if def == "" {
				t.Errorf("%s: a result to %s: %.300s", a.kind, a.method, a.line)
				continue
			}
			if err := schemas[def].Validate(m); err != nil {
				t.Errorf("%s: %.400s\ndoes not validate as %s: %v", a.kind, a.line, def, err)
			}
			kinds[a.kind] = true
		}
		checkKinds(t, kinds)
	})
	t.Run("2025-11-25", func(t *testing.T) {
		p := launchSupervisorArgs(t, []string{"--manifest", manifest, "--worker", bins.worker, "--grace", "1s"})
		s := newRawSession(t, p, "")
		answers := answerKinds(t, s, false)
		kinds := map[string]bool{}
		var plan []map[string]any
		for _, a := range answers {
			var m map[string]any
			if err := json.Unmarshal(a.line, &m); err != nil {
				t.Fatalf("%s: answer %q: %v", a.kind, a.line, err)
			}
			if res, ok := m["result"].(map[string]any); ok {
				meta, _ := res["_meta"].(map[string]any)
				if _, has := res["resultType"]; has || meta["io.modelcontextprotocol/serverInfo"] != nil {
					t.Errorf("%s: a 2025 result with 2026-07-28 members: %.300s", a.kind, a.line)
				}
			}
			plan = append(plan, map[string]any{"method": a.method, "answer": m})
			kinds[a.kind] = true
		}
		checkKinds(t, kinds)
		if rep := runInterop(t, interopNode(t), interopPlan{Scenario: "validate", Answers: plan}); rep.LegacyAnswers != len(plan) {
			t.Errorf("drive.mjs checked %d answers, want %d", rep.LegacyAnswers, len(plan))
		}
	})
}

// checkKinds fails the test for a kind of answer answerKinds did not get.
func checkKinds(t *testing.T, kinds map[string]bool) {
	t.Helper()
	for _, k := range []string{"tools/list", "relayed read", "relayed tool error", "read by the SDK path", "a worker's protocol error",
		"unknown tool", "parse error", "timeout", "busy", "a call to a dead worker", "a call to a dead worker by the SDK path",
		"not responding", "shutting down"} {
		if !kinds[k] {
			t.Errorf("no answer of kind %q", k)
		}
	}
}
