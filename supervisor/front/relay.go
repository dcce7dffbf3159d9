package front

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fsmcp/fsmcp/supervisor/relay"
)

// RelayRoot is a Root that can also take calls through a relay. The front
// then forwards tools/call for it without decoding the request into the
// SDK's types or the result at all: the worker's result bytes are written
// to the host as they came. Calls the relay cannot take (the root is down,
// the supervisor is draining) go through the SDK path and its tool errors.
type RelayRoot interface {
	Root
	Relay() (*relay.Relay, error)
}

// route is where a front tool name leads.
type route struct {
	root Root
	tool string
}

// relayed tracks the calls in flight through relays, by the host's request
// id, so a host's notifications/cancelled reaches the right one.
type relayed struct {
	mu      sync.Mutex
	cancels map[jsonrpc.ID]context.CancelFunc
}

// takeCall starts relaying req when it is a tools/call the relay path can
// take, and reports whether it did.
func (s *Server) takeCall(c *drainConn, req *jsonrpc.Request) bool {
	if req.Method != "tools/call" || !req.IsCall() {
		return false
	}
	var p map[string]json.RawMessage
	var name string
	if json.Unmarshal(req.Params, &p) != nil || json.Unmarshal(p["name"], &name) != nil {
		return false
	}
	rt, ok := s.routes[name]
	if !ok {
		return false
	}
	rr, ok := rt.root.(RelayRoot)
	if !ok {
		return false
	}
	rl, err := rr.Relay()
	if err != nil || !s.enter() {
		return false
	}
	// The worker's own name for the tool; arguments and _meta as sent.
	p["name"], _ = json.Marshal(rt.tool)
	params, err := json.Marshal(p)
	if err != nil {
		return false
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.relayed.mu.Lock()
	if s.relayed.cancels == nil {
		s.relayed.cancels = map[jsonrpc.ID]context.CancelFunc{}
	}
	s.relayed.cancels[req.ID] = cancel
	s.relayed.mu.Unlock()
	s.pendingAdd(1)
	rl.Go(ctx, "tools/call", params, func(resp *jsonrpc.Response, err error) {
		s.relayed.mu.Lock()
		delete(s.relayed.cancels, req.ID)
		s.relayed.mu.Unlock()
		out := s.relayAnswer(ctx, rt.root, resp, err)
		cancel()
		out.ID = req.ID
		_ = c.Write(context.Background(), out)
	})
	return true
}

// takeCancel forwards a host's cancellation of a relayed call, and reports
// whether the notification was for one.
func (s *Server) takeCancel(req *jsonrpc.Request) bool {
	if req.Method != "notifications/cancelled" || req.IsCall() {
		return false
	}
	var p struct {
		RequestID any `json:"requestId"`
	}
	if json.Unmarshal(req.Params, &p) != nil {
		return false
	}
	id, err := jsonrpc.MakeID(p.RequestID)
	if err != nil {
		return false
	}
	s.relayed.mu.Lock()
	cancel, ok := s.relayed.cancels[id]
	s.relayed.mu.Unlock()
	if ok {
		cancel()
	}
	return ok
}

// relayAnswer is the response for the host (its ID still to be set) to a
// relayed call that ended with resp or err.
func (s *Server) relayAnswer(ctx context.Context, r Root, resp *jsonrpc.Response, err error) *jsonrpc.Response {
	switch {
	case err == nil:
		return &jsonrpc.Response{Result: resp.Result, Error: resp.Error}
	case ctx.Err() != nil:
		// As the SDK answers a call cancelled in its handler.
		return &jsonrpc.Response{Error: &jsonrpc.Error{Message: context.Canceled.Error()}}
	}
	res := callFailed(r, err)
	res.Meta = mcp.Meta{mcp.MetaKeyServerInfo: s.impl}
	b, merr := json.Marshal(res)
	if merr != nil {
		return &jsonrpc.Response{Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error"}}
	}
	return &jsonrpc.Response{Result: b}
}
