package front

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/fsmcp/fsmcp/internal/profile"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// drainConn wraps the host connection so that end of input, or a stop, is
// handed to the server only once every request read so far has been
// answered (or the grace period is over). Without it the SDK would close
// the connection with responses still unwritten.
type drainConn struct {
	inner mcp.Connection
	s     *Server

	in   chan readResult
	once sync.Once

	answers   chan relayedAnswer // see writeAnswers
	closed    chan struct{}
	closeOnce sync.Once
}

type readResult struct {
	msg jsonrpc.Message
	err error
}

type drainTransport struct {
	inner mcp.Transport
	s     *Server
}

func (t *drainTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	dc := &drainConn{inner: c, s: t.s, in: make(chan readResult),
		answers: make(chan relayedAnswer, GlobalCalls), closed: make(chan struct{})}
	go dc.writeAnswers()
	return dc, nil
}

func (c *drainConn) pump() {
	for {
		msg, err := c.inner.Read(context.Background())
		if req, ok := msg.(*jsonrpc.Request); ok && err == nil {
			// Calls the relay path takes, and cancellations of them,
			// never reach the SDK server.
			if c.s.takeCall(c, req) || c.s.takeCancel(req) {
				continue
			}
		}
		c.in <- readResult{msg, err}
		if err != nil {
			return
		}
	}
}

func (c *drainConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	c.once.Do(func() { go c.pump() })
	select {
	case r := <-c.in:
		if r.err != nil {
			c.s.beginDrain()
			c.s.waitAnswered()
			return nil, r.err
		}
		if req, ok := r.msg.(*jsonrpc.Request); ok && req.IsCall() {
			c.s.pendingAdd(1)
		}
		return r.msg, nil
	case <-c.s.stopped:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *drainConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	err := c.inner.Write(ctx, msg)
	if _, ok := msg.(*jsonrpc.Response); ok {
		c.s.pendingAdd(-1)
	}
	return err
}

func (c *drainConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return c.inner.Close()
}

func (c *drainConn) SessionID() string { return c.inner.SessionID() }

// Serve runs the front server on t until its input ends or Stop is called.
func (s *Server) Serve(ctx context.Context, t mcp.Transport) error {
	err := s.MCP.Run(ctx, &drainTransport{inner: profile.TransportFor(t, s.profile), s: s})
	if err == nil || errors.Is(err, io.EOF) || errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// Stop stops taking calls and ends Serve once the requests already read are
// answered, or after the grace period. Meanwhile input is still read, and
// a new call is answered with a tool error saying the supervisor is
// shutting down, so a host is not left waiting on it.
func (s *Server) Stop() {
	s.beginDrain()
	s.stopOnce.Do(func() {
		go func() {
			s.waitAnswered()
			close(s.stopped)
		}()
	})
}

func (s *Server) beginDrain() {
	s.mu.Lock()
	if !s.draining {
		s.draining = true
		close(s.drainStarted)
	}
	s.mu.Unlock()
}

// Draining is closed once the server stops taking calls: at end of its
// input, or on Stop.
func (s *Server) Draining() <-chan struct{} { return s.drainStarted }

func (s *Server) pendingAdd(n int) {
	s.mu.Lock()
	s.pending += n
	if s.pending <= 0 {
		s.cond.Broadcast()
	}
	s.mu.Unlock()
}

// waitAnswered waits until no request is pending or the grace period ends.
func (s *Server) waitAnswered() bool {
	timer := time.AfterFunc(s.grace, func() {
		s.mu.Lock()
		s.graceOver = true
		s.cond.Broadcast()
		s.mu.Unlock()
	})
	defer timer.Stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.pending > 0 && !s.graceOver {
		s.cond.Wait()
	}
	return s.pending <= 0
}
