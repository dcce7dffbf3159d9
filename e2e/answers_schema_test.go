//go:build linux

package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/fsmcp/fsmcp/e2e/internal/fusefs"
)

// mcpSchemaFile is the MCP 2026-07-28 wire schema every answer to a client
// of that revision must validate against (vendored; see its $comment for
// provenance).
const mcpSchemaFile = "testdata/mcp-2026-07-28.schema.json"

// clientMeta is the _meta a client of 2026-07-28 puts in every request, as
// @modelcontextprotocol/client 2.4.0 writes it: the revision, the client
// and its capabilities.
const clientMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"e2e","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`

// resultDefs names the schema definition of a result to each method a
// 2026-07-28 client sends; a result to any other method is a defect.
var resultDefs = map[string]string{
	"server/discover": "DiscoverResultResponse",
	"tools/list":      "ListToolsResultResponse",
	"tools/call":      "CallToolResultResponse",
}

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

// seenLine is one line a process wrote, with the method of the request
// whose id it carries ("" when it has none, or the line was not one of the
// session's requests).
type seenLine struct {
	method string
	line   []byte
}

// rawSession speaks JSON-RPC lines to a process and keeps every line the
// process writes: answers are matched to requests by id; one without an id
// (or with id null) also goes to noID.
type rawSession struct {
	t      *testing.T
	name   string
	in     io.Writer
	stderr fmt.Stringer
	meta   string // the _meta member every request's params carry ("": none)

	mu      sync.Mutex
	methods map[string]string // a request's id as written -> its method
	byID    map[string]chan []byte
	got     []seenLine
	kinds   map[string]bool // the kinds of answer got as expected
	noID    chan []byte
	next    int
}

