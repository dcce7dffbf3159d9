package jsonl

import (
	"encoding/json"
	"errors"
	"fmt"

	segjson "github.com/segmentio/encoding/json"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// wireMessage is the decode form of any JSON-RPC message. Method is raw so
// a present-but-empty method still makes a request.
type wireMessage struct {
	Version string          `json:"jsonrpc"`
	ID      any             `json:"id,omitempty"`
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
	if err := checkDepth(data); err != nil {
		return nil, err
	}
	var m wireMessage
	rest, err := segjson.Parse(data, &m, segjson.DontMatchCaseInsensitiveStructFields)
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
	id, err := jsonrpc.MakeID(m.ID)
	if err != nil {
		return nil, err
	}
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

// checkDepth refuses data nested deeper than maxDepth.
func checkDepth(data []byte) error {
	depth, inString, escaped := 0, false, false
	for _, b := range data {
		if inString {
			switch {
			case escaped:
				escaped = false
			case b == '\\':
				escaped = true
			case b == '"':
				inString = false
			}
			continue
		}
		switch b {
		case '"':
			inString = true
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
