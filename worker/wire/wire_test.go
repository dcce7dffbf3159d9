package wire_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/modelcontextprotocol/go-sdk/mcp"

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
		if err := wire.Serve(srv); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func startPlugin(t *testing.T) *wire.Client {
	t.Helper()
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  wire.Handshake,
		Plugins:          wire.Plugins(),
		Cmd:              exec.Command(os.Args[0], "-test.run=^$"),
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
// 2026-07-28; sessions run concurrently, carry large frames, and closing
// one leaves the others working.
func TestSessionsOverStreams(t *testing.T) {
	wc := startPlugin(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tests := []struct {
		name string
		text string
	}{
		{"small", "hello"},
		{"escaped", strings.Repeat("\"\\\n\t", 1000)},
		{"five MiB", strings.Repeat("x", 5<<20)},
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
	if _, err := sessions[1].CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "still"}}); err != nil {
		t.Errorf("other session after a close: %v", err)
	}
}

// TestServeRefusesWithoutCookie: Serve outside a supervisor is an error,
// not a go-plugin banner and exit.
func TestServeRefusesWithoutCookie(t *testing.T) {
	if wire.Launched() {
		t.Skip("cookie present")
	}
	if err := wire.Serve(profile.New(&mcp.Implementation{Name: "x", Version: "1"}, "")); err == nil {
		t.Fatal("Serve without the cookie returned nil")
	}
	if err := wire.Serve(nil); err == nil {
		t.Fatal("Serve(nil) returned nil")
	}
}
