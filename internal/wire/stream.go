package wire

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/fsmcp/fsmcp/internal/jsonl"
	"github.com/fsmcp/fsmcp/internal/profile"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

const (
	serviceName = "fsmcp.wire.Session"
	streamName  = "Stream"
	streamPath  = "/" + serviceName + "/" + streamName
)

// sessionServer is the handler type of the service; the unexported method
// keeps the service description private to this package.
type sessionServer interface {
	serveStream(grpc.ServerStream) error
}

var serviceDesc = grpc.ServiceDesc{
	ServiceName: serviceName,
	HandlerType: (*sessionServer)(nil),
	Streams: []grpc.StreamDesc{{
		StreamName:    streamName,
		Handler:       func(srv any, stream grpc.ServerStream) error { return srv.(sessionServer).serveStream(stream) },
		ServerStreams: true,
		ClientStreams: true,
	}},
	Metadata: "fsmcp/internal/wire",
}

type sessionService struct {
	srv *profile.Server
}

func (s *sessionService) serveStream(stream grpc.ServerStream) error {
	conn := newConn(stream, nil)
	ss, err := profile.Connect(stream.Context(), s.srv, &connTransport{conn: conn})
	if err != nil {
		return fmt.Errorf("wire: start session: %w", err)
	}
	_ = ss.Wait()
	return nil
}

type clientTransport struct {
	cc *grpc.ClientConn
}

func (t *clientTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	// The stream outlives the Connect call: it ends when the connection is
	// closed, not when ctx is done.
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	cs, err := t.cc.NewStream(sctx, &serviceDesc.Streams[0], streamPath)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("wire: open session stream: %w", err)
	}
	c := newConn(cs, nil)
	c.onClose = func() {
		// gRPC forbids CloseSend concurrently with SendMsg: cancelling
		// first unblocks a send in progress, then the lock waits it out.
		cancel()
		c.sendMu.Lock()
		_ = cs.CloseSend()
		c.sendMu.Unlock()
	}
	return c, nil
}

// connTransport hands out an already-open connection once.
type connTransport struct {
	conn *conn
}

func (t *connTransport) Connect(context.Context) (mcp.Connection, error) { return t.conn, nil }

// frameStream is what client and server gRPC streams have in common.
type frameStream interface {
	SendMsg(m any) error
	RecvMsg(m any) error
}

type received struct {
	msg jsonrpc.Message
	err error
}

// conn is an mcp.Connection over a gRPC stream of BytesValue frames, one
// JSON-RPC message per frame. A single goroutine receives, so Read can be
// abandoned by Close at any time.
type conn struct {
	stream  frameStream
	onClose func()

	sendMu sync.Mutex
	in     chan received
	done   chan struct{}
	once   sync.Once
}

func newConn(s frameStream, onClose func()) *conn {
	c := &conn{stream: s, onClose: onClose, in: make(chan received), done: make(chan struct{})}
	go c.receive()
	return c
}

func (c *conn) receive() {
	for {
		var frame wrapperspb.BytesValue
		var r received
		if err := c.stream.RecvMsg(&frame); err != nil {
			if errors.Is(err, io.EOF) {
				r.err = io.EOF
			} else {
				r.err = fmt.Errorf("wire: receive: %w", err)
			}
		} else if r.msg, err = jsonl.Decode(frame.Value); err != nil {
			r.err = fmt.Errorf("wire: decode message: %w", err)
		}
		select {
		case c.in <- r:
		case <-c.done:
			return
		}
		if r.err != nil {
			return
		}
	}
}

func (c *conn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case r := <-c.in:
		return r.msg, r.err
	case <-c.done:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *conn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case <-c.done:
		return errors.New("wire: write on closed connection")
	default:
	}
	data, err := jsonl.Encode(msg)
	if err != nil {
		return fmt.Errorf("wire: %w", err)
	}
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	if err := c.stream.SendMsg(&wrapperspb.BytesValue{Value: data}); err != nil {
		return fmt.Errorf("wire: send: %w", err)
	}
	return nil
}

func (c *conn) Close() error {
	c.once.Do(func() {
		close(c.done)
		if c.onClose != nil {
			c.onClose()
		}
	})
	return nil
}

func (c *conn) SessionID() string { return "" }
