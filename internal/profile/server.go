package profile

import (
	"context"
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

// Run serves s on t, wrapped by Transport, until ctx is done or the peer
// leaves, as s.MCP.Run does; calls the direct path takes (see directConn)
// never reach the SDK.
func Run(ctx context.Context, s *Server, t mcp.Transport) error {
	return s.MCP.Run(ctx, &directTransport{inner: Transport(t), s: s})
}

// Connect is s.MCP.Connect(ctx, t, nil) with the direct path, as Run, for
// a transport that is not to check the protocol claim (the supervisor's
// call channel, whose front checked it; the direct path takes only calls
// that name Version).
func Connect(ctx context.Context, s *Server, t mcp.Transport) (*mcp.ServerSession, error) {
	return s.MCP.Connect(ctx, &directTransport{inner: t, s: s}, nil)
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
// to _meta unless the tool set one, an absent content written as [], all
// encoded as the SDK's JSON-RPC layer encodes a result. That layer's
// Encoder does not escape HTML, but the result's own MarshalJSON has
// escaped it, so json.Marshal gives the same bytes.
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
	return json.Marshal(&out)
}
