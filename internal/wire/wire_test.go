package wire_test

import (
	"context"
	"crypto/tls"
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

	"github.com/fsmcp/fsmcp/internal/jsonl"
	"github.com/fsmcp/fsmcp/internal/profile"
	"github.com/fsmcp/fsmcp/internal/wire"
)

// Run by go-plugin with the cookie, the test binary serves an echo tool as
// the plugin side; otherwise it runs the tests.
func TestMain(m *testing.M) {
	if os.Getenv(callsCheckEnv) != "" {
		// TestCallsRefusesOtherDescriptors: what Calls makes of the
		// descriptors this process inherited.
		ends, ok, err := wire.Calls()
		switch {
		case err != nil:
			fmt.Println("error:", err)
		case ok:
			fmt.Println("ok", ends.In.Name(), ends.Out.Name())
		default:
			fmt.Println("none")
		}
		os.Exit(0)
	}
	if wire.Launched() {
		srv := profile.NewServer(&mcp.Implementation{Name: "wire-test", Version: "1"}, "")
		type in struct {
			Text string `json:"text"`
		}
		type out struct {
			Text string `json:"text"`
		}
		mcp.AddTool(srv.MCP, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, out, error) {
			return nil, out(a), nil
		})
		if err := wire.Serve(srv, 0, 0); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func startPlugin(t *testing.T) *wire.Client {
	t.Helper()
	wc, _ := startPluginCmd(t, exec.Command(os.Args[0], "-test.run=^$"))
	return wc
}

// startPluginCmd starts cmd as the plugin, with its TLS keys at
// wire.KeysFD (after the call channel's descriptors, when cmd has them).
func startPluginCmd(t *testing.T, cmd *exec.Cmd) (*wire.Client, *plugin.Client) {
	t.Helper()
	keys, err := wire.NewKeys()
	if err != nil {
		t.Fatal(err)
	}
	f, err := keys.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for len(cmd.ExtraFiles) < wire.KeysFD-3 {
		cmd.ExtraFiles = append(cmd.ExtraFiles, nil)
	}
	cmd.ExtraFiles = append(cmd.ExtraFiles, f)
	cmd.Env = append(cmd.Env, wire.KeysEnvValue())
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  wire.Handshake,
		Plugins:          wire.Plugins(),
		Cmd:              cmd,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		TLSConfig:        keys.Client,
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
	return raw.(*wire.Client), client
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
			t.Errorf("call on connection %d after connection 0 closed: %v", i, err)
		}
	}
}

// TestCallChannel: a worker given the worker ends of CallsPipes serves the
// same MCP server on them as JSON lines, next to its gRPC sessions, and the
// worker ends when the supervisor closes its ends (as when it dies: no
// parent-death signal is needed).
func TestCallChannel(t *testing.T) {
	local, wc, pc := startWithCalls(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	calls, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, &jsonl.Transport{Reader: local.In, Writer: local.Out}, nil)
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
	local.Out.Close()
	exitsWithin(t, pc, 10*time.Second, "after the supervisor closed the call channel")
}

// startWithCalls starts the plugin with a call channel, and returns the
// supervisor's ends of it and the plugin's clients.
func startWithCalls(t *testing.T) (wire.CallEnds, *wire.Client, *plugin.Client) {
	t.Helper()
	local, remote, err := wire.CallsPipes()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.ExtraFiles = remote.ExtraFiles()
	cmd.Env = []string{wire.CallsEnvValue()}
	wc, pc := startPluginCmd(t, cmd)
	remote.Close()
	return local, wc, pc
}

