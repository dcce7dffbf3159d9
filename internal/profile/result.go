package profile

import (
	"bytes"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fsmcp/fsmcp/internal/jsonstr"
)

// textResult is a tool result of one text content and structured content
// given as JSON bytes, the shape of every fsmcp result. It encodes to the
// very bytes go-sdk v1.8.0 writes for the *mcp.CallToolResult it embeds,
// with less work: the SDK marshals the result through encoding/json, which
// compacts the output of each MarshalJSON on the way (the text content's,
// the structured content's, the result's own), so a page whose bytes
// appear twice, once as structuredContent and once escaped as the text, is
// scanned several times over. textResult encodes the text once, copies the
// structured bytes (HTML-escaped, as the SDK's pass leaves them), and lets
// the SDK write everything else: the embedded result without its content,
// whose "content":null it replaces.
//
// It embeds the *mcp.CallToolResult, so the SDK still sets the result type
// and _meta on it after the handler returns (it does so through methods
// the embedding promotes), and those are written as the SDK writes them.
//
// Served by Run, it goes further: its bytes go to raw, and what the SDK
// marshals is a token for them (see rawResults).
type textResult struct {
	*mcp.CallToolResult
	raw *rawResults // nil: MarshalJSON returns the bytes themselves
}

// asTextResult returns res as a textResult when it has the shape
// textResult encodes, else res itself. raw is Run's, or nil.
func asTextResult(res mcp.Result, raw *rawResults) mcp.Result {
	r, ok := res.(*mcp.CallToolResult)
	if !ok || r == nil || len(r.Content) != 1 || r.InputRequests != nil || r.NeedsInput() {
		return res
	}
	if tc, ok := r.Content[0].(*mcp.TextContent); !ok || tc.Meta != nil || tc.Annotations != nil {
		return res
	}
	switch r.StructuredContent.(type) {
	case nil, json.RawMessage:
		return &textResult{r, raw}
	}
	return res
}

// contentNull is where the content goes in the encoded skeleton.
var contentNull = []byte(`"content":null`)

func (r *textResult) MarshalJSON() ([]byte, error) {
	b, err := r.encode()
	if err != nil || r.raw == nil {
		return b, err
	}
	return r.raw.put(b), nil
}

func (r *textResult) encode() ([]byte, error) {
	x := r.CallToolResult
	skeleton := *x
	skeleton.Content, skeleton.StructuredContent = nil, nil
	s, err := skeleton.MarshalJSON()
	if err != nil {
		return nil, err
	}
	at := bytes.Index(s, contentNull)
	if at < 0 || bytes.Count(s, contentNull) != 1 {
		return x.MarshalJSON() // a _meta spelling the same key: not worth telling apart
	}
	text, err := json.Marshal(x.Content[0].(*mcp.TextContent).Text)
	if err != nil {
		return nil, err
	}
	structured, _ := x.StructuredContent.(json.RawMessage)
	b := make([]byte, 0, len(s)+len(text)+len(structured)+64)
	b = append(b, s[:at]...)
	b = append(b, `"content":[{"type":"text","text":`...)
	b = append(b, text...)
	b = append(b, "}]"...)
	if structured != nil {
		b = append(b, `,"structuredContent":`...)
		if b, err = appendCompactHTML(b, structured); err != nil {
			return nil, err
		}
	}
	return append(b, s[at+len(contentNull):]...), nil
}

// appendCompactHTML appends raw to b as encoding/json's Marshal writes a
// json.RawMessage: without insignificant white space, and with <, >, &,
// U+2028 and U+2029 escaped. Bytes that need neither (an fsmcp page, as it
// is rendered) are copied in one pass.
func appendCompactHTML(b, raw []byte) ([]byte, error) {
	compact, plain := scanRaw(raw)
	if compact && plain {
		return append(b, raw...), nil
	}
	if !compact {
		var c bytes.Buffer
		if err := json.Compact(&c, raw); err != nil {
			return nil, err
		}
		raw = c.Bytes()
	}
	var e bytes.Buffer
	json.HTMLEscape(&e, raw)
	return append(b, e.Bytes()...), nil
}

// scanRaw reports whether raw has no white space outside its strings, and
// whether it has none of the characters Marshal escapes for HTML. raw is
// valid JSON; its strings, most of a page, are skipped to their closing
// quote with bytes.IndexByte rather than byte by byte.
func scanRaw(raw []byte) (compact, plain bool) {
	plain = bytes.IndexByte(raw, '<') < 0 && bytes.IndexByte(raw, '>') < 0 && bytes.IndexByte(raw, '&') < 0
	for i := 0; plain; {
		j := bytes.IndexByte(raw[i:], 0xE2)
		if j < 0 {
			break
		}
		i += j
		if i+2 < len(raw) && raw[i+1] == 0x80 && raw[i+2]&^1 == 0xA8 {
			plain = false
		}
		i++
	}
	for i := 0; i < len(raw); {
		q := bytes.IndexByte(raw[i:], '"')
		if q < 0 {
			q = len(raw) - i
		}
		if bytes.ContainsAny(raw[i:i+q], " \t\n\r") {
			return false, plain
		}
		if i += q + 1; i > len(raw) {
			break // no string: the end
		}
		end := jsonstr.End(raw, i)
		if end == len(raw) {
			return true, plain // unterminated: left to encoding/json to refuse
		}
		i = end + 1
	}
	return true, plain
}
