package front

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fsmcp/fsmcp/internal/jsonstr"
	"github.com/fsmcp/fsmcp/internal/limits"
)

// A worker's tool errors speak of its command line (--include, the walk
// ceilings its --max-* options set) and of its own tool names, which is
// right for the worker alone. Through the supervisor the host knows the
// tools by their front names and its user knows the manifest, so the
// front rewords the texts of docs/reference.md, Errors, and only those,
// into the manifest's words: its include: and exclude: lists, its limits
// with their values, the tool as the host called it. Every other text
// passes unchanged.

// LimitedRoot is a Root whose limits are known: the manifest's values,
// and the defaults for the rest.
type LimitedRoot interface {
	Root
	Limits() limits.Limits
}

// ceilings are the walk ceilings by their text (docs/reference.md,
// Errors), with what the walk did past the limit and the limit's manifest
// key.
var ceilings = map[string]struct{ did, key string }{
	"file limit exceeded":            {"selects more than %d files", "max_files"},
	"directory limit exceeded":       {"enters more than %d directories", "max_directories"},
	"directory depth limit exceeded": {"goes deeper than %d directory levels", "max_depth"},
	"directory entry limit exceeded": {"reads more than %d directory entries", "max_entries"},
}

var (
	writeLimit  = regexp.MustCompile(`^content exceeds the ([0-9]+)-byte write limit$`)
	schemaError = "Input validation error: Invalid arguments for tool "
)

// reword is a worker's error text for a call of tool (the worker's name)
// on root r, in the words of the host's side; ok is false for a text it
// leaves as it is.
func reword(r Root, tool, text string) (string, bool) {
	name := r.Name()
	if rest, found := strings.CutPrefix(text, schemaError+tool+": "); found {
		return schemaError + ToolName(name, tool) + ": " + rest, true
	}
	switch text {
	case "path matches an --exclude pattern of this root":
		return fmt.Sprintf("path matches an exclude pattern of root %s (the manifest's exclude: list, or the built-in list unless default_exclude: false)", name), true
	case "path matches no --include pattern of this root":
		return fmt.Sprintf("path matches no include: pattern of root %s", name), true
	case "no --include pattern of this root matches a file in the root itself, so no write can be accepted; a write names one basename and lands in the root, so add an --include pattern without a directory prefix, such as '**'":
		return fmt.Sprintf("no include: pattern of root %s matches a file in the root itself, so no write can be accepted; a write names one basename and lands in the root, so add an include: pattern without a directory prefix, such as \"**\", to the manifest", name), true
	}
	lr, known := r.(LimitedRoot)
	if !known {
		return "", false
	}
	value := func(key string) string {
		l, _ := limits.Lookup(key)
		return fmt.Sprintf("limits.%s: %d", key, l.Get(lr.Limits()))
	}
	if c, found := ceilings[text]; found {
		l, _ := limits.Lookup(c.key)
		return fmt.Sprintf("%s: the walk of root %s "+c.did+" (%s); narrow the call to a smaller folder with its path argument, or raise limits.%s in the manifest",
			text, name, l.Get(lr.Limits()), value(c.key), c.key), true
	}
	switch {
	case text == "file exceeds the configured size limit":
		return fmt.Sprintf("file exceeds the size limit of root %s (%s)", name, value("max_file_bytes")), true
	case text == "deterministic cursor hashing exceeds the configured byte ceiling":
		return fmt.Sprintf("deterministic cursor hashing exceeds the byte ceiling of root %s (%s); narrow the call, or raise limits.max_cursor_hash_bytes in the manifest", name, value("max_cursor_hash_bytes")), true
	case writeLimit.MatchString(text):
		return fmt.Sprintf("%s of root %s (limits.max_write_bytes)", text, name), true
	}
	return "", false
}

// isErrorTrue marks a tool result that is an error. Found as a quoted key
// followed by a colon, it is a key of the result (in valid JSON never
// string content, where its quotes would be escaped).
var isErrorTrue = []byte(`"isError":true`)

// rewordResult is a worker's tools/call result (JSON) for a call of tool
// on root r with its error text reworded; any other result is returned as
// it is. Members other than the content keep their bytes and order.
func rewordResult(r Root, tool string, result json.RawMessage) json.RawMessage {
	if !bytes.Contains(result, isErrorTrue) {
		return result
	}
	out := make([]byte, 0, len(result)+256)
	out = append(out, '{')
	changed := false
	ok := jsonstr.UniqueMembers(result, func(k, v []byte) bool {
		if string(k) == `"content"` {
			if nv, ok := rewordContent(r, tool, v); ok {
				v, changed = nv, true
			}
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(append(append(out, k...), ':'), v...)
		return true
	})
	if !ok || !changed {
		return result
	}
	return append(out, '}')
}

// rewordContent is a result's content (one text item) with its text
// reworded, and whether it was.
func rewordContent(r Root, tool string, content []byte) ([]byte, bool) {
	var items []map[string]json.RawMessage
	if json.Unmarshal(content, &items) != nil || len(items) != 1 {
		return nil, false
	}
	var text string
	if json.Unmarshal(items[0]["text"], &text) != nil {
		return nil, false
	}
	nt, ok := reword(r, tool, text)
	if !ok {
		return nil, false
	}
	var err error
	if items[0]["text"], err = json.Marshal(nt); err != nil {
		return nil, false
	}
	b, err := json.Marshal(items)
	return b, err == nil
}

// rewordError rewords the text of res, a worker's tool error for a call
// of tool on root r, in place.
func rewordError(r Root, tool string, res *mcp.CallToolResult) {
	if !res.IsError || len(res.Content) != 1 {
		return
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); ok {
		if nt, ok := reword(r, tool, tc.Text); ok {
			tc.Text = nt
		}
	}
}