// exitsWithin fails t unless the plugin pc exits within d of now.
func exitsWithin(t *testing.T, pc *plugin.Client, d time.Duration, when string) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !pc.Exited() {
		if time.Now().After(deadline) {
			t.Fatalf("the worker still runs %s %s", d, when)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestCallChannelAnswersBroken: a worker whose answers can no longer be
// written (the supervisor gone while the request's end of the channel is
// still open somewhere) ends rather than serving gRPC for good: a worker
// stops when its call channel ends, however it ends.
func TestCallChannelAnswersBroken(t *testing.T) {
	local, _, pc := startWithCalls(t)
	local.In.Close() // no one reads the answers any more
	defer local.Out.Close()
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"name":"echo","arguments":{"text":"x"}}}` + "\n"
	if _, err := local.Out.WriteString(call); err != nil {
		t.Fatal(err)
	}
	exitsWithin(t, pc, 10*time.Second, "after its answers could no longer be written")
}

// callsCheckEnv makes the test binary report what wire.Calls makes of its
// descriptors (see TestMain).
const callsCheckEnv = "WIRE_TEST_CALLS_CHECK"

// TestCallsRefusesOtherDescriptors: the worker takes the call channel only
// as a pipe it reads at descriptor 3 and one it writes at descriptor 4,
// named so in the environment; anything else is an error, not a session
// on whatever the descriptors are.
func TestCallsRefusesOtherDescriptors(t *testing.T) {
	pipe := func() (r, w *os.File) {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close(); w.Close() })
		return r, w
	}
	reqR, _ := pipe()
	_, ansW := pipe()
	otherR, otherW := pipe()
	file, err := os.CreateTemp(t.TempDir(), "not-a-pipe")
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0) // macOS has no SOCK_CLOEXEC
	if err != nil {
		t.Fatal(err)
	}
	syscall.CloseOnExec(fds[0])
	syscall.CloseOnExec(fds[1])
	sock := os.NewFile(uintptr(fds[0]), "socket")
	defer sock.Close()
	defer syscall.Close(fds[1])
	for _, tc := range []struct {
		name  string
		env   string // CallsEnv's value; "-" leaves it out
		files []*os.File
		want  string // the child's report
	}{
		{"both pipes", "3,4", []*os.File{reqR, ansW}, "ok fsmcp-calls-requests fsmcp-calls-answers"},
		{"no variable", "-", []*os.File{reqR, ansW}, "none"},
		{"the old single descriptor", "3", []*os.File{reqR, ansW}, `error: wire: FSMCP_WORKER_CALLS_FD="3": want "3,4"`},
		{"other descriptors", "4,3", []*os.File{reqR, ansW}, `error: wire: FSMCP_WORKER_CALLS_FD="4,3": want "3,4"`},
		{"a regular file in", "3,4", []*os.File{file, ansW}, "error: wire: call channel descriptor 3 is not a pipe"},
		{"a socket in", "3,4", []*os.File{sock, ansW}, "error: wire: call channel descriptor 3 is not a pipe"},
		{"a regular file out", "3,4", []*os.File{reqR, file}, "error: wire: call channel descriptor 4 is not a pipe"},
		{"the directions swapped", "3,4", []*os.File{otherW, otherR}, "error: wire: call channel descriptor 3 is open for the wrong direction"},
		{"two read ends", "3,4", []*os.File{reqR, otherR}, "error: wire: call channel descriptor 4 is open for the wrong direction"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = []string{callsCheckEnv + "=1"}
			if tc.env != "-" {
				cmd.Env = append(cmd.Env, wire.CallsEnv+"="+tc.env)
			}
			cmd.ExtraFiles = tc.files
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			if got := strings.TrimSpace(string(out)); got != tc.want {
				t.Errorf("Calls reported %q, want %q", got, tc.want)
			}
		})
	}
}

// TestServeRefusesWithoutCookie: Serve outside a supervisor is an error,
// not a go-plugin banner and exit.
func TestServeRefusesWithoutCookie(t *testing.T) {
	if wire.Launched() {
		t.Skip("cookie present")
	}
	if err := wire.Serve(profile.NewServer(&mcp.Implementation{Name: "x", Version: "1"}, ""), 0, 0); err == nil {
		t.Fatal("Serve without the cookie returned nil")
	}
	if err := wire.Serve(nil, 0, 0); err == nil {
		t.Fatal("Serve(nil) returned nil")
	}
}

// TestServeRefusesWithoutKeys: a worker launched by the supervisor serves
// its socket only with the TLS keys it was passed at wire.KeysFD; without
// them, or with anything else there, Serve fails before go-plugin starts,
// rather than serving in the clear.
func TestServeRefusesWithoutKeys(t *testing.T) {
	pipeWith := func(data []byte) *os.File {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		go func() { _, _ = w.Write(data); w.Close() }()
		t.Cleanup(func() { r.Close() })
		return r
	}
	file, err := os.CreateTemp(t.TempDir(), "keys")
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	for _, tc := range []struct {
		name string
		env  string // KeysEnv's value; "-" leaves it out
		keys *os.File
		want string
	}{
		{"no variable", "-", pipeWith(nil), "wire: launched without TLS keys (no FSMCP_WORKER_KEYS_FD in the environment)"},
		{"another descriptor", "6", pipeWith(nil), `wire: FSMCP_WORKER_KEYS_FD="6": want "5"`},
		{"no descriptor", "5", nil, "wire: TLS keys descriptor 5: bad file descriptor"},
		{"a regular file", "5", file, "wire: TLS keys descriptor 5 is not a pipe"},
		{"an empty pipe", "5", pipeWith(nil), "wire: TLS keys are not the worker's certificate and key and the supervisor's certificate"},
		{"not PEM", "5", pipeWith([]byte("not keys")), "wire: TLS keys are not the worker's certificate and key and the supervisor's certificate"},
		{"too long", "5", pipeWith(make([]byte, 5000)), "wire: TLS keys longer than 4096 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = []string{wire.Handshake.MagicCookieKey + "=" + wire.Handshake.MagicCookieValue}
			if tc.env != "-" {
				cmd.Env = append(cmd.Env, wire.KeysEnv+"="+tc.env)
			}
			cmd.ExtraFiles = []*os.File{nil, nil, tc.keys}
			out, err := cmd.CombinedOutput()
			if err == nil || strings.TrimSpace(string(out)) != tc.want {
				t.Errorf("exit %v, output %q; want a failure saying %q", err, out, tc.want)
			}
		})
	}
}

// TestKeysTrustOnlyTheirPeer: the connection to a worker is mutual TLS
// over the keys of its start: a supervisor side that does not trust the
// worker's certificate, or presents a certificate the worker was not given,
// cannot connect; the keys made for the start can.
func TestKeysTrustOnlyTheirPeer(t *testing.T) {
	other, err := wire.NewKeys()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		client func(own *tls.Config) *tls.Config
		ok     bool
	}{
		{"the start's keys", func(own *tls.Config) *tls.Config { return own }, true},
		{"another start's keys", func(*tls.Config) *tls.Config { return other.Client }, false},
		{"trusting the worker, with another certificate", func(own *tls.Config) *tls.Config {
			c := own.Clone()
			c.Certificates = other.Client.Certificates
			return c
		}, false},
		{"its certificate, trusting another worker", func(own *tls.Config) *tls.Config {
			c := own.Clone()
			c.RootCAs = other.Client.RootCAs
			return c
		}, false},
		{"no certificate", func(own *tls.Config) *tls.Config {
			c := own.Clone()
			c.Certificates = nil
			return c
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			keys, err := wire.NewKeys()
			if err != nil {
				t.Fatal(err)
			}
			f, err := keys.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.ExtraFiles = []*os.File{nil, nil, f}
			cmd.Env = []string{wire.KeysEnvValue()}
			client := plugin.NewClient(&plugin.ClientConfig{
				HandshakeConfig:  wire.Handshake,
				Plugins:          wire.Plugins(),
				Cmd:              cmd,
				AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
				TLSConfig:        tc.client(keys.Client),
				SkipHostEnv:      true,
				GRPCDialOptions:  wire.DialOptions(),
				StartTimeout:     20 * time.Second,
				Logger:           hclog.New(&hclog.LoggerOptions{Level: hclog.Off}),
			})
			t.Cleanup(client.Kill)
			if err := listOver(client); (err == nil) != tc.ok {
				t.Errorf("tools/list over the connection: %v; want success %t", err, tc.ok)
			}
		})
	}
}

// listOver starts client's plugin and lists its tools over an MCP session
// on the gRPC connection, within 20 s.
func listOver(client *plugin.Client) error {
	rpc, err := client.Client()
	if err != nil {
		return err
	}
	raw, err := rpc.Dispense(wire.PluginName)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, raw.(*wire.Client).Transport(), nil)
	if err != nil {
		return err
	}
	defer s.Close()
	_, err = s.ListTools(ctx, nil)
	return err
}
