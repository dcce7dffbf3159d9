//go:build linux

package e2e

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func callTool(t testing.TB, s *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	return res
}

func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func listToolNames(t testing.TB, s *mcp.ClientSession) map[string]*mcp.Tool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := s.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	out := map[string]*mcp.Tool{}
	for _, tool := range res.Tools {
		out[tool.Name] = tool
	}
	return out
}

func keys[M ~map[string]V, V any](m M) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestSupervisorWorkerRefusesConfig: a worker that refuses its command line
// at startup (exit 64) is a configuration error of the supervisor too. The
// manifest refuses everything the real worker would (TestManifestMistakes),
// so the worker here is the real one behind a wrapper that adds a second
// --root, as a wrong --worker script could.
func TestSupervisorWorkerRefusesConfig(t *testing.T) {
	bins := buildSupervisorBins(t)
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "ws"), 0o755); err != nil {
		t.Fatal(err)
	}
	wrapper := filepath.Join(dir, "worker.sh")
	writeFile(t, wrapper, "#!/bin/sh\nexec "+strconv.Quote(bins.worker)+" \"$@\" --root "+strconv.Quote(dir)+"\n")
	if err := os.Chmod(wrapper, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "m.yaml")
	writeFile(t, file, "version: 1\nroots:\n  - name: tiny\n    path: ws\n    include: ['**']\n    tools: read\n")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bins.supervisor, "--manifest", file, "--worker", wrapper)
	cmd.Env = []string{}
	out, _ := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); code != 64 {
		t.Fatalf("exit %d, want 64; output:\n%s", code, out)
	}
	if !strings.Contains(string(out), "tiny: fsmcp-worker: --root is given twice") || !strings.Contains(string(out), "root tiny") {
		t.Errorf("output does not name the root and the worker's refusal:\n%s", out)
	}
}