func newRawSession(t *testing.T, name string, in io.Writer, out io.Reader, stderr fmt.Stringer, meta string) *rawSession {
	s := &rawSession{t: t, name: name, in: in, stderr: stderr, meta: meta, methods: map[string]string{},
		byID: map[string]chan []byte{}, kinds: map[string]bool{}, noID: make(chan []byte, 1024)}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			line := append([]byte(nil), sc.Bytes()...)
			var m struct {
				ID json.RawMessage `json:"id"`
			}
			_ = json.Unmarshal(line, &m)
			s.mu.Lock()
			s.got = append(s.got, seenLine{s.methods[string(m.ID)], line})
			s.mu.Unlock()
			// An id of null is the answer to a line without a readable
			// id too (one the schema refuses, which validate reports).
			if len(m.ID) == 0 || string(m.ID) == "null" {
				select {
				case s.noID <- line:
				default:
				}
				continue
			}
			select {
			case s.chanFor(string(m.ID)) <- line:
			default: // a second answer to one id: kept in got, and found there
			}
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

// request writes a request of method with params (a JSON object's members
// without its braces, to which the session's _meta is added) and returns
// its id.
func (s *rawSession) request(method, params string) string {
	s.t.Helper()
	s.mu.Lock()
	s.next++
	id := strconv.Itoa(s.next)
	s.methods[id] = method
	s.mu.Unlock()
	members := params
	if s.meta != "" {
		members = strings.TrimSuffix(s.meta+","+params, ",")
	}
	s.write(`{"jsonrpc":"2.0","id":` + id + `,"method":"` + method + `","params":{` + members + `}}`)
	return id
}

func (s *rawSession) write(line string) {
	s.t.Helper()
	if _, err := io.WriteString(s.in, line+"\n"); err != nil {
		s.t.Fatalf("%s: write: %v", s.name, err)
	}
}

// await is the answer to request id, within d.
func (s *rawSession) await(id string, d time.Duration) []byte {
	s.t.Helper()
	select {
	case line := <-s.chanFor(id):
		return line
	case <-time.After(d):
		s.t.Fatalf("%s: no answer to request %s within %s; stderr:\n%s", s.name, id, d, s.stderr)
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
		s.t.Fatalf("%s: no answer without an id within 30s; stderr:\n%s", s.name, s.stderr)
	}
	return nil
}

// shape is what an answer must be.
type shape int

const (
	aResult    shape = iota // a result that is not a tool error
	aToolError              // a result with isError true
	anError                 // a JSON-RPC error
)

func (w shape) String() string {
	return [...]string{"a result", "a tool error", "a JSON-RPC error"}[w]
}

// expect checks that line, the answer of kind, has the shape w and, when
// text is not empty, that its message or first text contains text; it
// notes the kind as got.
func (s *rawSession) expect(kind string, w shape, text string, line []byte) []byte {
	s.t.Helper()
	var m struct {
		Result *struct {
			IsError bool `json:"isError"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"result"`
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.Unmarshal(line, &m)
	var got shape
	msg := ""
	switch {
	case m.Error != nil:
		got, msg = anError, m.Error.Message
	case m.Result != nil && m.Result.IsError:
		got = aToolError
	case m.Result == nil:
		s.t.Errorf("%s: %s: neither a result nor an error: %.300s", s.name, kind, line)
		return line
	}
	if m.Result != nil && len(m.Result.Content) > 0 {
		msg = m.Result.Content[0].Text
	}
	if got != w || !strings.Contains(msg, text) {
		s.t.Errorf("%s: %s: got %s %.300s; want %s containing %q", s.name, kind, got, line, w, text)
		return line
	}
	s.mu.Lock()
	s.kinds[kind] = true
	s.mu.Unlock()
	return line
}

// call makes a request and checks its answer as expect does.
func (s *rawSession) call(kind string, w shape, text, method, params string) []byte {
	s.t.Helper()
	return s.expect(kind, w, text, s.await(s.request(method, params), 30*time.Second))
}

// tool calls tool with args (a JSON value) and checks the answer.
func (s *rawSession) tool(kind string, w shape, text, tool, args string) []byte {
	s.t.Helper()
	return s.call(kind, w, text, "tools/call", `"name":"`+tool+`","arguments":`+args)
}

// raw writes line and checks the answer to it: the one with id (as
// written), or with none when id is "".
func (s *rawSession) raw(kind string, w shape, text, id, line string) []byte {
	s.t.Helper()
	var m struct {
		Method string `json:"method"`
	}
	if id != "" && json.Unmarshal([]byte(line), &m) == nil {
		s.mu.Lock()
		s.methods[id] = m.Method
		s.mu.Unlock()
	}
	s.write(line)
	if id == "" {
		return s.expect(kind, w, text, s.awaitNoID())
	}
	return s.expect(kind, w, text, s.await(id, 30*time.Second))
}

// answers is every line the process wrote so far.
func (s *rawSession) answers() []seenLine {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]seenLine(nil), s.got...)
}

// checkKinds fails the test for each of kinds not got as expected.
func (s *rawSession) checkKinds(kinds ...string) {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range kinds {
		if !s.kinds[k] {
			s.t.Errorf("%s: no answer of kind %q as expected", s.name, k)
		}
	}
}

// validate checks every line the process wrote against the 2026-07-28
// schema: a result as its method's *ResultResponse, an error as a
// JSONRPCErrorResponse, a notification as a JSONRPCNotification.
func (s *rawSession) validate(schemas map[string]*jsonschema.Resolved) int {
	s.t.Helper()
	answers := s.answers()
	for _, a := range answers {
		var m map[string]any
		if err := json.Unmarshal(a.line, &m); err != nil {
			s.t.Errorf("%s: a line that is not JSON: %.300q", s.name, a.line)
			continue
		}
		_, isResult := m["result"]
		_, isError := m["error"]
		_, hasID := m["id"]
		_, hasMethod := m["method"]
		var def string
		switch {
		case isResult:
			def = resultDefs[a.method]
		case isError:
			def = "JSONRPCErrorResponse"
		case hasMethod && !hasID:
			def = "JSONRPCNotification"
		}
		if def == "" {
			s.t.Errorf("%s: an answer to %q that is none of a result of a known method, an error or a notification: %.300s", s.name, a.method, a.line)
			continue
		}
		if err := schemas[def].Validate(m); err != nil {
			s.t.Errorf("%s: %.400s\ndoes not validate as %s: %v", s.name, a.line, def, err)
		}
	}
	return len(answers)
}

// nextCursor is next_cursor of a read tool's result ("" when null).
func nextCursor(line []byte) string {
	var m struct {
		Result struct {
			StructuredContent struct {
				NextCursor string `json:"next_cursor"`
			} `json:"structuredContent"`
		} `json:"result"`
	}
	_ = json.Unmarshal(line, &m)
	return m.Result.StructuredContent.NextCursor
}

// toolAnswers makes the requests of a client of the session's era: each
// tool's result and tool error (results twice, as the first and later
// calls of a client may take different paths), a second page, and the
// protocol errors: unknown method and tool, bad params, a missing or
// broken _meta (2026-07-28), lines that are not JSON or not JSON-RPC, and
// lines past the length limit with and without an id. name gives a
// tool's name as the process serves it.
func toolAnswers(s *rawSession, name func(tool string) string, modern bool) {
	s.t.Helper()
	s.call("tools/list", aResult, "", "tools/list", "")
	s.raw("a string id", aResult, "", `"str-1"`, `{"jsonrpc":"2.0","id":"str-1","method":"tools/list","params":{`+s.meta+`}}`)
	for _, c := range []struct {
		tool, ok, bad, badText string
	}{
		{"list_directory", `{"path":""}`, `{"path":"/etc"}`, "path is not a relative path inside the root"},
		{"search_files", `{"query":"txt"}`, `{"query":""}`, "query must be a non-empty string"},
		{"search_text", `{"query":"needle"}`, `{"query":"a","any_of":["b"]}`, "pass either query or any_of, not both"},
		{"read_text_file", `{"path":"a.txt"}`, `{"path":"../escape"}`, "path is not a relative path inside the root"},
		{"write_text_file", `{"path":"report.md","content":"schema\n"}`, `{"path":"Bad Name.md","content":"x"}`, "path must be one lowercase basename"},
	} {
		s.tool(c.tool, aResult, "", name(c.tool), c.ok)
		s.tool(c.tool+" again", aResult, "", name(c.tool), c.ok)
		s.tool(c.tool+" tool error", aToolError, c.badText, name(c.tool), c.bad)
	}
	first := s.tool("a first page", aResult, "", name("search_text"), `{"query":"needle","limit":1}`)
	s.tool("a second page", aResult, "", name("search_text"), `{"query":"needle","limit":1,"cursor":"`+nextCursor(first)+`"}`)
	s.tool("a cursor not valid", aToolError, "cursor is not valid", name("list_directory"), `{"cursor":"bogus"}`)
	s.tool("input validation error", aToolError, "Input validation error", name("read_text_file"), `{"path":5}`)

	s.call("unknown method", anError, "", "files/delete", "")
	s.tool("unknown tool", anError, "not found", "delete_everything", `{}`)
	s.tool("arguments not an object", anError, "", name("read_text_file"), `"a.txt"`)
	s.call("no tool name", anError, "", "tools/call", `"arguments":{}`)
	s.raw("params not an object", anError, "", `"p-1"`, `{"jsonrpc":"2.0","id":"p-1","method":"tools/list","params":7}`)
	if modern {
		s.raw("no _meta", anError, "did not name a protocol version", `"p-2"`, `{"jsonrpc":"2.0","id":"p-2","method":"tools/list"}`)
		s.raw("_meta without clientCapabilities", anError, "clientCapabilities", `"p-3"`,
			`{"jsonrpc":"2.0","id":"p-3","method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`)
		s.call("ping", anError, "", "ping", "")
	}
	s.raw("parse error", anError, "", "", `not json`)
	s.raw("parse error with an id", anError, "", `"m-1"`, `{"jsonrpc":"2.0","id":"m-1","method":`)
	s.raw("a batch", anError, "", "", `[]`)
	s.raw("not JSON-RPC", anError, "", "", `{"jsonrpc":"2.0","method":7}`)
	pad := strings.Repeat("x", 17<<20) // past the 16 MiB line limit
	s.raw("an id that is an object", anError, "", "", `{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}`)
	s.raw("an id with a fraction", anError, "the id must be a string or an integer", "", `{"jsonrpc":"2.0","id":1.5,"method":"tools/list","params":{`+s.meta+`}}`)
	s.raw("an id with a fraction, oversized", anError, "exceeds", "", `{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{"text":"`+pad+`"}}`)
	s.raw("an oversized line", anError, "exceeds", `"big-1"`, `{"jsonrpc":"2.0","id":"big-1","method":"tools/call","params":{"text":"`+pad+`"}}`)
	s.raw("an oversized line without an id", anError, "exceeds", "", `{"jsonrpc":"2.0","method":"tools/call","params":{"text":"`+pad+`"}}`)
	s.checkKinds("tools/list", "a string id", "list_directory", "search_files", "search_text", "read_text_file", "write_text_file",
		"list_directory tool error", "search_files tool error", "search_text tool error", "read_text_file tool error", "write_text_file tool error",
		"a second page", "unknown method", "unknown tool", "arguments not an object", "parse error", "an oversized line", "an oversized line without an id",
		"an id with a fraction", "an id with a fraction, oversized")
}

// cancelAnswers: a call cancelled while its read is held in the file
// system gets no answer, even once the read returns, and the next call is
// served. tool reads held.bin of h.
func cancelAnswers(s *rawSession, tool string, h *fusefs.Held) {
	s.t.Helper()
	id := s.request("tools/call", `"name":"`+tool+`","arguments":{"path":"held.bin"}`)
	eventually(s.t, 20*time.Second, "the read of held.bin to begin", func() bool { return h.Reading.Load() >= 1 })
	s.write(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + id + `,"reason":"e2e"}}`)
	// Input is read in order: once a later request is answered, the
	// cancellation has been read.
	s.call("after a cancellation", aResult, "", "tools/list", "")
	h.Release()
	s.tool("the read after a cancellation", aResult, "", tool, `{"path":"held.bin"}`)
	time.Sleep(500 * time.Millisecond)
	for _, a := range s.answers() {
		var m struct {
			ID json.RawMessage `json:"id"`
		}
		if json.Unmarshal(a.line, &m) == nil && string(m.ID) == id {
			s.t.Errorf("%s: the cancelled call %s was answered: %.300s", s.name, id, a.line)
		}
	}
}

// ownErrorAnswers has the supervisor give each of its own tool errors: a
// call past call_timeout, past a root's calls in flight, to a root whose
// worker died (by the relay and by the SDK path), to a worker that stopped
// answering, and once a stop has begun. p must serve
// erasSchemaManifest's roots.
func ownErrorAnswers(s *rawSession, p *supervisorProc) {
	t := s.t
	t.Helper()
	s.tool("timeout", aToolError, "the call did not finish within 500ms", "stuck_read_text_file", `{"path":"stuck.txt"}`)
	var held []string
	for range 65 {
		held = append(held, s.request("tools/call", `"name":"held_read_text_file","arguments":{"path":"stuck.txt"}`))
	}
	s.expect("busy", aToolError, "root held has 64 calls in flight", s.await(held[64], 20*time.Second))

	// A killed worker's root is restarting for 100 ms, doubling with each
	// crash in a row: killed again once back, it is down long enough for
	// calls by both paths to find it so.
	dead := func(kind, args string) {
		line := s.await(s.request("tools/call", `"name":"reader_read_text_file",`+args), 30*time.Second)
		if text, isErr := toolText(line); isErr {
			s.expect(kind, aToolError, "root reader", line)
			if !strings.Contains(text, "restarting") && !strings.Contains(text, "stopped") {
				t.Errorf("%s: %q names neither a restart nor a stop", kind, text)
			}
		}
	}
	last := 0
	for kill := 0; kill < 4 && !(s.kinds["a dead worker"] && s.kinds["a dead worker by the SDK path"]); kill++ {
		var w int
		eventually(t, 20*time.Second, "a new reader worker", func() bool {
			for _, pid := range p.workerPIDs(t) {
				if pid != last && alive(pid) && strings.Contains(strings.Join(procCmdline(pid), " "), "--name reader") {
					w = pid
					return true
				}
			}
			return false
		})
		_ = syscall.Kill(w, syscall.SIGKILL)
		last = w
		dead("a dead worker", `"arguments":{"path":"a.txt"}`)
		// An escaped key is left to the SDK path (the SDK decodes it).
		dead("a dead worker by the SDK path", `"argum\u0065nts":{"path":"a.txt"}`)
	}
	eventually(t, 20*time.Second, "the reader back", func() bool {
		_, isErr := toolText(s.await(s.request("tools/call", `"name":"reader_read_text_file","arguments":{"path":"a.txt"}`), 30*time.Second))
		return !isErr
	})
	s.tool("by the SDK path", aResult, "", "reader_read_text_file", `{"path":"a.txt"}`)
	s.call("a tool error by the SDK path", aToolError, "", "tools/call", `"name":"reader_read_text_file","argum\u0065nts":{"path":"../escape"}`)
	freeze(t, p.workerOf(t, "reader"))
	s.tool("not responding", aToolError, "not responding", "reader_read_text_file", `{"path":"a.txt"}`)

	// The held calls are in flight, so a stop waits for them (up to
	// --grace) and answers new calls meanwhile.
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the shutting-down answer", func() bool {
		line := s.await(s.request("tools/call", `"name":"reader_read_text_file","arguments":{"path":"a.txt"}`), 30*time.Second)
		text, _ := toolText(line)
		if strings.Contains(text, "shutting down") {
			s.expect("shutting down", aToolError, "the supervisor is shutting down", line)
			return true
		}
		return false
	})
	s.checkKinds("timeout", "busy", "a dead worker", "a dead worker by the SDK path", "by the SDK path", "a tool error by the SDK path", "not responding", "shutting down")
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

