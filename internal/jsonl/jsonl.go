// Package jsonl is an MCP transport of newline-delimited JSON-RPC messages
// over a reader and a writer, such as a process's stdin and stdout.
//
// It differs from the go-sdk's stdio transport in two ways that matter to
// a file server. A response's result, which the SDK has already encoded
// as compact JSON, is written as it is rather than validated and compacted
// a second time; for a read page that is most of the bytes on the wire.
// And a line that is not a message (malformed JSON, a batch, a line over
// the limits) is answered with a JSON-RPC error and skipped, so the
// connection keeps serving instead of ending.
//
// Ids are the peer's, byte for byte (see calls in ids.go): the SDK never
// sees them, so none is rounded or refused; a call reusing the id of one
// in flight is refused with -32600 and keeps no slot; and nothing is
// sent for a call after the peer's notifications/cancelled.
//
// Input is always read, so a notifications/cancelled is applied however
// many calls are stuck. Memory stays bounded whatever the peer sends: one
// line is buffered at a time, and one past MaxLine or MaxText is refused
// once that much of it is read, the rest dropped as it comes (line.go);
// a call read while MaxInFlight are unanswered
// is refused at once with CodeBusy (Busy's text), never queued; a
// cancelled call's slot is free at once, but at most MaxInFlight cancelled
// calls whose handlers have not returned (stuck for good, say, on a dead
// network file system) are let go that way; and a
// refusal is written by the reading goroutine itself, so a peer that does
// not read its answers fills its own pipe and input then waits on it,
// instead of answers piling up in the server.
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

// DefaultMaxInFlight is the bound on unanswered calls when
// Transport.MaxInFlight is zero.
const DefaultMaxInFlight = 64

// CodeBusy is the JSON-RPC error code of a call refused because as many
// calls as the server takes at once are unanswered.
const CodeBusy = -32001

// Busy is the text a call past a cap of n calls in flight is refused with;
// who names what holds them ("the server", "root docs", "the supervisor").
// The supervisor's front refuses with the same words.
func Busy(who string, n int) string {
	return fmt.Sprintf("%s has %d calls in flight, as many as it takes at once; try again when one of them is answered", who, n)
}

// Transport connects over Reader and Writer, one message per line.
type Transport struct {
	Reader io.Reader
	Writer io.Writer
	// MaxLine bounds the bytes of one inbound line, and MaxText the bytes
	// it holds once its string escapes are decoded (counted as the least
	// each escape decodes to, one byte). A line past either is refused as
	// soon as it passes: answered with an error naming the line's id when
	// it has one, read through and dropped, so no more than the limit is
	// held of it. Zero MaxLine means DefaultMaxLine, zero MaxText means
	// MaxLine.
	MaxLine int
	MaxText int
	// ReadsAnswers is set for the side of a connection that reads the
	// peer's answers to its own calls (the supervisor's side of a call
	// channel): a refused line is then not answered but reported by Read
	// as a *RefusedError, after which Read goes on.
	ReadsAnswers bool
	// MaxInFlight bounds the calls read and not yet answered; a call read
	// while that many are is refused at once with CodeBusy. Zero means
	// DefaultMaxInFlight.
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
	lr := &lineReader{r: bufio.NewReaderSize(t.Reader, 64<<10), maxLine: t.MaxLine, maxText: t.MaxText}
	if lr.maxLine <= 0 {
		lr.maxLine = DefaultMaxLine
	}
	if lr.maxText <= 0 || lr.maxText > lr.maxLine {
		lr.maxText = lr.maxLine
	}
	c := &conn{w: t.Writer, in: make(chan received), done: make(chan struct{}),
		maxCalls: t.MaxInFlight, drain: t.DrainTimeout, ended: t.Ended, freed: make(chan struct{}, 1),
		readsAnswers: t.ReadsAnswers}
	if c.maxCalls <= 0 {
		c.maxCalls = DefaultMaxInFlight
	}
	if cl, ok := t.Reader.(io.Closer); ok {
		c.closeReader = cl
	}
	go c.receive(lr)
	return c, nil
}

// RefusedError is an inbound line refused while it was read, as Read
// reports it when Transport.ReadsAnswers is set.
type RefusedError struct {
	ID  json.RawMessage // the id the line carries, nil if none was found
	Why string
}

func (e *RefusedError) Error() string { return "jsonl: " + e.Why }

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

	ids          calls // the peer's calls in flight, by id
	readsAnswers bool  // see Transport.ReadsAnswers

	maxCalls int
	drain    time.Duration
	ended    func()
	endOnce  sync.Once
	callsMu  sync.Mutex
	calls    int           // calls read, not yet answered, holding a slot
	freed    chan struct{} // signalled when calls drops
}

