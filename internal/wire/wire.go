// Package wire is the go-plugin definition shared by the supervisor and the
// worker: the handshake, a gRPC service with one bidirectional stream whose
// frames each carry one JSON-RPC message, and an mcp.Transport over that
// stream for either side. One stream is one MCP session. Next to it, a
// call channel (CallsPipes) carries the supervisor's relayed tools/call
// calls as JSON lines.
//
// The service is described by hand (grpc.ServiceDesc) with
// wrapperspb.BytesValue frames, so no generated code is needed.
package wire

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc"

	"github.com/fsmcp/fsmcp/internal/jsonl"
	"github.com/fsmcp/fsmcp/internal/nbio"
	"github.com/fsmcp/fsmcp/internal/profile"
)

// PluginName is the key of the one plugin in the plugin set.
const PluginName = "fsmcp"

// Handshake is the go-plugin handshake. The cookie only tells the worker
// binary that it was launched by the supervisor; it is not a secret.
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  1,
	MagicCookieKey:   "FSMCP_WORKER_PLUGIN",
	MagicCookieValue: "5b1f0c3e-fsmcp-worker-v1",
}

// MaxFrameBytes bounds one JSON-RPC message on the stream, both ways. It is
// far above any result or write the worker accepts (gRPC's default of 4 MiB
// could be reached by a 1 MiB write whose text is heavily escaped).
const MaxFrameBytes = 64 << 20

// windowBytes is the HTTP/2 flow-control window of the stream and the
// connection. Setting it turns off gRPC's bandwidth estimation, whose
// pings otherwise ride along with the frames of every call.
const windowBytes = 4 << 20

// DialOptions are the gRPC dial options the supervisor passes to go-plugin
// so its side accepts frames up to MaxFrameBytes too. Idleness is off: an
// idle channel closes its connection and dials again on the next call, and
// the supervisor removes the worker's socket once connected.
func DialOptions() []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(MaxFrameBytes), grpc.MaxCallSendMsgSize(MaxFrameBytes)),
		grpc.WithInitialWindowSize(windowBytes), grpc.WithInitialConnWindowSize(windowBytes),
		grpc.WithIdleTimeout(0),
	}
}

// Launched reports whether the process was started by a go-plugin host with
// fsmcp's magic cookie in its environment.
func Launched() bool {
	_, ok := os.LookupEnv(Handshake.MagicCookieKey)
	return ok
}

// Plugins is the plugin set both sides pass to go-plugin. The supervisor uses
// it as is (MCP nil); Serve fills in the server.
func Plugins() plugin.PluginSet {
	return plugin.PluginSet{PluginName: &Plugin{}}
}

// Serve serves srv as the plugin side of the handshake and blocks until the
// supervisor ends the plugin. Each stream the supervisor opens is served as
// one MCP session, and so is the call channel when the supervisor passed
// one (see CallsPipes), with lines of at most maxLine bytes and maxText
// bytes once decoded (jsonl.Transport's MaxLine and MaxText). The gRPC
// connection is mutual TLS with the keys the supervisor passed (see
// NewKeys); a worker launched without them is refused. Only the handshake
// is written to stdout; logs go to stderr.
//
// Serve also returns when the call channel's requests end: the supervisor
// closes its end only once it is done with this worker, and the system
// closes it when the supervisor dies, however it dies. That is how a
// worker stops with its supervisor where no parent-death signal exists
// (macOS, the BSDs); calls still in flight are not waited for, since no
// one is left to read their answers.
func Serve(srv *profile.Server, maxLine, maxText int) error {
	if srv == nil {
		return fmt.Errorf("wire: Serve needs a server")
	}
	if !Launched() {
		return fmt.Errorf("wire: not launched by the supervisor (no %s in the environment)", Handshake.MagicCookieKey)
	}
	calls, ok, err := Calls()
	if err != nil {
		return err
	}
	tlsConfig, err := serverTLS()
	if err != nil {
		return err
	}
	// The worker ends with its call channel: at the end of its requests,
	// or at an answer that cannot be written (the supervisor is gone, and
	// without a parent-death signal, as on macOS, nothing else ends it).
	ended := make(chan struct{})
	var endOnce sync.Once
	end := func() { endOnce.Do(func() { close(ended) }) }
	if ok {
		ss, err := profile.Connect(context.Background(), srv, &jsonl.Transport{Reader: nbio.Reader(calls.In), Writer: endOnWriteError{nbio.Writer(calls.Out), end},
			MaxLine: maxLine, MaxText: maxText, MaxInFlight: CallsInFlight + callsReadAhead, Ended: end})
		if err != nil {
			return fmt.Errorf("wire: serve the call channel: %w", err)
		}
		go func() { _ = ss.Wait() }()
	}
	logger := hclog.New(&hclog.LoggerOptions{
		Name:   "plugin",
		Output: os.Stderr,
		Level:  hclog.Warn,
	})
	served := make(chan struct{})
	go func() {
		defer close(served)
		plugin.Serve(&plugin.ServeConfig{
			HandshakeConfig: Handshake,
			Plugins:         plugin.PluginSet{PluginName: &Plugin{MCP: srv}},
			GRPCServer: func(opts []grpc.ServerOption) *grpc.Server {
				return grpc.NewServer(append(opts, grpc.MaxRecvMsgSize(MaxFrameBytes), grpc.MaxSendMsgSize(MaxFrameBytes),
					grpc.InitialWindowSize(windowBytes), grpc.InitialConnWindowSize(windowBytes))...)
			},
			TLSProvider: func() (*tls.Config, error) { return tlsConfig, nil },
			Logger:      logger,
		})
	}()
	select {
	case <-served:
	case <-ended:
	}
	return nil
}

// endOnWriteError is the call channel's answers end: a write that fails
// calls end.
type endOnWriteError struct {
	io.WriteCloser
	end func()
}

func (w endOnWriteError) Write(p []byte) (int, error) {
	n, err := w.WriteCloser.Write(p)
	if err != nil {
		w.end()
	}
	return n, err
}

// Plugin implements plugin.GRPCPlugin. On the worker side MCP is the MCP
// server to serve; on the supervisor side it is nil and GRPCClient returns a
// *Client.
type Plugin struct {
	plugin.NetRPCUnsupportedPlugin
	MCP *profile.Server
}

// GRPCServer registers the session service for p.MCP.
func (p *Plugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	if p.MCP == nil {
		return fmt.Errorf("wire: plugin has no MCP server to serve")
	}
	s.RegisterService(&serviceDesc, &sessionService{srv: p.MCP})
	return nil
}

// GRPCClient returns a *Client over the plugin's connection.
func (p *Plugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, cc *grpc.ClientConn) (any, error) {
	return &Client{cc: cc}, nil
}

// Client is the supervisor's handle on a worker's session service.
type Client struct {
	cc *grpc.ClientConn
}

// Transport returns an mcp.Transport that opens a new stream (a new MCP
// session) when connected.
func (c *Client) Transport() mcp.Transport { return &clientTransport{cc: c.cc} }