// heldMount mounts a fusefs.Held file system in a fresh directory.
func heldMount(t *testing.T) (string, *fusefs.Held) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "held")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	h := fusefs.NewHeld(t)
	fusefs.Mount(t, dir, h)
	return dir, h
}

// schemaManifest is the supervisor's manifest for these tests: reader and
// writer roots, two read roots on a FUSE mount whose reads never return,
// one with a 500 ms call_timeout, one with a minute's, and a read root on
// h's mount, slow.
func schemaManifest(t *testing.T, root, held string) string {
	t.Helper()
	stuck, _ := stuckMount(t)
	manifest := filepath.Join(t.TempDir(), "fsmcp.yaml")
	writeFile(t, manifest, fmt.Sprintf(`version: 1
roots:
  - {name: reader, path: %q, include: ["**"], tools: read}
  - {name: writer, path: %q, include: ["*.md"], tools: write}
  - {name: stuck, path: %q, include: ["**"], tools: read, call_timeout: 500ms}
  - {name: held, path: %q, include: ["**"], tools: read, call_timeout: 60s}
  - {name: slow, path: %q, include: ["**"], tools: read}
`, root, t.TempDir(), stuck, stuck, held))
	return manifest
}

// launchRaw starts bin with args, its stdio pipes for a rawSession; the
// process is killed at cleanup.
func launchRaw(t *testing.T, bin string, args ...string) (io.Writer, io.Reader, *syncBuffer) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = []string{}
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return in, out, stderr
}

