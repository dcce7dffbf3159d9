// Package front is the supervisor's own MCP server: the union of every
// root's masked tools, each named <root>_<tool>, routed to that root's
// worker session, for hosts of both protocol eras (see era.go). Results
// come back unchanged but for the era's own members; a root that is down
// answers with a tool error naming it and its state.
package front

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fsmcp/fsmcp/internal/limits"
	"github.com/fsmcp/fsmcp/internal/profile"
)

// Root is what the front server needs from a supervised root.
type Root interface {
	Name() string
	Tools() []*mcp.Tool
	Session() (*mcp.ClientSession, error)
	StateError() error
}

// TimedRoot is a Root with its own call deadline. A call past it is
// cancelled and answered with a tool error, and the root is told (its
// worker is then probed).
type TimedRoot interface {
	Root
	CallTimeout() time.Duration
	CallTimedOut()
}

func callTimeout(r Root) time.Duration {
	if tr, ok := r.(TimedRoot); ok && tr.CallTimeout() > 0 {
		return tr.CallTimeout()
	}
	return limits.DefaultCallTimeout
}

// timedOut is the tool error for a call to r that ran past timeout; it
// tells r.
func timedOut(r Root, timeout time.Duration) *mcp.CallToolResult {
	if tr, ok := r.(TimedRoot); ok {
		tr.CallTimedOut()
	}
	return toolError(fmt.Sprintf("root %s: the call did not finish within %s (the root's call_timeout) and was cancelled", r.Name(), timeout))
}

// Server is the front MCP server plus the bookkeeping for a graceful stop:
// once draining, new calls get a tool error, and the connection ends only
// after every request read has been answered or the grace period is over.
type Server struct {
	MCP *mcp.Server

	profile  profile.Config
	impl     *mcp.Implementation
	implJSON json.RawMessage // impl encoded, put in every relayed result
	routes   map[string]route
	relayed  relayed

	grace    time.Duration
	stopped  chan struct{} // closed once Stop's wait for answers is over
	stopOnce sync.Once
	mu       sync.Mutex
	cond     *sync.Cond
	draining bool
	// drainStarted is closed when draining becomes true.
	drainStarted chan struct{}
	graceOver    bool
	pending      int // requests read and not yet answered
}

// ToolName is the front name of a root's tool.
func ToolName(root, tool string) string { return root + "_" + tool }

// New builds the front server over roots, in their order, serving the
// protocol revisions versions lists (nil: profile.Revisions, both eras).
// grace bounds how long a stop waits for requests in flight.
func New(impl *mcp.Implementation, roots []Root, grace time.Duration, versions []string) (*Server, error) {
	implJSON, err := json.Marshal(impl)
	if err != nil {
		return nil, fmt.Errorf("front: encode server info: %w", err)
	}
	if versions == nil {
		versions = profile.Revisions
	}
	if err := profile.CheckVersions(versions); err != nil {
		return nil, fmt.Errorf("front: protocol versions: %w", err)
	}
	pc := profile.Config{Versions: profile.Newest(versions), Hint: restrictedHint}
	s := &Server{MCP: profile.NewFor(impl, pc), profile: pc, impl: impl, implJSON: implJSON, routes: map[string]route{}, grace: grace, stopped: make(chan struct{}), drainStarted: make(chan struct{})}
	s.cond = sync.NewCond(&s.mu)
	seen := map[string]bool{}
	for _, r := range roots {
		for _, t := range r.Tools() {
			name := ToolName(r.Name(), t.Name)
			if seen[name] {
				return nil, fmt.Errorf("front: tool name %s is produced twice; rename a root", name)
			}
			seen[name] = true
			s.routes[name] = route{r, t.Name}
			ft := *t
			ft.Name = name
			ft.Description = "[" + r.Name() + "] " + t.Description
			if ft.InputSchema == nil {
				ft.InputSchema = json.RawMessage(`{"type":"object"}`)
			}
			s.MCP.AddTool(&ft, s.forward(r, t.Name))
		}
	}
	return s, nil
}

// restrictedHint ends the refusal of an initialize where the manifest
// lists no 2025 revision.
const restrictedHint = "this supervisor's manifest restricts protocol_versions to the 2026-07-28 era"

func toolError(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

func (s *Server) forward(r Root, tool string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if !s.enter() {
			return toolError("the supervisor is shutting down; no new calls are taken"), nil
		}
		session, err := r.Session()
		if err != nil {
			return toolError(err.Error()), nil
		}
		var args any
		if raw := req.Params.Arguments; len(raw) > 0 {
			args = raw
		}
		timeout := callTimeout(r)
		cctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		res, err := session.CallTool(cctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		if err == nil {
			rewordError(r, tool, res)
			return hostResult(res), nil
		}
		var rpcErr *jsonrpc.Error
		switch {
		case errors.As(err, &rpcErr):
			// The worker refused the request itself (bad arguments, ...):
			// pass its protocol error through.
			return nil, rpcErr
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case errors.Is(cctx.Err(), context.DeadlineExceeded):
			return timedOut(r, timeout), nil
		}
		return callFailed(r, err), nil
	}
}

// callFailed is the tool error for a call to r's worker that failed with
// err: the root's state when it has one (its worker died), else err.
func callFailed(r Root, err error) *mcp.CallToolResult {
	if se := r.StateError(); se != nil {
		return toolError(fmt.Sprintf("root %s: its worker stopped during the call (%v)", r.Name(), se))
	}
	return toolError(fmt.Sprintf("root %s: the call to its worker failed: %v", r.Name(), err))
}

func (s *Server) enter() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.draining
}
