package profile

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// textResults are tool results of the shape of fsmcp's, one text content
// and structured content as JSON bytes, with what an encoding of them must
// get right: HTML characters and U+2028 in the text and in the structured
// bytes, white space in structured bytes, invalid UTF-8 in the text, a
// tool error, no structured content, a _meta of its own.
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

// TestSameBytes serves textResults and otherResults from go-sdk servers
// over the jsonl transport: one handing them to the SDK as they are, one
// through the profile's middleware, one through Run (from the second call
// on the direct path, which encodes them itself), and compares the
// response lines byte for byte: result type, _meta and field order are the
// SDK's own. Each result is asked for twice, so every one is answered on
// the direct path at least once.
func TestSameBytes(t *testing.T) {
	results := append(append([]func() *mcp.CallToolResult{}, textResults...), otherResults...)
	sdk := newLineServer(t, plainSDK, results)
	ours := map[string]*lineServer{"profile": newLineServer(t, sdkPath, results), "Run": newLineServer(t, withDirect, results)}
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

// otherResults are results of other shapes: no content (the SDK writes []), two contents, structured content as a
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