// supervisorName is the supervisor's front name of a tool of
// schemaManifest: the write tool on the writer root, the others on the
// reader root.
func supervisorName(tool string) string {
	if tool == "write_text_file" {
		return "writer_" + tool
	}
	return "reader_" + tool
}

// TestAnswersValidate: every line the worker alone and the supervisor
// write to a client of 2026-07-28 validates against that revision's wire
// schema (a result as its method's *ResultResponse, an error as a
// JSONRPCErrorResponse): server/discover, tools/list, each tool's result
// and tool error, protocol errors, lines that are not messages or are too
// long, a cancelled call, and the supervisor's own tool errors by the
// relay and by the SDK path. Every answer the supervisor gives a client of
// the 2025 handshake validates against the 1.x TypeScript SDK's schemas of
// that era (drive.mjs), and carries neither resultType nor serverInfo.
func TestAnswersValidate(t *testing.T) {
	bins := buildSupervisorBins(t)
	schemas := mcpSchemas(t, "DiscoverResultResponse", "ListToolsResultResponse", "CallToolResultResponse", "JSONRPCErrorResponse", "JSONRPCNotification")

	t.Run("worker 2026-07-28", func(t *testing.T) {
		root, _, _ := interopTree(t)
		in, out, stderr := launchRaw(t, bins.worker, "--root", root, "--include", "**")
		s := newRawSession(t, "worker", in, out, stderr, clientMeta)
		s.call("discover", aResult, "", "server/discover", "")
		s.raw("initialize", anError, "fsmcp-supervisor", `"init"`,
			`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}`)
		toolAnswers(s, func(tool string) string { return tool }, true)

		held, h := heldMount(t)
		in, out, stderr = launchRaw(t, bins.worker, "--root", held, "--include", "**")
		hs := newRawSession(t, "worker on a held mount", in, out, stderr, clientMeta)
		cancelAnswers(hs, "read_text_file", h)
		t.Logf("figures: %d lines of the worker validated", s.validate(schemas)+hs.validate(schemas))
	})
	t.Run("supervisor 2026-07-28", func(t *testing.T) {
		root, _, _ := interopTree(t)
		held, h := heldMount(t)
		p := launchSupervisorArgs(t, []string{"--manifest", schemaManifest(t, root, held), "--worker", bins.worker, "--grace", "1s"})
		s := newRawSession(t, "supervisor", p.stdin, p.stdout, p.stderr, clientMeta)
		s.call("discover", aResult, "", "server/discover", "")
		toolAnswers(s, supervisorName, true)
		cancelAnswers(s, "slow_read_text_file", h)
		ownErrorAnswers(s, p)
		t.Logf("figures: %d lines of the supervisor validated", s.validate(schemas))
	})
	t.Run("supervisor 2025-11-25", func(t *testing.T) {
		root, _, _ := interopTree(t)
		held, h := heldMount(t)
		p := launchSupervisorArgs(t, []string{"--manifest", schemaManifest(t, root, held), "--worker", bins.worker, "--grace", "1s"})
		s := newRawSession(t, "supervisor", p.stdin, p.stdout, p.stderr, "")
		s.call("initialize", aResult, "", "initialize", `"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}`)
		s.write(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		s.call("ping", aResult, "", "ping", "")
		toolAnswers(s, supervisorName, false)
		cancelAnswers(s, "slow_read_text_file", h)
		ownErrorAnswers(s, p)
		var plan []map[string]any
		for _, a := range s.answers() {
			var m map[string]any
			if err := json.Unmarshal(a.line, &m); err != nil {
				t.Fatalf("answer %q: %v", a.line, err)
			}
			if res, ok := m["result"].(map[string]any); ok {
				meta, _ := res["_meta"].(map[string]any)
				if _, has := res["resultType"]; has || meta["io.modelcontextprotocol/serverInfo"] != nil {
					t.Errorf("a 2025 result with 2026-07-28 members: %.300s", a.line)
				}
			}
			plan = append(plan, map[string]any{"method": a.method, "answer": m})
		}
		if rep := runInterop(t, interopNode(t), interopPlan{Scenario: "validate", Answers: plan}); rep.LegacyAnswers != len(plan) {
			t.Errorf("drive.mjs checked %d answers, want %d", rep.LegacyAnswers, len(plan))
		}
	})
}
