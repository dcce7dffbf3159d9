package e2e

import (
	"bufio"
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
