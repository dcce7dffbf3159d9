package profile

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// textResults are tool results of the shape textResult encodes, with what
// its short cuts must get right: HTML characters and U+2028 in the text
// and in the structured bytes, white space in structured bytes, invalid
// UTF-8 in the text, a tool error, no structured content, a _meta of its
// own.
var textResults = []func() *mcp.CallToolResult{
	func() *mcp.CallToolResult {
		return page(`{"items":[{"byte_offset":0,"text":"plain\n"}],"next_cursor":null}`)
	},
	func() *mcp.CallToolResult {
		return page(`{"items":[{"text":"<a href=\"x\">&amp;</a> \u2028 \\u003c` + "\u2028\u2029" + `"}],"next_cursor":"c.1"}`)
	},
	func() *mcp.CallToolResult {
		return page("{ \"items\" : [ 1, {\"a\":\"b  c\"} ],\n\t\"next_cursor\" : null }")
	},
	func() *mcp.CallToolResult { return page("{\"items\":[\"<\"], \"x\":1}") },
	func() *mcp.CallToolResult {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "path is not a readable regular file"}}}
	},
	func() *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "bad \xff utf-8 <x>"}}}
	},
	func() *mcp.CallToolResult {
		r := page(`{"items":[],"next_cursor":null}`)
		r.Meta = mcp.Meta{"io.example/tag": map[string]any{"content": nil, "n": 1}}
		return r
	},
	func() *mcp.CallToolResult {
		r := page(`{"items":[],"next_cursor":null}`)
		r.Meta = mcp.Meta{"io.example/tag": "a \"content\":null in a string"}
		return r
	},
}

func page(structured string) *mcp.CallToolResult {
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: structured}},
		StructuredContent: json.RawMessage(structured),
	}
}

// TestTextResultSameBytes serves textResults from go-sdk servers over the
// jsonl transport: one handing them to the SDK as they are, one through
// Refuse (which makes them textResults), one through Run (the bytes
// textResult filed in place of its token, and from the second call on the
// direct path, which encodes them itself), and compares the response lines
// byte for byte: result type, _meta and field order are the SDK's own.
// Each result is asked for twice, so every one is answered on the direct
// path at least once.
func TestTextResultSameBytes(t *testing.T) {
	results := append(append([]func() *mcp.CallToolResult{}, textResults...), otherResults...)
	sdk := newLineServer(t, plainSDK, results)
	ours := map[string]*lineServer{"textResult": newLineServer(t, sdkPath, results), "Run": newLineServer(t, withDirect, results)}
	id := 0
	for round := range 2 {
		for i := range results {
			id++
			line := call(id, fmt.Sprintf(`{"_meta":{`+claim+`,`+caps+`},"name":"t","arguments":{"i":%d}}`, i))
			sdk.send(line)
			want := sdk.answer()
			for name, ls := range ours {
				ls.send(line)
				got := ls.answer()
				if got != want {
					t.Errorf("%s, round %d, result %d:\n got %s\nwant %s", name, round, i, got, want)
				}
				if !strings.Contains(got, `"resultType":"complete"`) || !strings.Contains(got, `"io.modelcontextprotocol/serverInfo"`) {
					t.Errorf("%s, result %d lacks the SDK's result type or server info: %s", name, i, got)
				}
			}
		}
	}
	// The first call vouched for the _meta; every later one went direct.
	if got, want := int(ours["Run"].direct.Load()), 2*len(results)-1; got != want {
		t.Errorf("%d calls served on the direct path, want %d", got, want)
	}
}

// otherResults are results of shapes textResult leaves to encoding/json:
// no content (the SDK writes []), two contents, structured content as a
// map, a serverInfo of the tool's own.
var otherResults = []func() *mcp.CallToolResult{
	func() *mcp.CallToolResult {
		return &mcp.CallToolResult{StructuredContent: json.RawMessage(`{"a":"<b>"}`)}
	},
	func() *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "a"}, &mcp.TextContent{Text: "<b>"}}}
	},
	func() *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "{}"}}, StructuredContent: map[string]any{"x": "&"}}
	},
	func() *mcp.CallToolResult {
		r := page(`{"items":[],"next_cursor":null}`)
		r.Meta = mcp.Meta{"io.modelcontextprotocol/serverInfo": map[string]any{"name": "its own"}}
		return r
	},
}

