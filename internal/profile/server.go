package profile

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Server is a server of the profile together with the tools it serves on
// its direct path (see Run): a tools/call for one of them is handled
// without the SDK's request handling, and answered with the bytes the SDK
// would have written.
type Server struct {
	MCP   *mcp.Server
	impl  *mcp.Implementation
	tools map[string]mcp.ToolHandler
}

// NewServer is New, as a Server with no direct tools yet.
func NewServer(impl *mcp.Implementation, instructions string) *Server {
	return &Server{MCP: New(impl, instructions), impl: impl, tools: map[string]mcp.ToolHandler{}}
}

// AddTool adds t, served by h, to the server and to its direct path; call
// it before the server is served. On the direct path h gets a request
// holding Params.Name and Params.Arguments only (no Session, no _meta), and
// its result must not ask for input: fsmcp's handlers need nothing more and
// never do.
func (s *Server) AddTool(t *mcp.Tool, h mcp.ToolHandler) {
	s.MCP.AddTool(t, h)
	s.tools[t.Name] = h
}

// complete is a result whose (unexported) result type is "complete", as
// the SDK sets it on every result of the profile: a copy carries it.
var complete = func() mcp.CallToolResult {
	var r mcp.CallToolResult
	if err := json.Unmarshal([]byte(`{"content":[],"resultType":"complete"}`), &r); err != nil {
		panic(fmt.Sprintf("profile: a complete result: %v", err))
	}
	return r
}()

// encode is the result bytes the SDK writes for a tools/call of the
// profile that h answered with res: the result type set, serverInfo added
// to _meta unless the tool set one, an absent content written as [], and
// the shape every fsmcp result has encoded as textResult encodes it.
func (s *Server) encode(res *mcp.CallToolResult) ([]byte, error) {
	out := complete
	out.Meta, out.Content, out.StructuredContent, out.IsError = res.Meta, res.Content, res.StructuredContent, res.IsError
	if out.Content == nil {
		out.Content = []mcp.Content{}
	}
	if out.Meta == nil {
		out.Meta = mcp.Meta{}
	}
	if _, ok := out.Meta[mcp.MetaKeyServerInfo]; !ok {
		out.Meta[mcp.MetaKeyServerInfo] = s.impl
	}
	if tr, ok := asTextResult(&out, nil).(*textResult); ok {
		return tr.encode()
	}
	// As the SDK's JSON-RPC layer encodes a result: an Encoder that does
	// not escape HTML (the result's own MarshalJSON has), no newline.
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&out); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}
