// Package profile pins an MCP server to the one protocol revision fsmcp
// speaks, 2026-07-28, to the tools capability alone, and to the wire
// contract's protocol errors.
//
// go-sdk v1.8.0 narrows server/discover with
// ServerOptions.SupportedProtocolVersions, but it still answers a legacy
// initialize (with 2025-11-25), advertises logging by default, answers a
// call without the protocol's _meta claim with error code 0, and spells
// its own unknown-tool error. Options, Refuse and Transport close those
// gaps; both the worker and the supervisor's front server use them so the
// two binaries present the same profile.
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

// Options returns server options restricted to the profile: only Version is
// supported, only the tools capability is advertised, and every cacheable
// result (server/discover, tools/list) is private with a ttl of 0, since
// what a server offers depends on its root and mask.
func Options(instructions string) *mcp.ServerOptions {
	return &mcp.ServerOptions{
		Instructions:              instructions,
		SupportedProtocolVersions: []string{Version},
		Capabilities:              &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}},
		SetCacheable: func(_ context.Context, _ mcp.Request, c *mcp.Cacheable) {
			c.CacheScope = "private"
			c.TTLMs = 0
		},
	}
}

// New builds a server with Options (instructions defaults to Instructions)
// and Refuse installed. Serve it on a transport wrapped by Transport.
func New(impl *mcp.Implementation, instructions string) *mcp.Server {
	if instructions == "" {
		instructions = Instructions
	}
	s := mcp.NewServer(impl, Options(instructions))
	s.AddReceivingMiddleware(Refuse)
	return s
}

// Refuse is receiving middleware that
//   - answers the legacy initialize handshake (and its initialized
//     notification) with the unsupported-protocol-version error naming
//     Version, leaving the session open, so a client that retries with
//     server/discover is served;
//   - refuses a tools/call whose arguments are present but not a JSON
//     object (null counts as absent) with JSON-RPC -32602, before any
//     tool sees them;
//   - spells the unknown-tool error "Tool <name> not found" (-32602);
//   - hands a tool result of one text and JSON structured content to the
//     SDK as a textResult, which encodes to the same bytes for less work.
func Refuse(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "initialize":
			requested := ""
			if p, ok := req.GetParams().(*mcp.InitializeParams); ok && p != nil {
				requested = p.ProtocolVersion
			}
			data, _ := json.Marshal(mcp.UnsupportedProtocolVersionData{
				Supported: []string{Version},
				Requested: requested,
			})
			return nil, &jsonrpc.Error{
				Code:    CodeUnsupportedProtocolVersion,
				Message: "Unsupported protocol version: this server implements " + Version + " only (use server/discover)",
				Data:    data,
			}
		case "notifications/initialized":
			return nil, nil
		case "tools/call":
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
			return asTextResult(res, rawFrom(ctx)), nil
		}
		return next(ctx, method, req)
	}
}

// isObjectOrAbsent reports whether tool arguments are a JSON object, or
// absent: missing, or null as go-sdk's own client sends for nil arguments.
func isObjectOrAbsent(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || raw[0] == '{' || string(raw) == "null"
}
