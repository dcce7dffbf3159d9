package front

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fsmcp/fsmcp/internal/jsonl"
	"github.com/fsmcp/fsmcp/internal/jsonstr"
	"github.com/fsmcp/fsmcp/internal/profile"
	"github.com/fsmcp/fsmcp/internal/wire"
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

// Flow control. A root takes at most wire.CallsInFlight relayed calls at
// a time and the supervisor GlobalCalls altogether; a call past either is
// answered at once with a tool error (jsonl.Busy's text, as the worker
// refuses a call past its own cap), so a stuck root fills only its own
// quota and the front never stops reading its input (cancellations
// included).
const (
	RootCalls   = wire.CallsInFlight
	GlobalCalls = 256
	// MaxInFlight is the bound for the host transport's own count of
	// unanswered requests: the relayed calls plus room for the requests
	// the SDK serves (lists, pings, calls to roots that are down, which
	// are answered at once).
	MaxInFlight = GlobalCalls + 64
)

// relayed tracks the calls in flight through relays: by the host's request
// id (its local one, see jsonl), so a host's notifications/cancelled
// reaches the right one, and by root, for the quotas.
type relayed struct {
	mu      sync.Mutex
	cancels map[jsonrpc.ID]context.CancelFunc
	perRoot map[string]int
	total   int
}

// admit takes a slot for a call to root, or says why there is none.
func (rd *relayed) admit(root string, id jsonrpc.ID, cancel context.CancelFunc) string {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	switch {
	case rd.perRoot[root] >= RootCalls:
		return jsonl.Busy("root "+root, RootCalls)
	case rd.total >= GlobalCalls:
		return jsonl.Busy("the supervisor", GlobalCalls)
	}
	if rd.cancels == nil {
		rd.cancels, rd.perRoot = map[jsonrpc.ID]context.CancelFunc{}, map[string]int{}
	}
	rd.cancels[id] = cancel
	rd.perRoot[root]++
	rd.total++
	return ""
}

// done gives back the slot of a call that ended.
func (rd *relayed) done(root string, id jsonrpc.ID) {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	delete(rd.cancels, id)
	rd.perRoot[root]--
	rd.total--
}

// takeCall starts relaying req when it is a tools/call the relay path can
// take, and reports whether it did. The call is sent, waited for and
// answered on a goroutine of its own, so neither a worker that stops
// reading nor a host that stops reading holds up the input.
func (s *Server) takeCall(c *drainConn, req *jsonrpc.Request) bool {
	if req.Method != "tools/call" || !req.IsCall() {
		return false
	}
	call, ok := splitCall(req.Params)
	if !ok {
		return false
	}
	rt, ok := s.routes[call.name]
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
	params, err := call.workerParams(rt.tool)
	if err != nil {
		return false
	}
	timeout := callTimeout(rt.root)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	root := rt.root.Name()
	s.pendingAdd(1)
	if why := s.relayed.admit(root, req.ID, cancel); why != "" {
		cancel()
		out := s.toolErrorResponse(toolError(why), call.modern)
		out.ID = req.ID
		_ = c.Write(context.Background(), out)
		return true
	}
	// The request is written on a goroutine of its own (a frozen worker's
	// full socket must not stop the input); the answer is queued for the
	// writer, never written from the relay's reading goroutine, which
	// also reads the worker's probe answers.
	go func() {
		rl.Go(ctx, "tools/call", params, func(resp *jsonrpc.Response, err error) {
			if err == nil && resp.Error == nil {
				resp.Result = rewordResult(rt.root, rt.tool, resp.Result)
			}
			out := s.relayAnswer(ctx, rt.root, timeout, call.modern, resp, err)
			cancel()
			out.ID = req.ID
			c.answers <- relayedAnswer{out: out, root: root}
		})
	}()
	return true
}

// relayedAnswer is the answer to a relayed call, queued for the host.
type relayedAnswer struct {
	out  *jsonrpc.Response
	root string
}

// writeAnswers writes the answers of relayed calls to the host until the
// connection closes. A call's slot is held until its answer is written, so
// the queue never holds more than GlobalCalls answers (its capacity), and
// a host that does not read its answers fills its quotas, not memory.
func (c *drainConn) writeAnswers() {
	for {
		select {
		case a := <-c.answers:
			_ = c.Write(context.Background(), a.out)
			c.s.relayed.done(a.root, a.out.ID)
		case <-c.closed:
			return
		}
	}
}

// relayedCall is a tools/call's params as the relay path takes them: the
// tool's front name, the other members (arguments, _meta) as the host
// wrote them, keys included, in its order, and the host's era.
type relayedCall struct {
	name   string
	rest   [][2][]byte
	modern bool // the call names 2026-07-28 in _meta; else the host began with initialize
}

// splitCall splits a tools/call's params, or reports false for params the
// relay path leaves to the SDK: not an object, no name or one that is not
// a string, a key written with an escape or twice (whose meaning a
// decoder settles, not a byte comparison), _meta spelled in another case,
// or a _meta metaEra leaves to the SDK.
func splitCall(params json.RawMessage) (relayedCall, bool) {
	var c relayedCall
	var name, meta []byte
	ok := jsonstr.UniqueMembers(params, func(k, v []byte) bool {
		switch {
		case string(k) == `"name"`:
			name = v
			return true
		case string(k) == metaKey:
			meta = v
		case bytes.EqualFold(k, []byte(metaKey)):
			return false
		}
		c.rest = append(c.rest, [2][]byte{k, v})
		return true
	})
	if !ok {
		return relayedCall{}, false
	}
	if c.name, ok = jsonstr.Unquote(name); !ok {
		return relayedCall{}, false
	}
	if meta != nil {
		if c.modern, ok = metaEra(meta); !ok {
			return relayedCall{}, false
		}
	}
	return c, true
}

