//go:build linux

package e2e

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fsmcp/fsmcp/internal/jsonl"
)

// protoTarget is a process fed raw JSON-RPC lines: the worker alone, or
// the supervisor in front of one.
type protoTarget struct {
	name   string
	prefix string // tool name prefix: "" or "<root>_"
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	out    *bufio.Reader
	stderr *syncBuffer
}

// protoTargets starts both on a root holding big.txt (16 KiB) and a.txt.
func protoTargets(t *testing.T) []*protoTarget {
	t.Helper()
	return protoTargetsOf(t, buildSupervisorBins(t).supervisor)
}

// protoTargetsOf is protoTargets with the given supervisor binary.
func protoTargetsOf(t *testing.T, supervisor string) []*protoTarget {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{"big.txt": strings.Repeat("0123456789abcde\n", 1024), "a.txt": "hello\n"}
	for p, body := range files {
		writeFile(t, filepath.Join(dir, "ws", p), body)
	}
	manifest := filepath.Join(dir, "fsmcp.yaml")
	writeFile(t, manifest, "version: 1\nroots:\n  - {name: ws, path: ws, include: ['**'], tools: all}\n")
	return []*protoTarget{
		startTarget(t, "worker", "", workerBin, "--root", filepath.Join(dir, "ws"), "--include", "**"),
		startTarget(t, "supervisor", "ws_", supervisor, "--manifest", manifest, "--worker", workerBin),
	}
}

func startTarget(t *testing.T, name, prefix, bin string, args ...string) *protoTarget {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = []string{}
	p := &protoTarget{name: name, prefix: prefix, cmd: cmd, stderr: &syncBuffer{}}
	cmd.Stderr = p.stderr
	p.stdin, _ = cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	p.out = bufio.NewReaderSize(stdout, 1<<20)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return p
}

type rpcReply struct {
	ID     json.RawMessage `json:"id"`
	Result *struct {
		IsError bool `json:"isError"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	} `json:"result"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func (p *protoTarget) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(p.stdin, line+"\n"); err != nil {
		t.Fatalf("%s: write: %v", p.name, err)
	}
}

func (p *protoTarget) recv(t *testing.T) rpcReply {
	t.Helper()
	line := p.recvLine(t)
	var r rpcReply
	if err := json.Unmarshal([]byte(line), &r); err != nil {
		t.Fatalf("%s: stdout line is not JSON: %.200q", p.name, line)
	}
	return r
}

// recvLine is the next line the target writes, within 20 s.
func (p *protoTarget) recvLine(t *testing.T) string {
	t.Helper()
	type got struct {
		line string
		err  error
	}
	ch := make(chan got, 1)
	go func() {
		l, err := p.out.ReadString('\n')
		ch <- got{l, err}
	}()
	select {
	case g := <-ch:
		if g.err != nil {
			t.Fatalf("%s: stdout ended (%v); stderr:\n%s", p.name, g.err, p.stderr)
		}
		return g.line
	case <-time.After(20 * time.Second):
		t.Fatalf("%s: no answer within 20s; stderr:\n%s", p.name, p.stderr)
	}
	return ""
}

func toolCall(id int, tool, args string) string {
	return `{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"tools/call","params":{` + newMeta + `,"name":"` + tool + `","arguments":` + args + `}}`
}

// vmHWM is a process's peak resident memory in KiB.
func vmHWM(pid int) int {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return n
		}
	}
	return 0
}

