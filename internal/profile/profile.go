// Package profile pins an MCP server to the protocol revisions fsmcp
// serves, to the tools capability alone, and to the protocol errors of
// docs/reference.md, Protocol answers. The worker serves 2026-07-28 alone;
// the supervisor's front serves the 2025 revisions of the initialize
// handshake as well (Config.Versions), through the go-sdk's own support for
// both eras.
//
// go-sdk v1.8.0 narrows server/discover with
// ServerOptions.SupportedProtocolVersions, but it still answers a legacy
// initialize (with 2025-11-25) when no 2025 revision is listed, advertises
// logging by default, answers a call without the protocol's _meta claim
// and outside an initialized session with error code 0, and spells its
// own unknown-tool error. Options, the middleware of New and Transport
// close those gaps; both the worker and the supervisor's front server use
// them so the two binaries present the same profile.
package profile

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Version is the only protocol revision served.
const Version = "2026-07-28"

// CodeUnsupportedProtocolVersion is the JSON-RPC error code for a request at
// a protocol version this server does not implement.
const CodeUnsupportedProtocolVersion = mcp.CodeUnsupportedProtocolVersion

// Instructions is what server/discover tells a client (and the model
// behind it) about every fsmcp server, when the caller of New gives none.
const Instructions = "Each tool works on one root directory: every path is relative to that root, " +
	"and nothing outside it can be named. Results reflect the files as they are when the call runs. " +
	"A paged result carries next_cursor: pass it back unchanged until it is null to get the rest; " +
	"a cursor fails once the files it covers have changed, and the traversal must then start again without one."

// OptionsFor returns server options restricted to the profile serving c's
// revisions, with c's instructions as given: only the tools capability is
// advertised, and every cacheable result (server/discover, tools/list) is
// private with a ttl of 0, since what a server offers depends on its root
// and mask.
func OptionsFor(c Config) *mcp.ServerOptions {
	return &mcp.ServerOptions{
		Instructions:              c.Instructions,
		SupportedProtocolVersions: c.versions(),
		Capabilities:              &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}},
		SetCacheable: func(_ context.Context, _ mcp.Request, c *mcp.Cacheable) {
			c.CacheScope = "private"
			c.TTLMs = 0
		},
	}
}

// New builds a server serving Version alone (instructions defaults to
// Instructions). Serve it on a transport wrapped by Transport.
func New(impl *mcp.Implementation, instructions string) *mcp.Server {
	return NewFor(impl, Config{Instructions: instructions})
}

// NewFor builds a server of the profile serving c, with OptionsFor and the
// profile's middleware (see refuse) installed. Serve it on a transport
// wrapped by TransportFor with the same c.
func NewFor(impl *mcp.Implementation, c Config) *mcp.Server {
	if c.Instructions == "" {
		c.Instructions = Instructions
	}
	s := mcp.NewServer(impl, OptionsFor(c))
	s.AddReceivingMiddleware(refuse(c))
	return s
}

// refuse is receiving middleware that
//   - where c serves no revision of the initialize handshake, answers it
//     (and swallows its initialized notification) with the
//     unsupported-protocol-version error naming c's revisions and c's
//     hint, leaving the session open, so a client that retries with
//     server/discover is served;
//   - refuses an initialize on a connection that has begun with -32600;
//   - refuses a tools/call whose arguments are present but not a JSON
//     object (null counts as absent) with JSON-RPC -32602, before any
//     tool sees them;
//   - spells the unknown-tool error "Tool <name> not found" (-32602).
func refuse(c Config) mcp.Middleware {
	legacy := c.legacy()
	refusal := "Unsupported protocol version: this server implements " + strings.Join(c.versions(), ", ") +
		" only, each request naming it in _meta (server/discover first); " + c.hint()
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			switch {
			case method == "initialize" && !legacy:
				requested := ""
				if p, ok := req.GetParams().(*mcp.InitializeParams); ok && p != nil {
					requested = p.ProtocolVersion
				}
				data, _ := json.Marshal(mcp.UnsupportedProtocolVersionData{
					Supported: c.versions(),
					Requested: requested,
				})
				return nil, &jsonrpc.Error{Code: CodeUnsupportedProtocolVersion, Message: refusal, Data: data}
			case method == "notifications/initialized" && !legacy:
				return nil, nil
			case method == "initialize" && begun(req):
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: alreadyBegun}
			}
			return callTool(ctx, next, method, req)
		}
	}
}

// alreadyBegun refuses an initialize on a connection that has begun: go-sdk
// answers it with code 0.
const alreadyBegun = "Invalid request: this connection has begun already, with an initialize or a request naming " + Version + " in _meta; a connection begins once"

// begun reports whether req's session has begun, by an initialize or a
// request of the 2026-07-28 era.
func begun(req mcp.Request) bool {
	ss, ok := req.GetSession().(*mcp.ServerSession)
	return ok && ss != nil && ss.InitializeParams() != nil
}

// callTool is next, with the profile's own checks and spellings for
// tools/call.
func callTool(ctx context.Context, next mcp.MethodHandler, method string, req mcp.Request) (mcp.Result, error) {
	if method != "tools/call" {
		return next(ctx, method, req)
	}
	p, _ := req.GetParams().(*mcp.CallToolParamsRaw)
	if p != nil && !isObjectOrAbsent(p.Arguments) {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Invalid params: arguments must be a JSON object"}
	}
	res, err := next(ctx, method, req)
	var we *jsonrpc.Error
	if p != nil && errors.As(err, &we) && we.Code == jsonrpc.CodeInvalidParams && strings.HasPrefix(we.Message, "unknown tool ") {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Tool " + p.Name + " not found"}
	}
	if err != nil {
		return res, err
	}
	if p != nil && p.Meta[metaProtocolVersion] == Version {
		res = completed(res)
	}
	return res, nil
}

// completed is res, a tools/call result for a request of the 2026-07-28
// era, with its result type "complete" set. go-sdk sets it only where the
// session began in that era, not for such a request in a session an
// initialize began.
func completed(res mcp.Result) mcp.Result {
	r, ok := res.(*mcp.CallToolResult)
	if !ok || r == nil || r.InputRequests != nil || r.NeedsInput() {
		return res
	}
	out := complete
	out.Meta, out.Content, out.StructuredContent, out.IsError = r.Meta, r.Content, r.StructuredContent, r.IsError
	return &out
}

// isObjectOrAbsent reports whether tool arguments are a JSON object, or
// absent: missing, or null as go-sdk's own client sends for nil arguments.
func isObjectOrAbsent(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || raw[0] == '{' || string(raw) == "null"
}
