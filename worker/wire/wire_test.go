package wire_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fsmcp/fsmcp/worker/jsonl"
	"github.com/fsmcp/fsmcp/worker/profile"
	"github.com/fsmcp/fsmcp/worker/wire"
)

// Run by go-plugin with the cookie, the test binary serves an echo tool as
// the plugin side; otherwise it runs the tests.
func TestMain(m *testing.M) {
	if wire.Launched() {
		srv := profile.New(&mcp.Implementation{Name: "wire-test", Version: "1"}, "")
		type in struct {
			Text string `json:"text"`
		}
		type out struct {
			Text string `json:"text"`
		}
		mcp.AddTool(srv, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, out, error) {
			return nil, out(a), nil
		})
		if err := wire.Serve(srv, 0); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func startPlugin(t *testing.T) *wire.Client {
	t.Helper()
	return startPluginCmd(t, exec.Command(os.Args[0], "-test.run=^$"))
}

func startPluginCmd(t *testing.T, cmd *exec.Cmd) *wire.Client {
	t.Helper()
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  wire.Handshake,
		Plugins:          wire.Plugins(),
		Cmd:              cmd,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		AutoMTLS:         true,
		SkipHostEnv:      true,
		GRPCDialOptions:  wire.DialOptions(),
		StartTimeout:     20 * time.Second,
		Logger:           hclog.New(&hclog.LoggerOptions{Level: hclog.Off}),
	})
	t.Cleanup(client.Kill)
	rpc, err := client.Client()
	if err != nil {
		t.Fatalf("start plugin: %v", err)
	}
	raw, err := rpc.Dispense(wire.PluginName)
	if err != nil {
		t.Fatal(err)
	}
	return raw.(*wire.Client)
}

// TestSessionsOverStreams: each stream is its own MCP session at
// 2026-07-28; sessions run concurrently, carry frames over 4 MiB (the
// window; the answer to the 5 MiB echo is twice that, text and structured
// content), and closing one leaves the others working.
//
// Only one session echoes the large text, while the others echo small and
// escaped ones: under -race every byte the JSON codecs touch and every
// copy of a large buffer is instrumented, in both processes, so one 5 MiB
// echo (request, arguments, result twice) takes seconds of CPU; three at
// once took 30 to 55 s on a loaded machine against the 60 s deadline. One
// proves the same about frames, in about a third of the time.
func TestSessionsOverStreams(t *testing.T) {
	wc := startPlugin(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const large = 1 // the session that echoes the 5 MiB text
	tests := []struct {
		name    string
		text    string
		session int // -1: every session
	}{
		{"small", "hello", -1},
		{"escaped", strings.Repeat("\"\\\n\t", 1000), -1},
		{"five MiB", strings.Repeat("x", 5<<20), large},
	}
	var sessions []*mcp.ClientSession
	for range 3 {
		s, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, wc.Transport(), nil)
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		if v := s.InitializeResult().ProtocolVersion; v != profile.Version {
			t.Fatalf("protocol %q", v)
		}
		sessions = append(sessions, s)
	}
	var wg sync.WaitGroup
	for i, s := range sessions {
		for _, tc := range tests {
			if tc.session >= 0 && tc.session != i {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": tc.text}})
				if err != nil {
					t.Errorf("session %d %s: %v", i, tc.name, err)
					return
				}
				if got, _ := res.StructuredContent.(map[string]any)["text"].(string); got != tc.text {
					t.Errorf("session %d %s: echo of %d bytes came back as %d", i, tc.name, len(tc.text), len(got))
				}
			}()
		}
	}
	wg.Wait()
	if err := sessions[0].Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	for _, i := range []int{large, 2} {
		if _, err := sessions[i].CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "still"}}); err != nil {
			t.Errorf("session %d after session 0 closed: %v", i, err)
		}
	}
}

// TestCallChannel: a worker given the worker end of CallsPair serves the
// same MCP server on it as JSON lines, next to its gRPC sessions, and its
// session there ends when the supervisor closes its end.
func TestCallChannel(t *testing.T) {
	local, remote, err := wire.CallsPair()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.ExtraFiles = []*os.File{remote}
	cmd.Env = []string{wire.CallsEnvValue()}
	wc := startPluginCmd(t, cmd)
	remote.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	calls, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, &jsonl.Transport{Reader: local, Writer: local}, nil)
	if err != nil {
		t.Fatalf("connect on the call channel: %v", err)
	}
	grpcSession, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, wc.Transport(), nil)
	if err != nil {
		t.Fatalf("connect over gRPC: %v", err)
	}
	for name, s := range map[string]*mcp.ClientSession{"call channel": calls, "gRPC": grpcSession} {
		res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": name}})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got, _ := res.StructuredContent.(map[string]any)["text"].(string); got != name {
			t.Errorf("%s: echo came back as %q", name, got)
		}
	}
	if err := calls.Close(); err != nil {
		t.Errorf("close the call channel: %v", err)
	}
	if _, err := grpcSession.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "still"}}); err != nil {
		t.Errorf("gRPC session after the call channel closed: %v", err)
	}
}

// TestCallsRefusesNonSocket: a call channel descriptor that is not a
// socket is an error, not a session on whatever it is.
func TestCallsRefusesNonSocket(t *testing.T) {
	if wire.Launched() {
		t.Skip("cookie present")
	}
	t.Setenv(wire.CallsEnv, "3")
	f, err := os.CreateTemp(t.TempDir(), "not-a-socket")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// A regular file at descriptor 3 for the test; what was there (if
	// anything) comes back afterwards.
	if saved, err := syscall.Dup(wire.CallsFD); err == nil {
		defer func() { _ = syscall.Dup2(saved, wire.CallsFD); _ = syscall.Close(saved) }()
	} else {
		defer func() { _ = syscall.Close(wire.CallsFD) }()
	}
	if err := syscall.Dup2(int(f.Fd()), wire.CallsFD); err != nil {
		t.Fatal(err)
	}
	if c, err := wire.Calls(); err == nil {
		t.Fatalf("Calls on a regular file = %v, want an error", c)
	}
	t.Setenv(wire.CallsEnv, "4")
	if _, err := wire.Calls(); err == nil {
		t.Fatal("Calls on descriptor 4 returned no error")
	}
}

// TestServeRefusesWithoutCookie: Serve outside a supervisor is an error,
// not a go-plugin banner and exit.
func TestServeRefusesWithoutCookie(t *testing.T) {
	if wire.Launched() {
		t.Skip("cookie present")
	}
	if err := wire.Serve(profile.New(&mcp.Implementation{Name: "x", Version: "1"}, ""), 0); err == nil {
		t.Fatal("Serve without the cookie returned nil")
	}
	if err := wire.Serve(nil, 0); err == nil {
		t.Fatal("Serve(nil) returned nil")
	}
}
