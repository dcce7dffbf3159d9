//go:build linux

// Package e2e drives the built fsmcp binaries over real stdio with the
// go-sdk client, on real files in roots generated per test.
package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The binaries under test, built once by TestMain.
var workerBin, supervisorBin string

func TestMain(m *testing.M) {
	if dest := os.Getenv(heldWriteEnv); dest != "" {
		// This process is a test's writer, not the tests (see heldWrite).
		if err := heldWrite(dest, os.Getenv(heldSourceEnv)); err != nil {
			fmt.Fprintln(os.Stderr, "held write:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	dir, err := os.MkdirTemp("", "fsmcp-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cmd := exec.Command("go", "build", "-tags="+buildTags, "-o", dir+string(os.PathSeparator), "../cmd/...")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building the binaries:", err)
		os.Exit(1)
	}
	workerBin = filepath.Join(dir, "fsmcp-worker")
	supervisorBin = filepath.Join(dir, "fsmcp-supervisor")
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// tree writes files (path -> contents) under a fresh temporary root.
func tree(t testing.TB, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, body := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// connect starts bin with args as an MCP server on stdio and returns the
// client session; the process ends with the test.
func connect(t testing.TB, env []string, bin string, args ...string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.Stderr = &testWriter{t: t}
	c := mcp.NewClient(&mcp.Implementation{Name: "fsmcp-e2e", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect %s: %v", filepath.Base(bin), err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// worker starts the worker on root with extra flags.
func worker(t testing.TB, root string, args ...string) *mcp.ClientSession {
	t.Helper()
	return connect(t, []string{}, workerBin, append([]string{"--root", root}, args...)...)
}

type testWriter struct{ t testing.TB }

func (w *testWriter) Write(p []byte) (int, error) {
	w.t.Logf("stderr: %s", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// result is a decoded tool result.
type result struct {
	raw     *mcp.CallToolResult
	isError bool
	text    string
	page    struct {
		Items       []json.RawMessage `json:"items"`
		NextCursor  *string           `json:"next_cursor"`
		ContentHash string            `json:"content_hash"`
	}
	obj map[string]any
}

func call(t testing.TB, cs *mcp.ClientSession, tool string, args map[string]any) *result {
	t.Helper()
	r, err := tryCall(cs, tool, args)
	if err != nil {
		t.Fatalf("%s(%.200v): %v", tool, args, err)
	}
	return r
}

// tryCall is call for goroutines other than the test's: a failed call is
// returned rather than ending the test.
func tryCall(cs *mcp.ClientSession, tool string, args map[string]any) (*result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return nil, err
	}
	r := &result{raw: res, isError: res.IsError}
	if len(res.Content) > 0 {
		if tc, ok := res.Content[0].(*mcp.TextContent); ok {
			r.text = tc.Text
		}
	}
	if res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		json.Unmarshal(b, &r.page)
		json.Unmarshal(b, &r.obj)
	}
	return r, nil
}

// ok calls a tool that must succeed.
func ok(t testing.TB, cs *mcp.ClientSession, tool string, args map[string]any) *result {
	t.Helper()
	r := call(t, cs, tool, args)
	if r.isError {
		t.Fatalf("%s(%v) failed: %s", tool, args, r.text)
	}
	return r
}

// fails calls a tool that must fail with a message containing want.
func fails(t testing.TB, cs *mcp.ClientSession, tool string, args map[string]any, want string) *result {
	t.Helper()
	r := call(t, cs, tool, args)
	if !r.isError {
		t.Fatalf("%s(%v) succeeded, want error containing %q", tool, args, want)
	}
	if !strings.Contains(r.text, want) {
		t.Fatalf("%s(%v) error %q, want it to contain %q", tool, args, r.text, want)
	}
	return r
}

// items decodes a page's items into a slice of T.
func items[T any](t testing.TB, r *result) []T {
	t.Helper()
	out := make([]T, len(r.page.Items))
	for i, b := range r.page.Items {
		if err := json.Unmarshal(b, &out[i]); err != nil {
			t.Fatalf("item %d: %v", i, err)
		}
	}
	return out
}

// rawProc is a process spoken to with raw JSON-RPC lines.
type rawProc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  *bufio.Scanner
	stderr *strings.Builder
}

func startRaw(t testing.TB, bin string, args ...string) *rawProc {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = []string{}
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	p := &rawProc{cmd: cmd, stdin: stdin, lines: sc, stderr: &stderr}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return p
}

// roundTrip writes one line and reads one response line (with a deadline).
func (p *rawProc) roundTrip(t testing.TB, line string) map[string]any {
	t.Helper()
	if _, err := io.WriteString(p.stdin, line+"\n"); err != nil {
		t.Fatal(err)
	}
	return p.read(t)
}

func (p *rawProc) read(t testing.TB) map[string]any {
	t.Helper()
	got := make(chan string, 1)
	go func() {
		if p.lines.Scan() {
			got <- p.lines.Text()
		} else {
			got <- ""
		}
	}()
	select {
	case l := <-got:
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("stdout line is not JSON: %q", l)
		}
		return m
	case <-time.After(20 * time.Second):
		t.Fatal("no response within 20s")
	}
	return nil
}

// newMeta is the per-request _meta of the 2026-07-28 protocol.
const newMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
