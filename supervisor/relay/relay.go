// Package relay sends JSON-RPC requests to a peer as JSON lines and
// matches the responses by id, without an MCP client session in between:
// params go out and results come back as the bytes they are.
//
// The supervisor forwards tools/call this way. Through an mcp.ClientSession
// every result would be decoded into a CallToolResult and encoded again by
// the front server; through a Relay it is copied.
//
// A caller never waits for the peer to read. Requests and cancellations
// are queued and written in order by the relay's own writing goroutine, so
// a peer that stops reading (a frozen process whose pipe is full) holds up
// that goroutine alone: every call still ends when its context does, a
// call whose request was not written by then is never sent (ErrUnsent),
// and nothing waits behind the blocked write but queued lines.
package relay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fsmcp/fsmcp/internal/jsonl"
)

// ErrClosed is returned by Call once the connection has ended.
var ErrClosed = errors.New("relay: connection closed")

// ErrUnsent marks the error of a call whose context ended before its
// request was wholly written: the peer was not reading.
var ErrUnsent = errors.New("relay: the request was not yet written")

// ErrRefused marks the error of a call whose answer was longer than the
// connection reads (jsonl.Transport's MaxLine): the answer was dropped.
var ErrRefused = errors.New("the answer was longer than the relay takes")

// chunk is the most written to the peer at once: a pipe's capacity, so a
// long line shows its progress (Wrote) as the peer reads it.
const chunk = 64 << 10

// Relay is a client of one connection. Its methods are safe for concurrent
// use.
type Relay struct {
	conn mcp.Connection // the peer's answers are read from it
	w    io.Writer      // requests are written to it

	mu      sync.Mutex
	next    int64
	waiting map[int64]*call
	queue   []*line // lines to write, in order
	err     error   // why the connection ended, once it has
	done    chan struct{}
	work    chan struct{} // signalled when a line is queued

	lastRead atomic.Int64  // unix nanoseconds of the last message read
	wrote    atomic.Int64  // bytes written to the peer
	sent     chan struct{} // signalled (not queued) when a call is sent
}

// line is a line to write and how far it got.
type line struct {
	b     []byte // nil once written, or dropped before it was
	state lineState
}

type lineState int

const (
	queued lineState = iota
	writing
	written
)

// New starts reading responses from conn and writing requests to w.
func New(conn mcp.Connection, w io.Writer) *Relay {
	r := &Relay{conn: conn, w: w, waiting: map[int64]*call{}, done: make(chan struct{}),
		work: make(chan struct{}, 1), sent: make(chan struct{}, 1)}
	go r.receive()
	go r.write()
	return r
}

