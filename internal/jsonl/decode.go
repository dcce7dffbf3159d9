package jsonl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	segjson "github.com/segmentio/encoding/json"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/fsmcp/fsmcp/internal/jsonstr"
)

// wireMessage is the decode form of any JSON-RPC message. Method is raw so
// a present-but-empty method still makes a request.
type wireMessage struct {
	Version string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  json.RawMessage `json:"method"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *jsonrpc.Error  `json:"error,omitempty"`
}

// maxDepth is the nesting the SDK's decoder accepts.
const maxDepth = 1000

var errNotResponse = errors.New("invalid request: a message with neither method nor id")

// Decode decodes one JSON-RPC message with the rules of the SDK's
// jsonrpc.DecodeMessage (exact-case keys, version "2.0", nesting at most
// 1000, a message without a method is a response and needs an id) and the
// same parser, but parses data in place: the SDK's version copies every
// message into a fresh 32 KiB decoder buffer first, which for small calls
// is most of the cost of decoding them. data may be reused afterwards.
func Decode(data []byte) (jsonrpc.Message, error) {
	m, err := parse(data)
	if err != nil {
		return nil, err
	}
	return m.decoded()
}

// decoded is the message m parsed, its id interpreted as Decode does.
func (m *wireMessage) decoded() (jsonrpc.Message, error) {
	var v any
	if len(m.ID) > 0 {
		if _, err := segjson.Parse(m.ID, &v, segjson.DontMatchCaseInsensitiveStructFields); err != nil {
			return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
		}
	}
	id, err := jsonrpc.MakeID(v)
	if err != nil {
		return nil, err
	}
	return m.message(id)
}

// decodeCall is Decode for the transport's reading side: a request with an
// id (a call) is returned with the id as it was written (a string, or a
// number literal of any size or precision), for the transport to echo back
// byte for byte, and a placeholder in its ID that the transport replaces.
// Every other message is decoded as Decode does.
func decodeCall(data []byte) (jsonrpc.Message, json.RawMessage, error) {
	m, err := parse(data)
	if err != nil {
		return nil, nil, err
	}
	if len(m.Method) > 0 && isNumber(m.ID) && !isID(m.ID) {
		return nil, nil, errIDNotInteger // the SDK would answer it under another id
	}
	if len(m.Method) == 0 || !isID(m.ID) {
		msg, err := m.decoded() // parsed once: a relayed page's result is most of the line
		return msg, nil, err
	}
	msg, err := m.message(placeholderID)
	return msg, m.ID, err
}

// placeholderID stands in for a call's id until the transport gives it one.
var placeholderID, _ = jsonrpc.MakeID("")

// errIDNotInteger refuses a call whose id is a number with a fraction: an
// MCP request id is a string or an integer.
var errIDNotInteger = errors.New("invalid request: the id must be a string or an integer")

// isID reports whether raw is an id a call may carry: a string or an
// integer, of any size and however written.
func isID(raw json.RawMessage) bool {
	return len(raw) > 0 && (raw[0] == '"' || isNumber(raw) && isInteger(raw))
}

// isNumber reports whether raw, valid JSON, is a number.
func isNumber(raw json.RawMessage) bool {
	return len(raw) > 0 && (raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9')
}

// isInteger reports whether the JSON number num has an integer value (12,
// -0, 2.0, 1e3 and 150e-1 have; 1.5 and 15e-1 have not), from its digits
// and exponent, without computing the value.
func isInteger(num []byte) bool {
	if bytes.IndexAny(num, ".eE") < 0 {
		return true // digits alone: every call's id but a few
	}
	mant, exp, _ := bytes.Cut(bytes.ToLower(num), []byte("e"))
	whole, frac, _ := bytes.Cut(bytes.TrimPrefix(mant, []byte("-")), []byte("."))
	digits := bytes.TrimRight(append(whole, frac...), "0")
	if len(bytes.Trim(digits, "0")) == 0 {
		return true // zero
	}
	zeros := len(whole) + len(frac) - len(digits) // trailing zeros of the digits
	e, err := strconv.Atoi(string(exp))
	switch {
	case len(exp) == 0:
		e = 0
	case err != nil: // an exponent past int: only its sign matters
		return exp[0] != '-'
	}
	return e-len(frac)+zeros >= 0
}

// parse parses data as a JSON-RPC 2.0 message without interpreting its id.
func parse(data []byte) (*wireMessage, error) {
	if err := checkDepth(data); err != nil {
		return nil, err
	}
	m := new(wireMessage)
	rest, err := segjson.Parse(data, m, segjson.DontMatchCaseInsensitiveStructFields)
	if err != nil {
		return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
	}
	for _, c := range rest {
		if c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			return nil, errors.New("unmarshaling jsonrpc message: data after the message")
		}
	}
	if m.Version != "2.0" {
		return nil, fmt.Errorf("invalid message version tag %q; expected %q", m.Version, "2.0")
	}
	return m, nil
}

// message is m as a request (it has a method) or a response, with id.
func (m *wireMessage) message(id jsonrpc.ID) (jsonrpc.Message, error) {
	if len(m.Method) > 0 {
		var method string
		if _, err := segjson.Parse(m.Method, &method, segjson.DontMatchCaseInsensitiveStructFields); err != nil {
			return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
		}
		return &jsonrpc.Request{ID: id, Method: method, Params: m.Params}, nil
	}
	if !id.IsValid() {
		return nil, errNotResponse
	}
	resp := &jsonrpc.Response{ID: id, Result: m.Result}
	if m.Error != nil {
		resp.Error = m.Error
	}
	return resp, nil
}

// checkDepth refuses data nested deeper than maxDepth. Strings, which
// hold most of a message's bytes (a page's text), are crossed a quote at
// a time with bytes.IndexByte rather than a byte at a time.
func checkDepth(data []byte) error {
	depth := 0
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case '"':
			i = jsonstr.End(data, i+1)
		case '{', '[':
			if depth++; depth > maxDepth {
				return fmt.Errorf("json: exceeded maximum nesting depth of %d", maxDepth)
			}
		case '}', ']':
			depth--
		}
	}
	return nil
}
