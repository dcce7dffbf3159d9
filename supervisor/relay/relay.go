// Package relay sends JSON-RPC requests over an MCP connection and matches
// the responses by id, without an MCP client session in between: params go
// out and results come back as the bytes they are.
//
// The supervisor forwards tools/call this way. Through an mcp.ClientSession
// every result would be decoded into a CallToolResult and encoded again by
// the front server; through a Relay it is copied.
package relay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ErrClosed is returned by Call once the connection has ended.
var ErrClosed = errors.New("relay: connection closed")

// Relay is a client of one connection. Its methods are safe for concurrent
// use.
type Relay struct {
	conn mcp.Connection

	mu      sync.Mutex
	next    int64
	waiting map[int64]call
	err     error // why the connection ended, once it has
	done    chan struct{}

	lastRead atomic.Int64  // unix nanoseconds of the last message read
	sent     chan struct{} // signalled (not queued) when a call is sent
}

// New starts reading conn's responses.
func New(conn mcp.Connection) *Relay {
	r := &Relay{conn: conn, waiting: map[int64]call{}, done: make(chan struct{}), sent: make(chan struct{}, 1)}
	go r.receive()
	return r
}

func (r *Relay) receive() {
	for {
		msg, err := r.conn.Read(context.Background())
		if err != nil {
			r.end(err)
			return
		}
		r.lastRead.Store(time.Now().UnixNano())
		resp, ok := msg.(*jsonrpc.Response)
		if !ok {
			continue // the workers send no requests; nothing to answer
		}
		id, ok := resp.ID.Raw().(int64)
		if !ok {
			continue
		}
		if c, ok := r.take(id); ok {
			c.finish(resp, nil)
		}
	}
}

// end records why the connection ended and fails every waiting call.
func (r *Relay) end(err error) {
	r.mu.Lock()
	if r.err != nil {
		r.mu.Unlock()
		return
	}
	r.err = fmt.Errorf("%w: %v", ErrClosed, err)
	close(r.done)
	waiting := r.waiting
	r.waiting = map[int64]call{}
	r.mu.Unlock()
	for _, c := range waiting {
		c.finish(nil, r.err)
	}
}

// Call sends method with params and waits for the response, whose Result
// or Error is the peer's. If ctx ends first, the peer is sent
// notifications/cancelled for the request and Call returns ctx.Err().
func (r *Relay) Call(ctx context.Context, method string, params json.RawMessage) (*jsonrpc.Response, error) {
	type answer struct {
		resp *jsonrpc.Response
		err  error
	}
	ch := make(chan answer, 1)
	r.Go(ctx, method, params, func(resp *jsonrpc.Response, err error) { ch <- answer{resp, err} })
	a := <-ch
	return a.resp, a.err
}

// Go sends method with params and returns at once; done is called exactly
// once, with the response, or with ctx.Err() if ctx ends first (the peer is
// then sent notifications/cancelled), or with the error that ended the
// connection. done runs on the relay's reading goroutine for a response,
// so it must not block for long.
func (r *Relay) Go(ctx context.Context, method string, params json.RawMessage, done func(*jsonrpc.Response, error)) {
	r.mu.Lock()
	if r.err != nil {
		err := r.err
		r.mu.Unlock()
		done(nil, err)
		return
	}
	r.next++
	n := r.next
	r.waiting[n] = call{done: done}
	r.mu.Unlock()
	select {
	case r.sent <- struct{}{}:
	default:
	}
	id, err := jsonrpc.MakeID(float64(n))
	if err == nil {
		err = r.conn.Write(ctx, &jsonrpc.Request{ID: id, Method: method, Params: params})
	}
	if err != nil {
		if c, ok := r.take(n); ok {
			c.finish(nil, fmt.Errorf("relay: send %s: %w", method, err))
		}
		return
	}
	stop := context.AfterFunc(ctx, func() {
		c, ok := r.take(n)
		if !ok {
			return // answered already
		}
		note, _ := json.Marshal(map[string]any{"requestId": n, "reason": context.Cause(ctx).Error()})
		_ = r.conn.Write(context.WithoutCancel(ctx), &jsonrpc.Request{Method: "notifications/cancelled", Params: note})
		c.finish(nil, ctx.Err())
	})
	r.mu.Lock()
	if c, ok := r.waiting[n]; ok {
		c.stop = stop
		r.waiting[n] = c
	} else {
		stop() // answered while being sent
	}
	r.mu.Unlock()
}

// call is a request waiting for its response.
type call struct {
	done func(*jsonrpc.Response, error)
	stop func() bool // stops watching the call's context
}

func (c call) finish(resp *jsonrpc.Response, err error) {
	if c.stop != nil {
		c.stop()
	}
	c.done(resp, err)
}

// take removes the call waiting on request n, if any: whoever takes it
// finishes it.
func (r *Relay) take(n int64) (call, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.waiting[n]
	delete(r.waiting, n)
	return c, ok
}

// ReadSince reports whether a message came from the peer after t.
func (r *Relay) ReadSince(t time.Time) bool { return r.lastRead.Load() > t.UnixNano() }

// Pending is the number of calls sent and not yet answered.
func (r *Relay) Pending() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.waiting)
}

// Sent receives a value after a call has been sent (once for any number
// sent since it was last received), so a watcher can sleep while the relay
// is idle.
func (r *Relay) Sent() <-chan struct{} { return r.sent }

// Done is closed when the connection has ended.
func (r *Relay) Done() <-chan struct{} { return r.done }

// Close closes the connection; waiting calls fail with ErrClosed.
func (r *Relay) Close() error {
	err := r.conn.Close()
	r.end(errors.New("closed"))
	return err
}