func (r *Relay) receive() {
	for {
		msg, err := r.conn.Read(context.Background())
		var refused *jsonl.RefusedError
		if errors.As(err, &refused) {
			// An answer too long to take: its call fails, the
			// connection goes on.
			r.lastRead.Store(time.Now().UnixNano())
			if n, perr := strconv.ParseInt(string(refused.ID), 10, 64); perr == nil {
				if c, ok := r.take(n); ok {
					c.finish(nil, fmt.Errorf("%w (%s)", ErrRefused, refused.Why))
				}
			}
			continue
		}
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

// write writes the queued lines in order until the connection ends.
func (r *Relay) write() {
	for {
		select {
		case <-r.work:
		case <-r.done:
			return
		}
		for {
			l := r.pop()
			if l == nil {
				break
			}
			err := r.writeLine(l.b)
			r.mu.Lock()
			l.b, l.state = nil, written
			r.mu.Unlock()
			if err != nil {
				r.end(fmt.Errorf("send: %w", err))
				return
			}
		}
	}
}

// pop takes the next line to write, marked as being written, or nil when
// none is queued.
func (r *Relay) pop() *line {
	r.mu.Lock()
	defer r.mu.Unlock()
	for len(r.queue) > 0 {
		l := r.queue[0]
		r.queue[0] = nil
		r.queue = r.queue[1:]
		if l.b != nil {
			l.state = writing
			return l
		}
	}
	r.queue = nil
	return nil
}

// writeLine writes b in pieces of at most chunk bytes, counting each.
func (r *Relay) writeLine(b []byte) error {
	for len(b) > 0 {
		n, err := r.w.Write(b[:min(len(b), chunk)])
		r.wrote.Add(int64(n))
		b = b[n:]
		if err != nil {
			return err
		}
	}
	return nil
}

// enqueue queues b for writing; r.mu is held.
func (r *Relay) enqueue(b []byte) *line {
	l := &line{b: b}
	r.queue = append(r.queue, l)
	select {
	case r.work <- struct{}{}:
	default:
	}
	return l
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
	r.waiting = map[int64]*call{}
	r.queue = nil
	r.mu.Unlock()
	for _, c := range waiting {
		c.finish(nil, r.err)
	}
}

// Call sends method with params and waits for the response, whose Result
// or Error is the peer's. If ctx ends first, the peer is sent
// notifications/cancelled for the request (if it was written) and Call
// returns ctx.Err(), marked ErrUnsent if the request was not wholly
// written.
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

// Go queues method with params for sending and returns at once; done is
// called exactly once, with the response, or with ctx.Err() if ctx ends
// first (see Call), or with the error that ended the connection. done runs
// on the relay's reading goroutine for a response, so it must not block
// for long.
func (r *Relay) Go(ctx context.Context, method string, params json.RawMessage, done func(*jsonrpc.Response, error)) {
	n := atomic.AddInt64(&r.next, 1)
	id, err := jsonrpc.MakeID(float64(n))
	var b []byte
	if err == nil {
		b, err = jsonl.Encode(&jsonrpc.Request{ID: id, Method: method, Params: params})
	}
	if err != nil {
		done(nil, fmt.Errorf("relay: encode %s: %w", method, err))
		return
	}
	r.mu.Lock()
	if r.err != nil {
		err := r.err
		r.mu.Unlock()
		done(nil, err)
		return
	}
	c := &call{done: done}
	c.req = r.enqueue(append(b, '\n'))
	r.waiting[n] = c
	r.mu.Unlock()
	select {
	case r.sent <- struct{}{}:
	default:
	}
	stop := context.AfterFunc(ctx, func() { r.expire(ctx, n) })
	r.mu.Lock()
	if _, ok := r.waiting[n]; ok {
		c.stop = stop
	} else {
		stop() // answered or ended already
	}
	r.mu.Unlock()
}

// expire ends call n, whose context ended: a request not yet written is
// dropped, one written (or being written) is followed by a cancellation.
func (r *Relay) expire(ctx context.Context, n int64) {
	r.mu.Lock()
	c, ok := r.waiting[n]
	if !ok {
		r.mu.Unlock()
		return // answered already
	}
	delete(r.waiting, n)
	state := c.req.state
	if state == queued {
		c.req.b = nil
	} else {
		note, _ := json.Marshal(map[string]any{"requestId": n, "reason": context.Cause(ctx).Error()})
		if b, err := jsonl.Encode(&jsonrpc.Request{Method: "notifications/cancelled", Params: note}); err == nil {
			r.enqueue(append(b, '\n'))
		}
	}
	r.mu.Unlock()
	err := ctx.Err()
	if state != written {
		err = fmt.Errorf("%w: %w", ErrUnsent, err)
	}
	c.finish(nil, err)
}

// call is a request waiting for its response.
type call struct {
	done func(*jsonrpc.Response, error)
	stop func() bool // stops watching the call's context
	req  *line
}

func (c *call) finish(resp *jsonrpc.Response, err error) {
	if c.stop != nil {
		c.stop()
	}
	c.done(resp, err)
}

// take removes the call waiting on request n, if any: whoever takes it
// finishes it.
func (r *Relay) take(n int64) (*call, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.waiting[n]
	delete(r.waiting, n)
	return c, ok
}

// ReadSince reports whether a message came from the peer after t.
func (r *Relay) ReadSince(t time.Time) bool { return r.lastRead.Load() > t.UnixNano() }

// Wrote is the number of bytes written to the peer so far. While a line
// is being written it grows as the peer reads.
func (r *Relay) Wrote() int64 { return r.wrote.Load() }

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

// Close closes the connection, which must close the writer too, ending
// a write the peer does not read; waiting calls fail with ErrClosed.
func (r *Relay) Close() error {
	err := r.conn.Close()
	r.end(errors.New("closed"))
	return err
}
