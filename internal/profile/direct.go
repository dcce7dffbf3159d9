package profile

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The direct path. For each tools/call the SDK decodes the params and their
// _meta several times (each decode with a fresh 32 KiB buffer), checks the
// _meta, runs the middleware, and hands the handler's result on through two
// more goroutines: about a third of the worker's CPU for a 1-chunk read
// (docs/design.md). A call the direct path takes runs the tool's
// handler on a goroutine of its own as soon as it is read, and its answer,
// encoded as the SDK encodes it, goes to the same connection. Everything
// else (and every call it does not take) goes to the SDK.
//
// It takes only calls whose answer it can give exactly as the SDK would:
// params of exactly _meta, name (a tool of the Server) and arguments (an
// object), written without escapes in their keys or repeated keys; a _meta
// naming Version, with clientCapabilities, and nothing more than
// clientInfo, a plain progressToken, a plain logLevel, and members of the
// host's own (outside the protocol's namespace, with plain values) beside
// them. The
// SDK checks clientCapabilities and clientInfo by decoding them into its
// own types; rather than repeat that, the direct path takes a call only
// when the SDK has already answered a call with a result for the very
// same bytes of those two members ("vouched"), which it does only when
// they decode. So a client's first call goes through the SDK, and the
// rest of its calls (whose _meta is the same) go direct.

// directLimit bounds how many spellings of clientCapabilities and
// clientInfo a connection remembers as vouched, and how many calls it
// watches for a vouching answer: a client sends one.
const directLimit = 8

type directTransport struct {
	inner mcp.Transport
	s     *Server
}

func (t *directTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	base, cancel := context.WithCancel(ctx)
	return &directConn{Connection: c, s: t.s, base: base, cancel: cancel,
		inFlight: map[jsonrpc.ID]context.CancelFunc{}, watched: map[jsonrpc.ID][]byte{}}, nil
}

type directConn struct {
	mcp.Connection
	s      *Server
	base   context.Context // the calls' contexts derive from it; cancelled when the connection ends
	cancel context.CancelFunc

	mu       sync.Mutex
	inFlight map[jsonrpc.ID]context.CancelFunc // direct calls not yet answered
	watched  map[jsonrpc.ID][]byte             // calls left to the SDK whose result would vouch for their key
	vouched  [][]byte                          // keys (see directCall.key) the SDK answered a call with a result for
}

// Read returns the next message for the SDK, serving the calls the direct
// path takes on the way.
func (c *directConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Connection.Read(ctx)
		if err != nil {
			// As the SDK cancels its handlers when its input ends.
			c.cancel()
			return msg, err
		}
		req, ok := msg.(*jsonrpc.Request)
		if !ok {
			return msg, nil
		}
		if req.Method == "notifications/cancelled" && !req.IsCall() {
			c.cancelCall(req.Params) // and the SDK sees it too
			return msg, nil
		}
		if !c.take(req) {
			return msg, nil
		}
	}
}

// take starts serving req on the direct path and reports whether it did.
func (c *directConn) take(req *jsonrpc.Request) bool {
	if req.Method != "tools/call" || !req.IsCall() {
		return false
	}
	call, ok := splitDirect(req.Params)
	if !ok {
		return false
	}
	h := c.s.tools[call.name]
	if h == nil {
		return false
	}
	c.mu.Lock()
	if !c.isVouched(call.key) {
		if len(c.watched) < directLimit {
			c.watched[req.ID] = call.key
		}
		c.mu.Unlock()
		return false
	}
	ctx, cancel := context.WithCancel(c.base)
	c.inFlight[req.ID] = cancel
	c.mu.Unlock()
	go c.serve(ctx, cancel, req.ID, h, call)
	return true
}

func (c *directConn) isVouched(key []byte) bool {
	for _, k := range c.vouched {
		if bytes.Equal(k, key) {
			return true
		}
	}
	return false
}

// serve runs a direct call and writes its answer. The answer is always
// written, even for a call the peer cancelled: the transport drops it
// then, and frees the call's slot.
func (c *directConn) serve(ctx context.Context, cancel context.CancelFunc, id jsonrpc.ID, h mcp.ToolHandler, call directCall) {
	res, err := h(ctx, &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: call.name, Arguments: call.arguments}})
	c.mu.Lock()
	delete(c.inFlight, id)
	c.mu.Unlock()
	cancel() // the call's context is done with; base forgets it
	ctx = context.WithoutCancel(ctx)
	resp := &jsonrpc.Response{ID: id}
	switch {
	case err != nil:
		resp.Error = wireError(err)
	case res == nil:
		resp.Error = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "tool " + call.name + " returned no result"}
	default:
		if resp.Result, err = c.s.encode(res); err != nil {
			resp.Result, resp.Error = nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "encode the result of " + call.name + ": " + err.Error()}
		}
	}
	_ = c.Connection.Write(ctx, resp)
}

// wireError is err as the SDK answers a handler's error: itself when it is
// a JSON-RPC error, else its text with the code of a JSON-RPC error it
// wraps (0 for none).
func wireError(err error) *jsonrpc.Error {
	if we, ok := err.(*jsonrpc.Error); ok {
		return we
	}
	out := &jsonrpc.Error{Message: err.Error()}
	var we *jsonrpc.Error
	if errors.As(err, &we) {
		out.Code = we.Code
	}
	return out
}

// cancelCall cancels the direct call a notifications/cancelled names, if
// it names one.
func (c *directConn) cancelCall(params json.RawMessage) {
	id, ok := CancelledID(params)
	if !ok {
		return
	}
	c.mu.Lock()
	cancel, found := c.inFlight[id]
	c.mu.Unlock()
	if found {
		cancel()
	}
}

// CancelledID is the request a notifications/cancelled's params name, if
// they name one.
func CancelledID(params json.RawMessage) (jsonrpc.ID, bool) {
	var p struct {
		RequestID any `json:"requestId"`
	}
	if json.Unmarshal(params, &p) != nil {
		return jsonrpc.ID{}, false
	}
	id, err := jsonrpc.MakeID(p.RequestID)
	return id, err == nil && id.IsValid()
}

// Write writes msg, and remembers the key of a watched call the SDK
// answered with a result as vouched.
func (c *directConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.mu.Lock()
		if key, ok := c.watched[resp.ID]; ok {
			delete(c.watched, resp.ID)
			if resp.Error == nil && len(c.vouched) < directLimit && !c.isVouched(key) {
				c.vouched = append(c.vouched, key)
			}
		}
		c.mu.Unlock()
	}
	return c.Connection.Write(ctx, msg)
}

// Close cancels the direct calls in flight, as the SDK cancels its
// handlers when the session ends, and closes the connection.
func (c *directConn) Close() error {
	c.cancel()
	return c.Connection.Close()
}