// TestAttackProtocolLines feeds the worker and the supervisor lines that
// are not messages, messages of the wrong shape, unknown methods and tools,
// arguments of the wrong types and a line four times the length limit:
// each gets one clear error with the request's id where it has one, and
// the next request is served.
func TestAttackProtocolLines(t *testing.T) {
	tests := []struct {
		line string
		id   string
		code int    // JSON-RPC error code, or 0 for a tool error
		want string // substring of the message
	}{
		{"not json", "", -32700, "parse error"},
		{"{", "", -32700, "parse error"},
		{`{"jsonrpc":"2.0","id":11,"method":`, "11", -32700, "parse error"},
		{`{"jsonrpc":"2.0","id":12,"method":"tools/list"} {"jsonrpc":"2.0","id":99}`, "12", -32700, "parse error"},
		{"\xff\xfe\x00\x01", "", -32700, "parse error"},
		{`[]`, "", -32600, "batches"},
		{`[` + `{"jsonrpc":"2.0","id":13,"method":"tools/list","params":{` + newMeta + `}}` + `]`, "", -32600, "batches"},
		{`42`, "", -32600, "not a JSON-RPC 2.0 message"},
		{`"tools/list"`, "", -32600, "not a JSON-RPC 2.0 message"},
		{`null`, "", -32600, "not a JSON-RPC 2.0 message"},
		{`{}`, "", -32600, "not a JSON-RPC 2.0 message"},
		{`{"jsonrpc":"1.0","id":14,"method":"tools/list"}`, "14", -32600, "not a JSON-RPC 2.0 message"},
		{`{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}`, "", -32600, "not a JSON-RPC 2.0 message"},
		{`{"jsonrpc":"2.0","id":15,"method":7}`, "15", -32600, "not a JSON-RPC 2.0 message"},
		{`{"jsonrpc":"2.0","id":16,"method":"ping","params":{` + newMeta + `}}`, "16", -32601, "method not found"},
		{`{"jsonrpc":"2.0","id":17,"method":"no/such/method","params":{` + newMeta + `}}`, "17", -32601, "method not found"},
		{`{"jsonrpc":"2.0","id":18,"method":"tools/call","params":{` + newMeta + `,"name":"delete_everything","arguments":{}}}`, "18", -32602, "Tool delete_everything not found"},
		{toolCall(19, "read_text_file", `"a.txt"`), "19", -32602, "Invalid params: arguments must be a JSON object"},
		{toolCall(20, "read_text_file", `[1]`), "20", -32602, "Invalid params: arguments must be a JSON object"},
		// A call without the protocol's _meta claim, or naming another
		// revision, is refused with -32022 (never code 0).
		{`{"jsonrpc":"2.0","id":37,"method":"tools/list"}`, "37", -32022, "Unsupported protocol version: the request did not name a protocol version"},
		{`{"jsonrpc":"2.0","id":38,"method":"tools/call","params":{"name":"read_text_file","arguments":{"path":"a.txt"}}}`, "38", -32022, "Unsupported protocol version: the request did not name a protocol version"},
		{`{"jsonrpc":"2.0","id":39,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2024-11-05"}}}`, "39", -32022, "Unsupported protocol version: the request named 2024-11-05"},
		{toolCall(21, "read_text_file", `{"path":5}`), "21", 0, "Input validation error: Invalid arguments for tool read_text_file: path must be a string"},
		{toolCall(22, "read_text_file", `{"path":"a.txt","start_line":"1"}`), "22", 0, "start_line must be a positive integer"},
		{toolCall(23, "read_text_file", `{"path":"a.txt","start_line":0}`), "23", 0, "start_line must be a positive integer"},
		{toolCall(24, "read_text_file", `{"path":"a.txt","limit":100000}`), "24", 0, "Input validation error: Invalid arguments for tool read_text_file: limit must be an integer from 1 to 8"},
		{toolCall(25, "search_files", `{"any_of":[1,2]}`), "25", 0, "any_of must be a non-empty array of strings"},
		{toolCall(26, "search_files", `{"any_of":"a"}`), "26", 0, "any_of must be a non-empty array of strings"},
		{toolCall(27, "search_text", `{"query":"a","case_insensitive":"yes"}`), "27", 0, "case_insensitive must be a boolean"},
		{toolCall(28, "search_text", `{"query":"a","bogus":1}`), "28", 0, `Input validation error: Invalid arguments for tool search_text: unknown argument "bogus"`},
		{toolCall(29, "list_directory", `{"path":"","limit":-1}`), "29", 0, "Input validation error: Invalid arguments for tool list_directory: limit must be an integer of at least 1"},
		{toolCall(30, "list_directory", `{"cursor":7}`), "30", 0, "cursor is not valid"},
		{toolCall(31, "write_text_file", `{"path":"x.txt","content":5}`), "31", 0, "Input validation error: Invalid arguments for tool write_text_file: content must be a string"},
		{toolCall(32, "write_text_file", `{"path":"x.txt"}`), "32", 0, "content is required"},
		{toolCall(33, "search_text", `{"query":"`+strings.Repeat("q", 257)+`"}`), "33", 0, "query must be one line of at most 256 UTF-8 bytes"},
		{toolCall(34, "search_text", `{"any_of":[`+strings.Repeat(`"a",`, 16)+`"a"]}`), "34", 0, "any_of accepts at most 16 terms"},
		{`{"jsonrpc":"2.0","id":35,"method":"tools/list","params":{"deep":` + strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + `}}`, "35", -32600, "not a JSON-RPC 2.0 message"},
	}
	for _, p := range protoTargets(t) {
		t.Run(p.name, func(t *testing.T) {
			next := 1000
			served := func() {
				t.Helper()
				next++
				p.send(t, `{"jsonrpc":"2.0","id":`+strconv.Itoa(next)+`,"method":"tools/list","params":{`+newMeta+`}}`)
				if r := p.recv(t); string(r.ID) != strconv.Itoa(next) || r.Error != nil || r.Result == nil {
					t.Fatalf("request %d after a bad line: id %s error %+v", next, r.ID, r.Error)
				}
			}
			served()
			for _, tc := range tests {
				line := strings.Replace(tc.line, `"name":"`, `"name":"`+p.prefix, 1)
				if strings.Contains(tc.want, "not found") {
					line = tc.line // an unknown tool stays unknown
				}
				// Through the supervisor an argument error names the tool
				// as the host called it.
				want := strings.Replace(tc.want, "Invalid arguments for tool ", "Invalid arguments for tool "+p.prefix, 1)
				p.send(t, line)
				r := p.recv(t)
				msg := ""
				switch {
				case r.Error != nil:
					msg = r.Error.Message
				case r.Result != nil && r.Result.IsError && len(r.Result.Content) > 0:
					msg = r.Result.Content[0].Text
				}
				code := 0
				if r.Error != nil {
					code = r.Error.Code
				}
				if string(r.ID) != tc.id || code != tc.code || !strings.Contains(msg, want) || (tc.code == 0 && !r.Result.IsError) {
					t.Errorf("%.80q: got id %s code %d %q, want id %s code %d containing %q", tc.line, r.ID, code, msg, tc.id, tc.code, want)
				}
				served()
			}
			// Lines over the 16 MiB limit are read through and dropped:
			// after the first, a line eight times as long adds far less
			// than itself to peak memory.
			huge := func(id string, mib int) int {
				t.Helper()
				before := vmHWM(p.cmd.Process.Pid)
				io.WriteString(p.stdin, `{"jsonrpc":"2.0","id":"`+id+`","method":"tools/call","params":{"text":"`)
				chunk := strings.Repeat("x", 1<<20)
				for range mib {
					io.WriteString(p.stdin, chunk)
				}
				p.send(t, `"}}`)
				r := p.recv(t)
				if string(r.ID) != `"`+id+`"` || r.Error == nil || r.Error.Code != -32600 || !strings.Contains(r.Error.Message, "exceeds") {
					t.Errorf("%d MiB line: id %s error %+v", mib, r.ID, r.Error)
				}
				served()
				return vmHWM(p.cmd.Process.Pid) - before
			}
			first, second := huge("32MiB", 32), huge("256MiB", 256)
			if second > 64<<10 { // a quarter of the line: it is not kept
				t.Errorf("a 256 MiB line after a 32 MiB one grew peak memory by %d KiB more", second)
			}
			if strings.Contains(p.stderr.String(), "panic") {
				t.Errorf("stderr:\n%s", p.stderr)
			}
			t.Logf("figures: protocol %s: %d bad lines answered, then served; a 32 MiB line grew peak memory by %d KiB, a 256 MiB one after it by %d KiB", p.name, len(tests), first, second)
		})
	}
}

