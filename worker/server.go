package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/fsmcp/fsmcp/worker/profile"
	"github.com/fsmcp/fsmcp/worker/toolset"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ServerOptions configure NewServer.
type ServerOptions struct {
	// Implementation names the server in server/discover; default
	// fsmcp-worker at the module's version.
	Implementation *mcp.Implementation
}

// NewServer builds the MCP server for an opened root: the tools of the
// root's mask, the 2026-07-28 profile, and nothing else.
func NewServer(r *Root, o *ServerOptions) *mcp.Server {
	impl := &mcp.Implementation{Name: "fsmcp-worker", Version: Version()}
	if o != nil && o.Implementation != nil {
		impl = o.Implementation
	}
	s := profile.New(impl, "")
	for _, t := range r.tools() {
		if r.mask.Has(t.tool.Name) {
			s.AddTool(t.tool, t.handler)
		}
	}
	return s
}

type toolDef struct {
	tool    *mcp.Tool
	handler mcp.ToolHandler
}

var privateMeta = mcp.Meta{"io.modelcontextprotocol/cacheScope": "private"}

func readOnly() *mcp.ToolAnnotations {
	f := false
	return &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &f}
}

func (r *Root) tools() []toolDef {
	f, t := false, true
	return []toolDef{
		{&mcp.Tool{
			Name:        toolset.ListDirectory,
			Description: "List the served entries directly under a directory of the root (path \"\" is the root), sorted by path. A directory is listed only when it holds a served file. Follow next_cursor until it is null.",
			InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false,"properties":{` +
				`"path":{"type":"string","description":"Relative directory; empty or . for the root."},` + pagingProps + `}}`),
			OutputSchema: pageSchema(`{"type":"object","properties":{"path":{"type":"string"},"type":{"type":"string","enum":["file","directory"]}},"required":["path","type"]}`),
			Annotations:  readOnly(),
			Meta:         privateMeta,
		}, typed(r.listDirectory)},
		{&mcp.Tool{
			Name:        toolset.SearchFiles,
			Description: "Find served files whose relative path contains a literal substring (query) or any of up to 16 (any_of), sorted by path. case_insensitive folds ASCII letters only.",
			InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false,"properties":{` + termProps +
				`,"path":{"type":"string","description":"Only search below this relative directory."},` + pagingProps + `}}`),
			OutputSchema: pageSchema(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`),
			Annotations:  readOnly(),
			Meta:         privateMeta,
		}, typed(r.searchFiles)},
		{&mcp.Tool{
			Name:        toolset.SearchText,
			Description: "Find lines of served UTF-8 files that contain a literal substring (query) or any of up to 16 (any_of). Items give path, 1-based line and the line's text (cut to a bounded length). A page may be empty yet carry next_cursor when scanning needs another call.",
			InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false,"properties":{` + termProps +
				`,"path":{"type":"string","description":"Only search below this relative directory."},` + pagingProps + `}}`),
			OutputSchema: pageSchema(`{"type":"object","properties":{"path":{"type":"string"},"line":{"type":"integer"},"text":{"type":"string"}},"required":["path","line","text"]}`),
			Annotations:  readOnly(),
			Meta:         privateMeta,
		}, typed(r.searchText)},
		{&mcp.Tool{
			Name:        toolset.ReadTextFile,
			Description: "Read a served UTF-8 file in pages of exact byte chunks; concatenating every item's text reproduces the file (or, with start_line, the file from that line on). byte_offset is absolute in the file.",
			InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["path"],"properties":{` +
				`"path":{"type":"string","description":"Relative path of the file."},` +
				`"start_line":{"type":"integer","minimum":1,"description":"1-based line to start from on the first page."},` + pagingProps + `}}`),
			OutputSchema: pageSchema(`{"type":"object","properties":{"byte_offset":{"type":"integer"},"text":{"type":"string"}},"required":["byte_offset","text"]}`),
			Annotations:  readOnly(),
			Meta:         privateMeta,
		}, typed(r.readTextFile)},
		{&mcp.Tool{
			Name:        toolset.WriteTextFile,
			Description: "Create or replace one file directly in the root, atomically, with the given UTF-8 text. path is one lowercase basename; the file must be one this root serves.",
			InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["path","content"],"properties":{` +
				`"path":{"type":"string","description":"One lowercase basename in the root."},` +
				`"content":{"type":"string","description":"The complete new contents."}}}`),
			OutputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"bytes":{"type":"integer"},"content_hash":{"type":"string"}},"required":["path","bytes","content_hash"]}`),
			Annotations:  &mcp.ToolAnnotations{DestructiveHint: &t, IdempotentHint: true, OpenWorldHint: &f},
			Meta:         privateMeta,
		}, rawTyped(r.writeTextFile)},
	}
}

const pagingProps = `"cursor":{"type":"string","description":"next_cursor from the previous page, exactly as returned."},` +
	`"limit":{"type":"integer","minimum":1,"description":"Most items on this page."}`

const termProps = `"query":{"type":"string","description":"Literal substring."},` +
	`"any_of":{"type":"array","items":{"type":"string"},"maxItems":16,"description":"Match any of these literal substrings."},` +
	`"case_insensitive":{"type":"boolean","description":"Fold ASCII letters on both sides."}`

func pageSchema(item string) json.RawMessage {
	return json.RawMessage(`{"type":"object","required":["items","next_cursor","content_hash"],"properties":{` +
		`"items":{"type":"array","items":` + item + `},` +
		`"next_cursor":{"type":["string","null"]},` +
		`"content_hash":{"type":"string","description":"SHA-256 (hex) of what this page returned."}}}`)
}

// decodeArgs decodes a tool's arguments strictly: unknown fields and
// trailing data are refused.
func decodeArgs(raw json.RawMessage, into any) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(into); err != nil {
		return toolErrorf("invalid arguments: %s", argError(err))
	}
	if dec.More() {
		return toolErrorf("invalid arguments: trailing data")
	}
	return nil
}

func argError(err error) string {
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &te) && te.Field == "":
		return "the arguments must be a JSON object"
	case errors.As(err, &te) && te.Field == "any_of":
		return "any_of must be an array of strings" // the only array argument
	case errors.As(err, &te):
		return fmt.Sprintf("%s must be %s", te.Field, jsonKind(te.Type.Kind().String()))
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return "unknown argument " + name
	}
	return err.Error()
}

func jsonKind(k string) string {
	switch k {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "slice":
		return "an array"
	case "ptr", "int", "int64":
		return "an integer"
	}
	return "of another type"
}

// adapt decodes a tool's arguments strictly, runs fn, and reports any error
// as a tool error.
func adapt[A any](fn func(context.Context, A) (*mcp.CallToolResult, error)) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var a A
		if err := decodeArgs(req.Params.Arguments, &a); err != nil {
			return errorResult(err), nil
		}
		res, err := fn(ctx, a)
		if err != nil {
			return errorResult(err), nil
		}
		return res, nil
	}
}

// typed adapts a paging tool's function to an MCP tool handler.
func typed[A any](fn func(context.Context, A) (*pageResult, error)) mcp.ToolHandler {
	return adapt(func(ctx context.Context, a A) (*mcp.CallToolResult, error) {
		p, err := fn(ctx, a)
		if err != nil {
			return nil, err
		}
		return p.fitter.finish(p.next, p.hash)
	})
}

// rawTyped adapts a tool that renders its own structured result.
func rawTyped[A any](fn func(context.Context, A) ([]byte, error)) mcp.ToolHandler {
	return adapt(func(ctx context.Context, a A) (*mcp.CallToolResult, error) {
		b, err := fn(ctx, a)
		if err != nil {
			return nil, err
		}
		return resultFor(b), nil
	})
}