// workerParams are the params of the call for the worker: its own name for
// the tool, then the other members as the host sent them, a 2025 host's
// _meta with the 2026-07-28 claim added (see legacyMeta). They come from a
// line already decoded, so they are valid JSON and are copied, not
// encoded again.
func (c relayedCall) workerParams(tool string) (json.RawMessage, error) {
	name, err := json.Marshal(tool)
	if err != nil {
		return nil, fmt.Errorf("front: encode tool name: %w", err)
	}
	size := len(name) + len(modernClaim) + 24
	for _, m := range c.rest {
		size += len(m[0]) + len(m[1]) + 2
	}
	b := make([]byte, 0, size)
	b = append(b, `{"name":`...)
	b = append(b, name...)
	claimed := c.modern
	for _, m := range c.rest {
		v := m[1]
		if !claimed && string(m[0]) == metaKey {
			v, claimed = legacyMeta(v), true
		}
		b = append(b, ',')
		b = append(b, m[0]...)
		b = append(b, ':')
		b = append(b, v...)
	}
	if !claimed {
		b = append(b, `,"_meta":`...)
		b = append(b, legacyMeta(nil)...)
	}
	return append(b, '}'), nil
}

// takeCancel forwards a host's cancellation of a relayed call, and reports
// whether the notification was for one.
func (s *Server) takeCancel(req *jsonrpc.Request) bool {
	if req.Method != "notifications/cancelled" || req.IsCall() {
		return false
	}
	id, ok := profile.CancelledID(req.Params)
	if !ok {
		return false
	}
	s.relayed.mu.Lock()
	cancel, ok := s.relayed.cancels[id]
	s.relayed.mu.Unlock()
	// The transport has already marked the call cancelled: whatever
	// answer the relay still gives it is not sent.
	if ok {
		cancel()
	}
	return ok
}

// relayAnswer is the response for the host (its ID still to be set) to a
// relayed call that ended with resp or err; modern is the host's era.
func (s *Server) relayAnswer(ctx context.Context, r Root, timeout time.Duration, modern bool, resp *jsonrpc.Response, err error) *jsonrpc.Response {
	switch {
	case err == nil && isBusy(resp.Error):
		// The worker holds as many calls as it takes: calls the host
		// cancelled still count there while their reads never return
		// (past the 64 it lets go of). The host gets the tool error the
		// front's own quota gives, naming the root, not the worker's
		// JSON-RPC error naming "the server".
		return s.toolErrorResponse(toolError(jsonl.Busy("root "+r.Name(), RootCalls)), modern)
	case err == nil && resp.Error != nil:
		return &jsonrpc.Response{Error: resp.Error}
	case err == nil && modern:
		return &jsonrpc.Response{Result: s.ownServerInfo(resp.Result)}
	case err == nil:
		return &jsonrpc.Response{Result: legacyResult(resp.Result)}
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return s.toolErrorResponse(timedOut(r, timeout), modern)
	case ctx.Err() != nil:
		// The host cancelled the call. The transport sends nothing for
		// it; this answer only frees its slot.
		return &jsonrpc.Response{Error: &jsonrpc.Error{Code: codeRequestCancelled, Message: "request cancelled"}}
	case errors.Is(err, relay.ErrRefused):
		// The worker answered, longer than its root's results can be:
		// the call failed, the worker goes on.
		return s.toolErrorResponse(toolError(fmt.Sprintf("root %s: the call to its worker failed: %v", r.Name(), err)), modern)
	}
	return s.toolErrorResponse(callFailed(r, err), modern)
}

// isBusy reports whether a worker's error is its refusal of a call past
// the calls it takes at once.
func isBusy(err error) bool {
	var we *jsonrpc.Error
	return errors.As(err, &we) && we.Code == jsonl.CodeBusy
}

// codeRequestCancelled is the code of the (unsent) answer to a cancelled
// call.
const codeRequestCancelled = -32800

// toolErrorResponse is a response carrying res, a tool error of the front
// (one text), for a host of the era modern says.
func (s *Server) toolErrorResponse(res *mcp.CallToolResult, modern bool) *jsonrpc.Response {
	return &jsonrpc.Response{Result: s.toolErrorResult(res.Content[0].(*mcp.TextContent).Text, modern)}
}

// serverInfoKey is the _meta member in which a result names its server.
var serverInfoKey = []byte(`"` + mcp.MetaKeyServerInfo + `":`)

// ownServerInfo returns a worker's result with the serverInfo its _meta
// carries replaced by the supervisor's, so every result the host gets names
// the same server. The member is found by its quoted key followed by a
// colon, which in valid JSON is a key and never string content; the rest
// of the result is copied as it came.
func (s *Server) ownServerInfo(result json.RawMessage) json.RawMessage {
	i := bytes.Index(result, serverInfoKey)
	if i < 0 {
		return result
	}
	start := i + len(serverInfoKey)
	end := jsonstr.ValueEnd(result, start)
	if end < 0 {
		return result
	}
	impl := s.implJSON
	out := make([]byte, 0, len(result)-(end-start)+len(impl))
	out = append(out, result[:start]...)
	out = append(out, impl...)
	return append(out, result[end:]...)
}
