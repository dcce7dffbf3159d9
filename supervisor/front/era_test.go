package front

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestLegacyResult: a 2025 host gets a worker's result without resultType
// and without serverInfo, whichever way the result is spelled, and every
// other member as it came.
func TestLegacyResult(t *testing.T) {
	const info = `{"name":"fsmcp-worker","version":"1"}`
	tests := []struct{ name, in, want string }{
		{"the worker's spelling", `{"_meta":{"io.modelcontextprotocol/serverInfo":` + info + `},"content":[{"type":"text","text":"{}"}],"structuredContent":{"a":"}"},"resultType":"complete"}`,
			`{"content":[{"type":"text","text":"{}"}],"structuredContent":{"a":"}"}}`},
		{"a tool error", `{"_meta":{"io.modelcontextprotocol/serverInfo":` + info + `},"content":[{"type":"text","text":"no"}],"isError":true,"resultType":"complete"}`,
			`{"content":[{"type":"text","text":"no"}],"isError":true}`},
		{"other _meta kept", `{"_meta":{"io.modelcontextprotocol/serverInfo":` + info + `,"k":1},"content":[],"resultType":"complete"}`,
			`{"_meta":{"k":1},"content":[]}`},
		{"members in another order", `{"resultType":"complete","content":[],"_meta":{"io.modelcontextprotocol/serverInfo":` + info + `}}`,
			`{"content":[]}`},
		{"spaced", `{ "_meta" : { "io.modelcontextprotocol/serverInfo" : {} } , "content" : [ ] , "resultType" : "complete" }`,
			`{"content":[ ]}`},
		{"nothing to cut", `{"content":[]}`, `{"content":[]}`},
		{"the members only in text", `{"content":[{"type":"text","text":"\"resultType\":\"complete\""}]}`, `{"content":[{"type":"text","text":"\"resultType\":\"complete\""}]}`},
		{"an escaped key, passed on", `{"content":[],"result\u0054ype":"complete"}`, `{"content":[],"result\u0054ype":"complete"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(legacyResult(json.RawMessage(tt.in)))
			if got != tt.want {
				t.Errorf("legacyResult\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

// FuzzLegacyResult: legacyResult of a result the worker could write
// decodes to the result without resultType and serverInfo.
func FuzzLegacyResult(f *testing.F) {
	f.Add(`{"x":"<&>"}`, "text \"quoted\" }", true)
	f.Add(`null`, "", false)
	f.Fuzz(func(t *testing.T, structured, text string, isError bool) {
		if !json.Valid([]byte(structured)) {
			return
		}
		res := &mcp.CallToolResult{Meta: mcp.Meta{mcp.MetaKeyServerInfo: &mcp.Implementation{Name: "w", Version: text}}, Content: []mcp.Content{&mcp.TextContent{Text: text}}, StructuredContent: json.RawMessage(structured), IsError: isError}
		in, err := json.Marshal(res)
		if err != nil {
			return
		}
		var want map[string]any
		if err := json.Unmarshal(in, &want); err != nil {
			t.Fatal(err)
		}
		delete(want, "_meta")
		delete(want, "resultType")
		var got map[string]any
		if err := json.Unmarshal(legacyResult(in), &got); err != nil {
			t.Fatalf("legacyResult(%s): %v", in, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("legacyResult(%s) = %v, want %v", in, got, want)
		}
	})
}

// TestToolErrorResult: the front's own tool errors are spelled as the
// SDK spells a tool error for each era.
func TestToolErrorResult(t *testing.T) {
	s, err := New(&mcp.Implementation{Name: "fsmcp-supervisor", Version: "v1"}, nil, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		modern bool
		want   string
	}{
		{true, `{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"fsmcp-supervisor","version":"v1"}},"content":[{"type":"text","text":"root a \u003cb\u003e: \"late\""}],"isError":true,"resultType":"complete"}`},
		{false, `{"content":[{"type":"text","text":"root a \u003cb\u003e: \"late\""}],"isError":true}`},
	} {
		if got := string(s.toolErrorResult(`root a <b>: "late"`, tt.modern)); got != tt.want {
			t.Errorf("modern %v:\n got %s\nwant %s", tt.modern, got, tt.want)
		}
	}
}
