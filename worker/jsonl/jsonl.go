// Package jsonl is an MCP transport of newline-delimited JSON-RPC messages
// over a reader and a writer, such as a process's stdin and stdout.
//
// It differs from the go-sdk's stdio transport in two ways that matter to
// a file server. A response's result, which the SDK has already encoded
// as compact JSON, is written as it is rather than validated and compacted
// a second time; for a read page that is most of the bytes on the wire.
// And a line that is not a message (malformed JSON, a batch, a line over
// the length limit) is answered with a JSON-RPC error and skipped, so the
// connection keeps serving instead of ending.
//
// Ids are the peer's, byte for byte (see calls in ids.go): the SDK never
// sees them, so none is rounded or refused; a call reusing the id of one
// in flight is refused with -32600 before it takes a slot; and nothing is
// sent for a call after the peer's notifications/cancelled.
//
// Memory stays bounded whatever the peer sends: one line is buffered at a
// time, and once MaxInFlight calls are unanswered no more input is read
// until one is, so a client that floods calls without reading the answers
// is held back by the pipe instead of growing the server. (fsmcp's servers
// never call the client, so pausing input cannot deadlock them.)
package jsonl

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultMaxLine is the longest line read when Transport.MaxLine is zero.
const DefaultMaxLine = 16 << 20

// MaxLineFor is the line limit that admits a write_text_file call of
// maxWrite bytes of text, escaped at worst six bytes per byte, with room for
// the rest of the request; never less than DefaultMaxLine.
func MaxLineFor(maxWrite int64) int {
	return int(max(DefaultMaxLine, 6*maxWrite+64<<10))
}

// DefaultMaxInFlight is the bound on unanswered calls when
// Transport.MaxInFlight is zero.
const DefaultMaxInFlight = 64

// Transport connects over Reader and Writer, one message per line.
type Transport struct {
	Reader io.Reader
	Writer io.Writer
	// MaxLine bounds the bytes of one inbound line; a longer line is
	// skipped and answered with an error. Zero means DefaultMaxLine.
	MaxLine int
	// MaxInFlight bounds the calls read and not yet answered; input is not
	// read while that many are. Zero means DefaultMaxInFlight.
	MaxInFlight int
	// DrainTimeout is how long end of input waits for the calls in flight
	// to be answered before it is reported (the SDK cancels them then).
	// Zero means not at all.
	DrainTimeout time.Duration
	// Ended, if set, is called once the input has ended and the drain is
	// over, just before Read reports the end. A server whose handlers may
	// be blocked for good (a read from a dead network file system) uses it
	// to bound how long it still waits for them.
	Ended func()
}

// Connect implements mcp.Transport. A Transport connects once.
func (t *Transport) Connect(context.Context) (mcp.Connection, error) {
	limit := t.MaxLine
	if limit <= 0 {
		limit = DefaultMaxLine
	}
	c := &conn{w: t.Writer, in: make(chan received), done: make(chan struct{}),
		maxCalls: t.MaxInFlight, drain: t.DrainTimeout, ended: t.Ended, freed: make(chan struct{}, 1)}
	if c.maxCalls <= 0 {
		c.maxCalls = DefaultMaxInFlight
	}
	if cl, ok := t.Reader.(io.Closer); ok {
		c.closeReader = cl
	}
	go c.receive(bufio.NewReaderSize(t.Reader, 64<<10), limit)
	return c, nil
}

type received struct {
	msg jsonrpc.Message
	err error
}

type conn struct {
	w           io.Writer
	closeReader io.Closer

	writeMu sync.Mutex
	in      chan received
	done    chan struct{}
	once    sync.Once

	ids calls // the peer's calls in flight, by id

	maxCalls int
	drain    time.Duration
	ended    func()
	endOnce  sync.Once
	callsMu  sync.Mutex
	calls    int           // calls delivered and not yet answered
	freed    chan struct{} // signalled when calls drops
}

// receive reads lines until the reader fails, answering the ones that are
// not messages itself.
func (c *conn) receive(r *bufio.Reader, limit int) {
	for {
		line, err := readLine(r, limit)
		var msg jsonrpc.Message
		switch {
		case errors.Is(err, errLineTooLong):
			c.reject(requestID(line), jsonrpc.CodeInvalidRequest, fmt.Sprintf("message line exceeds %d bytes; it was skipped", limit))
			continue
		case err != nil && len(line) == 0:
			c.deliver(received{err: err})
			return
		}
		if line = bytes.TrimSpace(line); len(line) > 0 {
			if msg = c.decode(line); msg != nil && !c.deliver(received{msg: msg}) {
				return
			}
		}
		if err != nil {
			c.deliver(received{err: err})
			return
		}
	}
}