// The results fsmcp's tools give take the short cut; others are left to
// the SDK.
func TestAsTextResult(t *testing.T) {
	for i, f := range textResults {
		if _, ok := asTextResult(f(), nil).(*textResult); !ok {
			t.Errorf("result %d: not a textResult", i)
		}
	}
	for name, r := range map[string]*mcp.CallToolResult{
		"no content":          {StructuredContent: json.RawMessage(`{}`)},
		"two contents":        {Content: []mcp.Content{&mcp.TextContent{Text: "a"}, &mcp.TextContent{Text: "b"}}},
		"an image":            {Content: []mcp.Content{&mcp.ImageContent{Data: []byte("x"), MIMEType: "image/png"}}},
		"annotated text":      {Content: []mcp.Content{&mcp.TextContent{Text: "a", Annotations: &mcp.Annotations{Priority: 1}}}},
		"structured as a map": {Content: []mcp.Content{&mcp.TextContent{Text: "{}"}}, StructuredContent: map[string]any{}},
	} {
		if _, ok := asTextResult(r, nil).(*textResult); ok {
			t.Errorf("%s: a textResult", name)
		}
	}
}

// BenchmarkTextResult: encoding a 1-chunk read page as the SDK's transport
// does (encoding/json, HTML escaping off), as the *mcp.CallToolResult, as a
// textResult, and as one served by Run (the bytes filed for the transport,
// a token through encoding/json).
func BenchmarkTextResult(b *testing.B) {
	body, _ := json.Marshal(strings.Repeat("0123456789abcdef fsmcp one-chunk page line\n", 24)[:1000] + "\n")
	r := page(`{"items":[{"byte_offset":0,"text":` + string(body) + `}],"next_cursor":null,"content_hash":"sha256:3857609817191af03d5338ffddd3a25aaaddf153ddd2f3ffc95fcc2cbc7c9a94"}`)
	r.Meta = mcp.Meta{"io.modelcontextprotocol/serverInfo": &mcp.Implementation{Name: "fsmcp-worker", Version: "0.2.0"}}
	for _, c := range []struct {
		name string
		v    any
	}{{"sdk", r}, {"textResult", asTextResult(r, nil)}, {"Run", asTextResult(r, &rawResults{})}} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				var buf strings.Builder
				e := json.NewEncoder(&buf)
				e.SetEscapeHTML(false)
				if err := e.Encode(c.v); err != nil {
					b.Fatal(err)
				}
				if t, ok := c.v.(*textResult); ok && t.raw != nil {
					if _, ok := t.raw.take([]byte(strings.TrimSpace(buf.String()))); !ok {
						b.Fatalf("no bytes filed under %q", buf.String())
					}
				}
			}
		})
	}
}

// scanRawByByte is scanRaw as a plain state machine, the reference.
func scanRawByByte(raw []byte) (compact, plain bool) {
	compact, plain = true, true
	inString, escaped := false, false
	for i, c := range raw {
		if c == '<' || c == '>' || c == '&' || c == 0xE2 && i+2 < len(raw) && raw[i+1] == 0x80 && raw[i+2]&^1 == 0xA8 {
			plain = false
		}
		switch {
		case inString && escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case inString:
			inString = c != '"'
		case c == '"':
			inString = true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			compact = false
		}
	}
	return compact, plain
}

func TestScanRaw(t *testing.T) {
	cases := []string{
		`{}`, `{"a":"b c"}`, `{"a": "b"}`, "{\"a\":\"b\"}\n", `["a\"",1]`, `["a\\", 1]`, `["a\\\"b", 1]`,
		`["a\\\\"," "]`, `{"t":"<x>"}`, `{"t":"&"}`, "{\"t\":\"\u2028\"}", "{\"t\":\"\u2029\"}", "{\"t\":\"\u2027 \u202a\"}",
		"[\"\xe2\x80\"]", `[1, 2]`, "[1,\t2]", `["\\"]`, `[""," "]`, `"x"`, `" "`, `  1`,
	}
	for _, c := range cases {
		gc, gp := scanRaw([]byte(c))
		wc, wp := scanRawByByte([]byte(c))
		if gc != wc || gp != wp {
			t.Errorf("scanRaw(%q) = %v, %v; want %v, %v", c, gc, gp, wc, wp)
		}
	}
}