// TestSupervisorInitialize: the supervisor takes the 2025 initialize
// handshake at each 2025 revision it serves (a revision it does not
// serve is answered with its newest 2025 one), naming itself, the tools
// capability alone and its instructions; a manifest whose
// protocol_versions lists 2026-07-28 alone refuses it with -32022, naming
// what it serves, and the same connection then serves server/discover.
func TestSupervisorInitialize(t *testing.T) {
	bins := buildSupervisorBins(t)
	ws := t.TempDir()
	for _, tc := range []struct{ requested, answered string }{
		{"2025-11-25", "2025-11-25"}, {"2025-06-18", "2025-06-18"}, {"2025-03-26", "2025-03-26"}, {"2024-11-05", "2025-11-25"},
	} {
		t.Run(tc.requested, func(t *testing.T) {
			p := launchSupervisor(t, writeManifest(t, rootSpec{name: "ws", path: ws}), bins.worker)
			line := p.roundTripLine(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+tc.requested+`","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
			var resp struct {
				Result map[string]json.RawMessage `json:"result"`
			}
			if err := json.Unmarshal([]byte(line), &resp); err != nil {
				t.Fatalf("answer %q: %v", line, err)
			}
			r := resp.Result
			if string(r["protocolVersion"]) != `"`+tc.answered+`"` || string(r["capabilities"]) != `{"tools":{}}` ||
				!strings.HasPrefix(string(r["serverInfo"]), `{"name":"fsmcp-supervisor"`) || !strings.Contains(string(r["instructions"]), "next_cursor") {
				t.Errorf("initialize answered %s, want protocolVersion %s, tools only, serverInfo fsmcp-supervisor and the instructions", line, tc.answered)
			}
			if _, ok := r["resultType"]; ok {
				t.Errorf("a 2025 result carries resultType: %s", line)
			}
		})
	}
	t.Run("2026-07-28 only", func(t *testing.T) {
		file := writeManifest(t, rootSpec{name: "ws", path: ws})
		data, _ := os.ReadFile(file)
		writeFile(t, file, strings.Replace(string(data), "version: 1\n", "version: 1\nprotocol_versions: [\"2026-07-28\"]\n", 1))
		p := launchSupervisor(t, file, bins.worker)
		line := p.roundTripLine(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
		const want = `{"jsonrpc":"2.0","id":1,"error":{"code":-32022,"message":"Unsupported protocol version: this server implements 2026-07-28 only, each request naming it in _meta (server/discover first); this supervisor's manifest restricts protocol_versions to the 2026-07-28 era","data":{"supported":["2026-07-28"],"requested":"2025-06-18"}}}`
		if strings.TrimSpace(line) != want {
			t.Fatalf("answer\n got %s\nwant %s", line, want)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		client := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
		s, err := client.Connect(ctx, &mcp.IOTransport{Reader: struct {
			*bufio.Reader
			closer
		}{p.lines, closer{p.stdout}}, Writer: p.stdin}, nil)
		if err != nil {
			t.Fatalf("server/discover after refused initialize: %v", err)
		}
		p.session = s
		if got := s.InitializeResult().ProtocolVersion; got != "2026-07-28" {
			t.Errorf("protocol %q, want 2026-07-28", got)
		}
		if caps := s.InitializeResult().Capabilities; caps.Tools == nil || caps.Logging != nil || caps.Resources != nil || caps.Prompts != nil {
			t.Errorf("capabilities %+v, want tools only", caps)
		}
	})
}

// roundTripLine writes line to the supervisor and returns the line it
// answers, within 20 s.
func (p *supervisorProc) roundTripLine(t testing.TB, line string) string {
	t.Helper()
	if p.lines == nil {
		p.lines = bufio.NewReader(p.stdout)
	}
	if _, err := p.stdin.Write([]byte(line + "\n")); err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 1)
	go func() {
		l, _ := p.lines.ReadString('\n')
		got <- l
	}()
	select {
	case l := <-got:
		return l
	case <-time.After(20 * time.Second):
		t.Fatalf("no answer to %.80s; stderr:\n%s", line, p.stderr)
	}
	return ""
}

type closer struct{ c interface{ Close() error } }

func (c closer) Close() error { return c.c.Close() }

// TestSupervisorReaderWriter loads manifests/reader-writer.yaml: the front
// lists exactly the masked tools as <root>_<tool> with the workers' schemas
// and annotations, routes calls, and passes results through unchanged.
func TestSupervisorReaderWriter(t *testing.T) {
	bins := buildSupervisorBins(t)
	file, dir := exampleManifest(t, "reader-writer.yaml", "workspace", "outbox")
	writeFile(t, filepath.Join(dir, "workspace", "notes.txt"), "alpha\nbeta\n")
	p := startSupervisor(t, file, bins.worker)
	tools := listToolNames(t, p.session)
	want := []string{"reader_list_directory", "reader_read_text_file", "reader_search_files", "reader_search_text", "writer_write_text_file"}
	if got := keys(tools); !slices.Equal(got, want) {
		t.Fatalf("tools %v, want %v", got, want)
	}
	for name, tool := range tools {
		root := strings.SplitN(name, "_", 2)[0]
		if !strings.HasPrefix(tool.Description, "["+root+"] ") {
			t.Errorf("%s description %q lacks the root prefix", name, tool.Description)
		}
		if tool.InputSchema == nil {
			t.Errorf("%s has no input schema", name)
		}
	}

	res := callTool(t, p.session, "reader_read_text_file", map[string]any{"path": "notes.txt"})
	if res.IsError {
		t.Fatalf("read: %s", resultText(res))
	}
	sc, _ := json.Marshal(res.StructuredContent)
	var page struct {
		Items []struct {
			ByteOffset int    `json:"byte_offset"`
			Text       string `json:"text"`
		} `json:"items"`
		ContentHash string `json:"content_hash"`
	}
	if err := json.Unmarshal(sc, &page); err != nil || len(page.Items) != 1 || page.Items[0].Text != "alpha\nbeta\n" || page.ContentHash == "" {
		t.Fatalf("read result %s (%v)", sc, err)
	}

	// Cursors pass through untouched: page a file larger than the root's
	// max_read_bytes (16384) to its end through the front.
	big := strings.Repeat("0123456789abcdef\n", 3000)
	writeFile(t, filepath.Join(dir, "workspace", "big.txt"), big)
	var got strings.Builder
	args := map[string]any{"path": "big.txt"}
	for pages := 0; ; pages++ {
		if pages > 10 {
			t.Fatal("more than 10 pages for a 51 KB file")
		}
		r := callTool(t, p.session, "reader_read_text_file", args)
		if r.IsError {
			t.Fatalf("page %d: %s", pages, resultText(r))
		}
		var pg struct {
			Items []struct {
				Text string `json:"text"`
			} `json:"items"`
			NextCursor *string `json:"next_cursor"`
		}
		if err := json.Unmarshal(mustJSON(r.StructuredContent), &pg); err != nil {
			t.Fatal(err)
		}
		for _, it := range pg.Items {
			got.WriteString(it.Text)
		}
		if pg.NextCursor == nil || *pg.NextCursor == "" {
			if pages == 0 {
				t.Fatal("a 51 KB file came back in one page")
			}
			break
		}
		args = map[string]any{"path": "big.txt", "cursor": *pg.NextCursor}
	}
	if got.String() != big {
		t.Errorf("paged text differs from the file (%d bytes, want %d)", got.Len(), len(big))
	}

	res = callTool(t, p.session, "writer_write_text_file", map[string]any{"path": "report.md", "content": "# done\n"})
	if res.IsError {
		t.Fatalf("write: %s", resultText(res))
	}
	if b, err := os.ReadFile(filepath.Join(dir, "outbox", "report.md")); err != nil || string(b) != "# done\n" {
		t.Fatalf("outbox/report.md = %q, %v", b, err)
	}
	// A tool error from the worker comes back as a tool error.
	if res := callTool(t, p.session, "reader_read_text_file", map[string]any{"path": "absent.txt"}); !res.IsError {
		t.Errorf("reading a missing file: not a tool error: %s", resultText(res))
	}
	// Authority is split by process: the reader has no write tool at all.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if res, err := p.session.CallTool(ctx, &mcp.CallToolParams{Name: "reader_write_text_file", Arguments: map[string]any{"path": "x.md", "content": "x"}}); err == nil && !res.IsError {
		t.Errorf("reader_write_text_file succeeded")
	}
	if !bins.real {
		return
	}
	// Against the worker alone with the same flags: same schemas and
	// annotations, same result.
	alone := connectWorkerAlone(t, bins.worker, "--root", filepath.Join(dir, "workspace"), "--include", "**", "--exclude", "**/secrets/**", "--tools", "read", "--max-read-bytes", "16384", "--name", "reader")
	direct := listToolNames(t, alone)
	for name, tool := range direct {
		ft := tools["reader_"+name]
		if ft == nil {
			t.Errorf("front lacks reader_%s", name)
			continue
		}
		a, _ := json.Marshal(tool.InputSchema)
		b, _ := json.Marshal(ft.InputSchema)
		c, _ := json.Marshal(tool.OutputSchema)
		d, _ := json.Marshal(ft.OutputSchema)
		e, _ := json.Marshal(tool.Annotations)
		f, _ := json.Marshal(ft.Annotations)
		if string(a) != string(b) || string(c) != string(d) || string(e) != string(f) || ft.Description != "[reader] "+tool.Description {
			t.Errorf("reader_%s differs from the worker's tool", name)
		}
	}
	dres := callTool(t, alone, "read_text_file", map[string]any{"path": "notes.txt"})
	dsc, _ := json.Marshal(dres.StructuredContent)
	if string(dsc) != string(sc) || resultText(dres) != resultText(callTool(t, p.session, "reader_read_text_file", map[string]any{"path": "notes.txt"})) {
		t.Errorf("front result differs from the worker's:\n front %s\nworker %s", sc, dsc)
	}
}

// connectWorkerAlone runs the worker binary on its own stdio.
func connectWorkerAlone(t testing.TB, bin string, args ...string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
	s, err := client.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(bin, args...)}, nil)
	if err != nil {
		t.Fatalf("connect to worker alone: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestSupervisorExampleManifests loads each example manifest and checks the
// tools served and each worker's command line and environment: its mask,
// and only the variables its root was granted.
func TestSupervisorExampleManifests(t *testing.T) {
	bins := buildSupervisorBins(t)
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	keyEnv := "FSMCP_DOCS_CURSOR_KEY=" + base64.RawURLEncoding.EncodeToString(key)
	tests := []struct {
		manifest string
		dirs     []string
		tools    []string
		masks    map[string]string // root -> --tools value
		granted  map[string][]string
	}{
		{"reader-writer.yaml", []string{"workspace", "outbox"},
			[]string{"reader_list_directory", "reader_read_text_file", "reader_search_files", "reader_search_text", "writer_write_text_file"},
			map[string]string{"reader": "list_directory,search_files,search_text,read_text_file", "writer": "write_text_file"},
			map[string][]string{"reader": nil, "writer": nil}},
		{"docs-readonly.yaml", []string{"docs"},
			[]string{"docs_list_directory", "docs_read_text_file"},
			map[string]string{"docs": "list_directory,read_text_file"},
			map[string][]string{"docs": {"FSMCP_DOCS_CURSOR_KEY"}}},
		{"outbox.yaml", []string{"outbox"},
			[]string{"outbox_write_text_file"},
			map[string]string{"outbox": "write_text_file"},
			map[string][]string{"outbox": nil}},
	}
	for _, tc := range tests {
		t.Run(tc.manifest, func(t *testing.T) {
			file, _ := exampleManifest(t, tc.manifest, tc.dirs...)
			p := startSupervisor(t, file, bins.worker, keyEnv, "FSMCP_E2E_HOST_SECRET=do-not-pass")
			if got := keys(listToolNames(t, p.session)); !slices.Equal(got, tc.tools) {
				t.Errorf("tools %v, want %v", got, tc.tools)
			}
			for root, mask := range tc.masks {
				pid := p.workerOf(t, root)
				args := procCmdline(pid)
				if i := slices.Index(args, "--tools"); i < 0 || i+1 >= len(args) || args[i+1] != mask {
					t.Errorf("%s worker args %q, want --tools %s", root, args, mask)
				}
				var names []string
				for _, kv := range procEnviron(pid) {
					name, value, _ := strings.Cut(kv, "=")
					// Its TLS key reaches a worker through a pipe, never
					// its environment.
					if strings.Contains(value, "PRIVATE KEY") {
						t.Errorf("%s worker environment holds a private key: %.40s", root, kv)
					}
					// go-plugin's handshake, the cookie, and the
					// descriptor numbers of the call channel and the TLS
					// keys: no root's variables.
					if strings.HasPrefix(name, "PLUGIN_") || name == "FSMCP_WORKER_PLUGIN" || name == "FSMCP_WORKER_CALLS_FD" || name == "FSMCP_WORKER_KEYS_FD" {
						continue
					}
					names = append(names, name)
				}
				if !slices.Equal(names, tc.granted[root]) {
					t.Errorf("%s worker environment has %v, want only %v", root, names, tc.granted[root])
				}
			}
		})
	}
}

// TestSupervisorWorkerCrash: a killed worker's tools fail at once with a
// tool error naming the root and "restarting", other roots keep serving,
// the worker comes back, and its stderr reached ours prefixed by the root.
func TestSupervisorWorkerCrash(t *testing.T) {
	bins := buildSupervisorBins(t)
	file, dir := exampleManifest(t, "reader-writer.yaml", "workspace", "outbox")
	writeFile(t, filepath.Join(dir, "workspace", "a.txt"), "a\n")
	p := startSupervisor(t, file, bins.worker)
	old := p.workerOf(t, "reader")
	if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	res := callTool(t, p.session, "reader_read_text_file", map[string]any{"path": "a.txt"})
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("call to the dead root took %s", took)
	}
	if !res.IsError || !strings.Contains(resultText(res), "root reader") || !strings.Contains(resultText(res), "restarting") {
		t.Errorf("call to the dead root: isError=%v %q, want a tool error naming root reader and restarting", res.IsError, resultText(res))
	}
	if res := callTool(t, p.session, "writer_write_text_file", map[string]any{"path": "w.md", "content": "w"}); res.IsError {
		t.Errorf("writer affected by the reader's crash: %s", resultText(res))
	}
	eventually(t, 10*time.Second, "the reader to come back", func() bool {
		res := callTool(t, p.session, "reader_read_text_file", map[string]any{"path": "a.txt"})
		return !res.IsError
	})
	if pid := p.workerOf(t, "reader"); pid == old {
		t.Errorf("reader worker pid unchanged after kill")
	}
	if !strings.Contains(p.stderr.String(), "reader: worker exited; restarting in 100ms") {
		t.Errorf("stderr lacks the prefixed restart line:\n%s", p.stderr)
	}
}

// TestSupervisorRootFailsAfterCrashes: more than 5 crashes in 60 s mark the
// root failed; its tools say so, the other root is unaffected.
func TestSupervisorRootFailsAfterCrashes(t *testing.T) {
	bins := buildSupervisorBins(t)
	file, dir := exampleManifest(t, "reader-writer.yaml", "workspace", "outbox")
	writeFile(t, filepath.Join(dir, "workspace", "a.txt"), "a\n")
	p := startSupervisor(t, file, bins.worker)
	for i := range 6 {
		var pid int
		eventually(t, 15*time.Second, fmt.Sprintf("reader worker %d", i+1), func() bool {
			for _, c := range p.workerPIDs(t) {
				if slices.Contains(procCmdline(c), "reader") && alive(c) {
					pid = c
					return true
				}
			}
			return false
		})
		_ = syscall.Kill(pid, syscall.SIGKILL)
		eventually(t, 5*time.Second, "the worker to die", func() bool { return !alive(pid) })
	}
	eventually(t, 5*time.Second, "the root to be failed", func() bool {
		res := callTool(t, p.session, "reader_read_text_file", map[string]any{"path": "a.txt"})
		return res.IsError && strings.Contains(resultText(res), "root reader failed after 6 crashes within 60s")
	})
	if res := callTool(t, p.session, "writer_write_text_file", map[string]any{"path": "w.md", "content": "w"}); res.IsError {
		t.Errorf("writer affected: %s", resultText(res))
	}
}

// TestSupervisorShutdown: SIGINT, SIGTERM and end of input each let the
// call in flight finish, stop the workers and exit 0 with no process left.
func TestSupervisorShutdown(t *testing.T) {
	bins := buildSupervisorBins(t)
	tests := []struct {
		name string
		stop func(p *supervisorProc)
	}{
		{"SIGINT", func(p *supervisorProc) { _ = p.cmd.Process.Signal(syscall.SIGINT) }},
		{"SIGTERM", func(p *supervisorProc) { _ = p.cmd.Process.Signal(syscall.SIGTERM) }},
		{"end of input", func(p *supervisorProc) { _ = p.stdin.Close() }},
		{"SIGTERM to the process group", func(p *supervisorProc) { _ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			file, _ := exampleManifest(t, "reader-writer.yaml", "workspace", "outbox")
			p := startSupervisor(t, file, bins.testWorker)
			workers := p.workerPIDs(t)
			if len(workers) != 2 {
				t.Fatalf("workers %v, want 2", workers)
			}
			type outcome struct {
				res *mcp.CallToolResult
				err error
			}
			done := make(chan outcome, 1)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				res, err := p.session.CallTool(ctx, &mcp.CallToolParams{Name: "reader_read_text_file", Arguments: map[string]any{"path": "slow-800ms"}})
				done <- outcome{res, err}
			}()
			time.Sleep(200 * time.Millisecond)
			tc.stop(p)
			o := <-done
			if o.err != nil || o.res.IsError || !strings.Contains(string(mustJSON(o.res.StructuredContent)), "slept") {
				t.Errorf("call in flight: %v %+v\nstderr:\n%s", o.err, o.res, p.stderr)
			}
			if code := p.wait(t, 10*time.Second); code != 0 {
				t.Errorf("exit %d, want 0; stderr:\n%s", code, p.stderr)
			}
			for _, w := range workers {
				if alive(w) {
					t.Errorf("worker %d still running", w)
				}
			}
		})
	}
}

// TestSupervisorGraceExpires: a call that outlives --grace does not hold the
// supervisor up: it stops the workers and exits 0 soon after the grace.
func TestSupervisorGraceExpires(t *testing.T) {
	bins := buildSupervisorBins(t)
	file, _ := exampleManifest(t, "reader-writer.yaml", "workspace", "outbox")
	p := startSupervisorArgs(t, []string{"--manifest", file, "--worker", bins.testWorker, "--grace", "300ms"})
	workers := p.workerPIDs(t)
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_, err := p.session.CallTool(ctx, &mcp.CallToolParams{Name: "reader_read_text_file", Arguments: map[string]any{"path": "slow-20s"}})
		done <- err
	}()
	time.Sleep(200 * time.Millisecond)
	start := time.Now()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	if code := p.wait(t, 8*time.Second); code != 0 {
		t.Errorf("exit %d, want 0; stderr:\n%s", code, p.stderr)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("took %s to stop with a 300ms grace", took)
	}
	select {
	case err := <-done:
		if err == nil {
			t.Error("the call cut off at shutdown reported success")
		}
	case <-time.After(5 * time.Second):
		t.Error("the call cut off at shutdown never returned")
	}
	for _, w := range workers {
		if alive(w) {
			t.Errorf("worker %d still running", w)
		}
	}
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// TestSupervisorShutdownRealWorker: the real worker is stopped the same way.
func TestSupervisorShutdownRealWorker(t *testing.T) {
	bins := buildSupervisorBins(t)
	if !bins.real {
		t.Skip("needs the real fsmcp-worker")
	}
	file, _ := exampleManifest(t, "reader-writer.yaml", "workspace", "outbox")
	p := startSupervisor(t, file, bins.worker)
	workers := p.workerPIDs(t)
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	if code := p.wait(t, 10*time.Second); code != 0 {
		t.Errorf("exit %d, want 0; stderr:\n%s", code, p.stderr)
	}
	for _, w := range workers {
		if alive(w) {
			t.Errorf("worker %d still running", w)
		}
	}
}

// TestSupervisorKilledLeavesNoWorker: SIGKILL on the supervisor takes its
// workers with it: by the parent-death signal on Linux, and by the end of
// their call channels (wire.Serve) where there is none, as under
// fsmcp_portable.
func TestSupervisorKilledLeavesNoWorker(t *testing.T) {
	bins := buildSupervisorBins(t)
	file, _ := exampleManifest(t, "reader-writer.yaml", "workspace", "outbox")
	p := startSupervisor(t, file, bins.worker)
	workers := p.workerPIDs(t)
	if len(workers) != 2 {
		t.Fatalf("workers %v, want 2", workers)
	}
	_ = p.cmd.Process.Kill()
	p.wait(t, 5*time.Second)
	eventually(t, 5*time.Second, "workers to die with the supervisor", func() bool {
		for _, w := range workers {
			if alive(w) {
				return false
			}
		}
		return true
	})
}

// TestSupervisorCancellation: a host's cancellation reaches the worker.
func TestSupervisorCancellation(t *testing.T) {
	bins := buildSupervisorBins(t)
	file, _ := exampleManifest(t, "reader-writer.yaml", "workspace", "outbox")
	p := startSupervisor(t, file, bins.testWorker)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := p.session.CallTool(ctx, &mcp.CallToolParams{Name: "reader_read_text_file", Arguments: map[string]any{"path": "slow-30s"}}); err == nil {
		t.Fatal("cancelled call returned no error")
	}
	eventually(t, 5*time.Second, "the worker to see the cancellation", func() bool {
		return strings.Contains(p.stderr.String(), "reader: testworker: slow call cancelled")
	})
	if res := callTool(t, p.session, "writer_write_text_file", map[string]any{"path": "w.md", "content": "w"}); res.IsError {
		t.Errorf("after cancellation: %s", resultText(res))
	}
}