// decode returns the message on line, or nil after answering a line that
// is not one. A call gets its local id (see calls); one whose id is in
// flight already is refused. A cancellation names the call by its local id.
func (c *conn) decode(line []byte) jsonrpc.Message {
	// decodeCall parses the whole line, so a line it takes is valid JSON;
	// only a refused line is checked again, to tell which error it gets.
	if line[0] != '[' {
		if msg, raw, err := decodeCall(line); err == nil {
			return c.admit(msg, raw)
		}
	}
	switch {
	case !json.Valid(line):
		c.reject(requestID(line), jsonrpc.CodeParseError, "parse error: the line is not valid JSON")
	case line[0] == '[':
		c.reject(nil, jsonrpc.CodeInvalidRequest, "JSON-RPC batches are not supported")
	default:
		c.reject(requestID(line), jsonrpc.CodeInvalidRequest, "invalid request: not a JSON-RPC 2.0 message")
	}
	return nil
}

// admit gives a call (whose id as written is raw) its local id, and a
// cancellation the local id of the call it names. It returns nil after
// refusing a call whose id is in flight.
func (c *conn) admit(msg jsonrpc.Message, raw json.RawMessage) jsonrpc.Message {
	req, ok := msg.(*jsonrpc.Request)
	switch {
	case !ok:
		return msg
	case raw != nil:
		id, ok := c.ids.open(raw)
		if !ok {
			c.reject(raw, jsonrpc.CodeInvalidRequest, "invalid request: the id "+string(raw)+" is already used by a call in flight")
			return nil
		}
		req.ID = id
	case req.Method == "notifications/cancelled" && !req.IsCall():
		req.Params = c.ids.cancel(req.Params)
		c.signalFreed() // the drain no longer waits for it
	}
	return req
}

// requestID is the id of a line that failed to decode as a message, as it
// was written, when it has a usable one (a string or a number). The line
// may be malformed or cut short (the start of an over-long line): the id
// counts when it is a top-level key met within the first idWindow bytes,
// before anything unreadable.
func requestID(line []byte) json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(line[:min(len(line), idWindow)]))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil
		}
		if key != "id" {
			continue
		}
		if isID(v) {
			return v
		}
		return nil
	}
	return nil
}

// idWindow is how much of a refused line is searched for its id.
const idWindow = 64 << 10

// reject writes an error response for a line that was not delivered, with
// the line's id as written (null if nil).
func (c *conn) reject(id json.RawMessage, code int, msg string) {
	if id == nil {
		id = json.RawMessage("null")
	}
	b, err := json.Marshal(struct {
		Version string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   jsonrpc.Error   `json:"error"`
	}{"2.0", id, jsonrpc.Error{Code: int64(code), Message: msg}})
	if err == nil {
		_ = c.writeLine(b)
	}
}

func (c *conn) deliver(r received) bool {
	select {
	case c.in <- r:
		return true
	case <-c.done:
		return false
	}
}

var errLineTooLong = errors.New("line too long")

// readLine returns the next line without its newline. A line longer than
// limit is consumed to its end and reported as errLineTooLong, with the
// start of it that was read.
func readLine(r *bufio.Reader, limit int) ([]byte, error) {
	var line []byte
	for {
		frag, err := r.ReadSlice('\n')
		if len(line)+len(frag) > limit+1 {
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = r.ReadSlice('\n')
			}
			return line, errLineTooLong
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			line = append(line, frag...)
			continue
		}
		if line == nil {
			line = frag
		} else {
			line = append(line, frag...)
		}
		return bytes.TrimSuffix(line, []byte{'\n'}), err
	}
}

