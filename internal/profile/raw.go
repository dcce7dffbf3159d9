package profile

import (
	"context"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// rawResults carries the results a server served by Run encoded itself
// (textResult) past the SDK to the transport. The SDK marshals every result
// through encoding/json, which validates and compacts whatever a
// MarshalJSON returns: a page of hundreds of kilobytes would be scanned once
// more only to be copied unchanged. A textResult's MarshalJSON therefore
// files its bytes here and returns a number as its token; the transport of Run or
// Connect (rawConn.Write) swaps the token for the bytes as it writes the
// response. A tool result is always a JSON object, so a number in its
// place is never anything else. Only Run and Connect set this up (the
// session's context carries the rawResults, its transport swaps), so a
// server run any other way gets the bytes from MarshalJSON itself.
type rawResults struct {
	mu   sync.Mutex
	next uint64
	m    map[uint64][]byte
}

type rawKey struct{}

// rawFrom is the rawResults of the session a request's ctx belongs to,
// or nil.
func rawFrom(ctx context.Context) *rawResults {
	r, _ := ctx.Value(rawKey{}).(*rawResults)
	return r
}

// put files b and returns its token.
func (r *rawResults) put(b []byte) []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.next++
	if r.m == nil {
		r.m = map[uint64][]byte{}
	}
	r.m[r.next] = b
	return strconv.AppendUint(nil, r.next, 10)
}

// take returns (and forgets) the bytes whose token is tok, if it is one.
func (r *rawResults) take(tok []byte) ([]byte, bool) {
	if len(tok) == 0 || len(tok) > 20 || tok[0] < '1' || tok[0] > '9' {
		return nil, false
	}
	n, err := strconv.ParseUint(string(tok), 10, 64)
	if err != nil {
		return nil, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	b, ok := r.m[n]
	delete(r.m, n)
	return b, ok
}

// Run serves s on t, wrapped by Transport, until ctx is done or the peer
// leaves, as s.MCP.Run does; tool results of the textResult shape are
// written to the peer as encoded, without the SDK's pass over them (see
// rawResults), and calls the direct path takes (see directConn) never
// reach the SDK.
func Run(ctx context.Context, s *Server, t mcp.Transport) error {
	raw := &rawResults{}
	return s.MCP.Run(context.WithValue(ctx, rawKey{}, raw), &rawTransport{inner: &directTransport{inner: Transport(t), s: s}, raw: raw})
}

// Connect is s.MCP.Connect(ctx, t, nil) with the same ways around the SDK
// as Run, for a transport that is not to check the protocol claim (the
// supervisor's call channel, whose front checked it; the direct path
// takes only calls that name Version).
func Connect(ctx context.Context, s *Server, t mcp.Transport) (*mcp.ServerSession, error) {
	raw := &rawResults{}
	return s.MCP.Connect(context.WithValue(ctx, rawKey{}, raw), &rawTransport{inner: &directTransport{inner: t, s: s}, raw: raw}, nil)
}

// rawTransport puts the results filed in raw in place of their tokens.
type rawTransport struct {
	inner mcp.Transport
	raw   *rawResults
}

func (t *rawTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &rawConn{Connection: c, raw: t.raw}, nil
}

type rawConn struct {
	mcp.Connection
	raw *rawResults
}

// Write puts a tool result filed by a textResult in place of its token,
// then writes the message.
func (c *rawConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if resp, ok := msg.(*jsonrpc.Response); ok && resp.Error == nil {
		if b, ok := c.raw.take(resp.Result); ok {
			r := *resp
			r.Result = b
			msg = &r
		}
	}
	return c.Connection.Write(ctx, msg)
}