// receive reads lines until the reader fails, answering the ones that are
// not messages itself.
func (c *conn) receive(lr *lineReader) {
	for {
		line, refused, err := lr.next()
		var msg jsonrpc.Message
		switch {
		case refused != nil && c.readsAnswers:
			if !c.deliver(received{err: &RefusedError{ID: refused.id, Why: refused.why}}) {
				return
			}
		case refused != nil:
			c.reject(refused.id, jsonrpc.CodeInvalidRequest, refused.why)
		}
		if err != nil && len(line) == 0 {
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
	var err error
	if line[0] != '[' {
		var msg jsonrpc.Message
		var raw json.RawMessage
		if msg, raw, err = decodeCall(line); err == nil {
			return c.admit(msg, raw)
		}
	}
	switch {
	case errors.Is(err, errIDNotInteger):
		c.reject(nil, jsonrpc.CodeInvalidRequest, errIDNotInteger.Error())
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
		if !c.takeSlot() {
			c.reject(raw, CodeBusy, Busy("the server", c.maxCalls))
			return nil
		}
		id, ok := c.ids.open(raw)
		if !ok {
			c.answered()
			c.reject(raw, jsonrpc.CodeInvalidRequest, "invalid request: the id "+string(raw)+" is already used by a call in flight")
			return nil
		}
		req.ID = id
	case req.Method == "notifications/cancelled" && !req.IsCall():
		var freed bool
		if req.Params, freed = c.ids.cancel(req.Params, c.maxCalls); freed {
			c.answered() // the peer no longer waits for it
		}
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
// the line's id as written, or with none when id is nil: the MCP schemas
// of both eras allow an error response without an id, but not an id of
// null (a request id is a string or an integer).
func (c *conn) reject(id json.RawMessage, code int, msg string) {
	b, err := json.Marshal(struct {
		Version string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id,omitempty"`
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

// takeSlot counts a call in flight, or reports false when MaxInFlight are.
func (c *conn) takeSlot() bool {
	c.callsMu.Lock()
	defer c.callsMu.Unlock()
	if c.calls >= c.maxCalls {
		return false
	}
	c.calls++
	return true
}

// Read returns the next message. The end of input first waits (up to
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
	if _, ok := r.err.(*RefusedError); ok {
		return nil, r.err
	}
	if r.err != nil {
		if c.drain > 0 {
			c.waitCalls(ctx, c.drain)
		}
		if c.ended != nil {
			c.endOnce.Do(c.ended)
		}
		return nil, r.err
	}
	return r.msg, nil
}

// waitCalls waits until no call the peer still waits for (one not
// cancelled) is unanswered, the connection closes, ctx ends, or timeout
// passes.
func (c *conn) waitCalls(ctx context.Context, timeout time.Duration) {
	expired := time.NewTimer(timeout)
	defer expired.Stop()
	for {
		c.callsMu.Lock()
		calls := c.calls
		c.callsMu.Unlock()
		if calls-c.ids.cancelled() <= 0 {
			return
		}
		select {
		case <-c.freed:
		case <-expired.C:
			return
		case <-c.done:
			return
		case <-ctx.Done():
			return
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
	raw, local, send, freed := c.ids.answer(resp.ID)
	if !send {
		if !freed {
			c.answered()
		}
		return nil // the peer cancelled the call: nothing is sent for it
	}
	var b []byte
	var err error
	if raw != nil && resp.Error == nil && len(resp.Result) > 0 {
		b = appendResult(make([]byte, 0, len(resp.Result)+len(raw)+40), raw, resp.Result)
	} else {
		b, err = Encode(msg)
		if err == nil && raw != nil {
			b, err = withID(b, local, raw)
		}
	}
	if err != nil {
		c.answered()
		return err
	}
	// The slot is freed just before the answer goes out, so the peer never
	// sees an answer while its call still counts; and at most one answer
	// beyond the calls in flight (the one being written) is held.
	return c.writeLineAfter(b, c.answered)
}

// answered frees the slot of a call whose response was written (or
// dropped, the call being cancelled).
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

func (c *conn) writeLine(b []byte) error { return c.writeLineAfter(b, nil) }

// writeLineAfter writes b as a line; first, once it holds the writer, it
// calls before (if set), whether or not the line can be written.
func (c *conn) writeLineAfter(b []byte, before func()) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	if before != nil {
		before()
	}
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
	return appendResult(make([]byte, 0, len(resp.Result)+len(id)+40), id, resp.Result), nil
}

// appendResult appends a successful response with the given id (as
// written) around result, which is valid JSON. The capacity callers give
// leaves room for the line's newline, so writing it copies nothing more.
func appendResult(b, id, result []byte) []byte {
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"result":`...)
	b = append(b, result...)
	return append(b, '}')
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
