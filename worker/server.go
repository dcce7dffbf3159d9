package worker

import (
	"context"
	"encoding/json"
	"strconv"

	"github.com/fsmcp/fsmcp/internal/profile"
	"github.com/fsmcp/fsmcp/internal/toolset"
	"github.com/fsmcp/fsmcp/internal/version"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ServerOptions configure NewServer.
type ServerOptions struct {
	// Implementation names the server in server/discover; default
	// fsmcp-worker at the module's version.
	Implementation *mcp.Implementation
}

// NewServer builds the MCP server for an opened root: the tools of the
// root's mask, the 2026-07-28 profile, and nothing else. Its tools are
// served on the profile's direct path too (profile.Run).
func NewServer(r *Root, o *ServerOptions) *profile.Server {
	impl := &mcp.Implementation{Name: "fsmcp-worker", Version: version.String()}
	if o != nil && o.Implementation != nil {
		impl = o.Implementation
	}
	s := profile.NewServer(impl, "")
	for _, t := range r.tools() {
		if r.mask.Has(t.tool.Name) {
			s.AddTool(t.tool, t.handler)
		}
	}
	return s
}

// Serve serves s on t until ctx is done or the peer leaves, with the
// profile's checks of every request (protocol revision 2026-07-28 named in
// each request's _meta).
func Serve(ctx context.Context, s *profile.Server, t mcp.Transport) error {
	return profile.Run(ctx, s, t)
}

type toolDef struct {
	tool    *mcp.Tool
	handler mcp.ToolHandler
}

var privateMeta = mcp.Meta{"io.modelcontextprotocol/cacheScope": "private"}

// annotations are the four hints of docs/reference.md, Tools, and nothing
// else (the title is the tool's own, not repeated here): every tool works
// on the root alone; the read tools change nothing, the write tool replaces
// a file (the same call twice leaves the same file).
func annotations(write bool) *mcp.ToolAnnotations {
	f, t := false, true
	if write {
		return &mcp.ToolAnnotations{ReadOnlyHint: false, DestructiveHint: &t, IdempotentHint: true, OpenWorldHint: &f}
	}
	return &mcp.ToolAnnotations{ReadOnlyHint: true, DestructiveHint: &f, IdempotentHint: true, OpenWorldHint: &f}
}

// tool builds a tool definition and its handler; the handler decodes
// arguments against the input schema before h sees them.
func tool[A any](name, title, desc string, write bool, input, output string, h func(context.Context, A) (*mcp.CallToolResult, error)) toolDef {
	t := &mcp.Tool{
		Name:         name,
		Title:        title,
		Description:  desc,
		InputSchema:  json.RawMessage(input),
		OutputSchema: json.RawMessage(output),
		Annotations:  annotations(write),
		Meta:         privateMeta,
	}
	return toolDef{t, adapt(schemaOf(name, t.InputSchema.(json.RawMessage)), h)}
}

func (r *Root) tools() []toolDef {
	return []toolDef{
		tool(toolset.ListDirectory, "List directory",
			"List the files and directories directly under a directory of the root (path \"\" or \".\" is the root), sorted by name. A directory is listed when it holds a served file. Follow next_cursor until it is null.",
			false, `{"type":"object","additionalProperties":false,"properties":{`+
				`"path":{"type":"string","maxLength":1024,"description":"Relative directory; \"\" or \".\" for the root."},`+pagingProps+`}}`,
			pageSchema(`{"type":"object","properties":{"name":{"type":"string"},"kind":{"type":"string","enum":["file","directory"]},"path":{"type":"string"}},"required":["name","kind","path"]}`),
			paged(r.listDirectory)),
		tool(toolset.SearchFiles, "Search files",
			"Find served files whose relative path contains a literal text (query), or any of up to 16 (any_of), sorted by path. case_insensitive folds ASCII letters only. Follow next_cursor until it is null.",
			false, `{"type":"object","additionalProperties":false,"properties":{`+termProps+
				`,"path":{"type":"string","maxLength":1024,"description":"Only search below this relative directory."},`+pagingProps+`}}`,
			pageSchema(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`),
			paged(r.searchFiles)),
		tool(toolset.SearchText, "Search text",
			"Find lines of served UTF-8 files that contain a literal text (query), or any of up to 16 (any_of). Each item gives the path, the 1-based line number and the line (at most 1024 bytes of it). A page may be empty and still carry next_cursor when more of the files remain to be scanned: follow it until it is null.",
			false, `{"type":"object","additionalProperties":false,"properties":{`+termProps+
				`,"path":{"type":"string","maxLength":1024,"description":"Only search this file, or below this relative directory."},`+pagingProps+`}}`,
			pageSchema(`{"type":"object","properties":{"path":{"type":"string"},"line":{"type":"integer"},"text":{"type":"string"}},"required":["path","line","text"]}`),
			paged(r.searchText)),
		tool(toolset.ReadTextFile, "Read text file",
			"Read a served UTF-8 file as exact chunks of its bytes; joining every item's text over all pages gives the file (or, with start_line, the file from that line on). byte_offset is the chunk's offset in the file. Follow next_cursor until it is null.",
			false, `{"type":"object","additionalProperties":false,"required":["path"],"properties":{`+
				`"path":{"type":"string","minLength":1,"maxLength":1024,"description":"Relative path of the file."},`+
				`"start_line":{"type":"integer","minimum":1,"description":"1-based line to start reading from."},`+
				`"cursor":{"type":"string","description":"next_cursor of the previous page, exactly as returned."},`+
				`"limit":{"type":"integer","minimum":1,"maximum":`+strconv.Itoa(r.readLimit())+`,"description":"Most chunks on this page."}}}`,
			pageSchema(`{"type":"object","properties":{"byte_offset":{"type":"integer"},"text":{"type":"string"}},"required":["byte_offset","text"]}`),
			paged(r.readTextFile)),
		tool(toolset.WriteTextFile, "Write text file",
			"Create or replace one file directly in the root, atomically, with the given UTF-8 text. path is one lowercase basename that this root serves; an existing file must be a regular file this server may write.",
			true, `{"type":"object","additionalProperties":false,"required":["path","content"],"properties":{`+
				`"path":{"type":"string","description":"One lowercase basename in the root."},`+
				`"content":{"type":"string","description":"The complete new contents."}}}`,
			`{"type":"object","properties":{"path":{"type":"string"},"bytes":{"type":"integer"},"content_hash":{"type":"string"}},"required":["path","bytes","content_hash"]}`,
			written(r.writeTextFile)),
	}
}

const pagingProps = `"cursor":{"type":"string","description":"next_cursor of the previous page, exactly as returned."},` +
	`"limit":{"type":"integer","minimum":1,"description":"Most items on this page (at most 200 are returned)."}`

const termProps = `"query":{"type":"string","minLength":1,"description":"Literal text to find (one line, at most 256 bytes)."},` +
	`"any_of":{"type":"array","items":{"type":"string","minLength":1},"minItems":1,"maxItems":16,"description":"Find any of these literal texts."},` +
	`"case_insensitive":{"type":"boolean","description":"Fold ASCII letters on both sides."}`

func pageSchema(item string) string {
	return `{"type":"object","required":["items","next_cursor","content_hash"],"properties":{` +
		`"items":{"type":"array","items":` + item + `},` +
		`"next_cursor":{"type":["string","null"]},` +
		`"content_hash":{"type":"string","pattern":"^sha256:[0-9a-f]{64}$","description":"sha256: and the SHA-256 (hex) of what this page returned."}}}`
}

// adapt decodes a tool's arguments against its schema, runs fn, and reports
// any error as a tool error.
func adapt[A any](s argSchema, fn func(context.Context, A) (*mcp.CallToolResult, error)) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var a A
		if err := s.decode(req.Params.Arguments, &a); err != nil {
			return errorResult(err), nil
		}
		res, err := fn(ctx, a)
		if err != nil {
			return errorResult(err), nil
		}
		return res, nil
	}
}

// paged adapts a paging tool's function.
func paged[A any](fn func(context.Context, A) (*pageResult, error)) func(context.Context, A) (*mcp.CallToolResult, error) {
	return func(ctx context.Context, a A) (*mcp.CallToolResult, error) {
		p, err := fn(ctx, a)
		if err != nil {
			return nil, err
		}
		return p.fitter.finish(p.next)
	}
}

// written adapts a tool that renders its own structured result.
func written[A any](fn func(context.Context, A) ([]byte, error)) func(context.Context, A) (*mcp.CallToolResult, error) {
	return func(ctx context.Context, a A) (*mcp.CallToolResult, error) {
		b, err := fn(ctx, a)
		if err != nil {
			return nil, err
		}
		return resultFor(b), nil
	}
}