// TestAttackProtocolFlood pipes thousands of calls into the worker and the
// supervisor without reading a single answer for a while, then reads them
// all: every call is answered once, and peak memory stays bounded: the
// worker refuses calls past its 64 in flight at once with a JSON-RPC error
// (jsonl.CodeBusy), the supervisor calls past a root's quota with a tool
// error, and the answers back up in the unread pipe.
//
// Peak memory is that of the binaries as built for users (TestMain's), not
// of a race-detector build, whose shadow memory is not the program's.
func TestAttackProtocolFlood(t *testing.T) {
	for _, p := range protoTargetsOf(t, supervisorBin) {
		t.Run(p.name, func(t *testing.T) {
			// Read answers of 16 KiB text, about 35 KB each on the wire.
			// Before calls past 64 in flight were held back, 1000 such
			// calls grew the worker by 84 MB and 600 the supervisor by
			// 67 MB.
			calls, tools := 1500, []string{toolCall(0, "read_text_file", `{"path":"big.txt"}`), toolCall(0, "search_text", `{"query":"abc","limit":20}`),
				toolCall(0, "list_directory", `{}`), toolCall(0, "read_text_file", `{"path":"big.txt"}`)}
			if p.prefix != "" {
				calls, tools = 600, tools[:1] // slower through the front; reads only
			}
			p.send(t, `{"jsonrpc":"2.0","id":0,"method":"tools/list","params":{`+newMeta+`}}`)
			p.recv(t)
			before := vmHWM(p.cmd.Process.Pid)
			sent := make(chan error, 1)
			go func() {
				w := bufio.NewWriter(p.stdin)
				for i := range calls {
					line := strings.Replace(tools[i%len(tools)], `"id":0`, `"id":`+strconv.Itoa(i+1), 1)
					w.WriteString(strings.Replace(line, `"name":"`, `"name":"`+p.prefix, 1) + "\n")
				}
				sent <- w.Flush()
			}()
			time.Sleep(time.Second) // nobody reads meanwhile
			stalled := vmHWM(p.cmd.Process.Pid)
			seen := make([]bool, calls+1)
			refused := 0
			for range calls {
				r := p.recv(t)
				id, err := strconv.Atoi(string(r.ID))
				if err != nil || id < 1 || id > calls || seen[id] {
					t.Fatalf("answer with id %s (duplicate or unknown)", r.ID)
				}
				seen[id] = true
				// A call past the calls in flight is refused at once
				// (neither reader stops reading): through the front
				// with a tool error for the root's quota, by the
				// worker alone with a JSON-RPC error.
				if p.prefix != "" && r.Error == nil && r.Result != nil && r.Result.IsError && len(r.Result.Content) == 1 &&
					strings.Contains(r.Result.Content[0].Text, "calls in flight, as many as it takes at once") {
					refused++
					continue
				}
				if p.prefix == "" && r.Error != nil && r.Error.Code == jsonl.CodeBusy && r.Error.Message == jsonl.Busy("the server", jsonl.DefaultMaxInFlight) {
					refused++
					continue
				}
				if r.Error != nil || r.Result == nil || r.Result.IsError {
					t.Fatalf("call %d: %+v %+v", id, r.Error, r.Result)
				}
			}
			if refused > calls-64 {
				t.Errorf("%d of %d calls refused; at least 64 must be served", refused, calls)
			}
			if err := <-sent; err != nil {
				t.Fatal(err)
			}
			grew := vmHWM(p.cmd.Process.Pid) - before
			if grew > 32<<10 {
				t.Errorf("peak memory grew by %d KiB over %d piped calls", grew, calls)
			}
			t.Logf("figures: flood %s: %d calls piped unread for 1 s, all answered once (%d refused past the quota); peak memory grew %d KiB (from %d; %d while stalled)", p.name, calls, refused, grew, before, stalled-before)
		})
	}
}