// Read returns the next message. A call first waits until fewer than
// MaxInFlight are unanswered; the end of input first waits (up to
// DrainTimeout) until none is that the peer still waits for (a cancelled
// call's answer is never sent, so it is not waited for).
func (c *conn) Read(ctx context.Context) (jsonrpc.Message, error) {
	var r received
	select {
	case r = <-c.in:
	case <-c.done:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if r.err != nil {
		if c.drain > 0 {
			c.waitCalls(ctx, 0, c.drain, true)
		}
		if c.ended != nil {
			c.endOnce.Do(c.ended)
		}
		return nil, r.err
	}
	if req, ok := r.msg.(*jsonrpc.Request); ok && req.IsCall() {
		if err := c.waitCalls(ctx, c.maxCalls-1, -1, false); err != nil {
			return nil, err
		}
		c.callsMu.Lock()
		c.calls++
		c.callsMu.Unlock()
	}
	return r.msg, nil
}

// waitCalls waits until at most n calls are unanswered (not counting the
// cancelled ones if live), the connection closes, ctx ends, or timeout
// passes (never, if negative).
func (c *conn) waitCalls(ctx context.Context, n int, timeout time.Duration, live bool) error {
	var expired <-chan time.Time
	if timeout >= 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expired = t.C
	}
	for {
		c.callsMu.Lock()
		calls := c.calls
		c.callsMu.Unlock()
		if live {
			calls -= c.ids.cancelled()
		}
		if calls <= n {
			return nil
		}
		select {
		case <-c.freed:
		case <-expired:
			return nil
		case <-c.done:
			return io.EOF
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (c *conn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	resp, ok := msg.(*jsonrpc.Response)
	if !ok {
		b, err := Encode(msg)
		if err != nil {
			return err
		}
		return c.writeLine(b)
	}
	defer c.answered()
	raw, local, send := c.ids.answer(resp.ID)
	if !send {
		return nil // the peer cancelled the call: nothing is sent for it
	}
	b, err := Encode(msg)
	if err == nil && raw != nil {
		b, err = withID(b, local, raw)
	}
	if err != nil {
		return err
	}
	return c.writeLine(b)
}

// answered frees the slot of a call whose response was written.
func (c *conn) answered() {
	c.callsMu.Lock()
	c.calls = max(c.calls-1, 0)
	c.callsMu.Unlock()
	c.signalFreed()
}

// signalFreed wakes a waitCalls.
func (c *conn) signalFreed() {
	select {
	case c.freed <- struct{}{}:
	default:
	}
}

func (c *conn) writeLine(b []byte) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	select {
	case <-c.done:
		return errors.New("jsonl: write on closed connection")
	default:
	}
	_, err := c.w.Write(append(b, '\n'))
	return err
}

func (c *conn) Close() error {
	c.once.Do(func() {
		close(c.done)
		if c.closeReader != nil {
			_ = c.closeReader.Close()
		}
	})
	return nil
}

func (c *conn) SessionID() string { return "" }

// Encode encodes msg as one line of JSON (without the newline). A
// successful response is assembled around its result as the SDK encoded
// it, and a request with params around its params (which must be valid
// JSON, as the SDK's or a decoded message's are); everything else is
// encoded by the SDK.
func Encode(msg jsonrpc.Message) ([]byte, error) {
	if req, ok := msg.(*jsonrpc.Request); ok && len(req.Params) > 0 {
		return encodeRequest(req)
	}
	resp, ok := msg.(*jsonrpc.Response)
	if !ok || resp.Error != nil || len(resp.Result) == 0 || !resp.ID.IsValid() {
		b, err := jsonrpc.EncodeMessage(msg)
		if err != nil {
			return nil, fmt.Errorf("jsonl: encode message: %w", err)
		}
		return b, nil
	}
	id, err := json.Marshal(resp.ID.Raw())
	if err != nil {
		return nil, fmt.Errorf("jsonl: encode id: %w", err)
	}
	b := make([]byte, 0, len(resp.Result)+len(id)+40)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"result":`...)
	b = append(b, resp.Result...)
	return append(b, '}'), nil
}

// encodeRequest assembles a request around its params: the SDK's encoder
// would validate and compact them once more, which for a relayed call is
// as much work as decoding it.
func encodeRequest(req *jsonrpc.Request) ([]byte, error) {
	method, err := json.Marshal(req.Method)
	if err != nil {
		return nil, fmt.Errorf("jsonl: encode method: %w", err)
	}
	b := make([]byte, 0, len(req.Params)+len(method)+64)
	b = append(b, `{"jsonrpc":"2.0",`...)
	if req.ID.IsValid() {
		id, err := json.Marshal(req.ID.Raw())
		if err != nil {
			return nil, fmt.Errorf("jsonl: encode id: %w", err)
		}
		b = append(b, `"id":`...)
		b = append(b, id...)
		b = append(b, ',')
	}
	b = append(b, `"method":`...)
	b = append(b, method...)
	b = append(b, `,"params":`...)
	b = append(b, req.Params...)
	return append(b, '}'), nil
}
