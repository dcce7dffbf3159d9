package profile

import (
	"bytes"
	"encoding/json"

	"github.com/fsmcp/fsmcp/internal/jsonstr"
)

// directCall is a tools/call the direct path can take: the tool, its
// arguments, and the key that must be vouched for.
type directCall struct {
	name      string
	arguments json.RawMessage
	key       []byte // clientCapabilities, a NUL, clientInfo (as written; empty when absent)
}

// The members of a direct call's params and of its _meta, as written.
const (
	keyName         = `"name"`
	keyArguments    = `"arguments"`
	keyMeta         = `"_meta"`
	keyCapabilities = `"io.modelcontextprotocol/clientCapabilities"`
	keyClientInfo   = `"io.modelcontextprotocol/clientInfo"`
	keyLogLevel     = `"io.modelcontextprotocol/logLevel"`
	keyProgress     = `"progressToken"`
)

// splitDirect splits a tools/call's params, or reports false for params
// the direct path leaves to the SDK (see the note at the top of
// direct.go). The params come from a parsed line, so they are valid JSON.
func splitDirect(params json.RawMessage) (directCall, bool) {
	var c directCall
	var name, meta []byte
	ok := jsonstr.UniqueMembers(params, func(k, v []byte) bool {
		switch string(k) {
		case keyName:
			name = v
		case keyArguments:
			c.arguments = v
			return len(v) > 0 && v[0] == '{'
		case keyMeta:
			meta = v
		default:
			return false
		}
		return true
	})
	if !ok || name == nil || c.arguments == nil || meta == nil {
		return directCall{}, false
	}
	if c.name, ok = jsonstr.Unquote(name); !ok {
		return directCall{}, false
	}
	var caps, info []byte
	named := false
	ok = jsonstr.UniqueMembers(meta, func(k, v []byte) bool {
		switch string(k) {
		case versionKey:
			named = string(v) == `"`+Version+`"`
			return named
		case keyCapabilities:
			caps = v
			return v[0] == '{'
		case keyClientInfo:
			info = v
		case keyLogLevel:
			return plainString(v)
		case keyProgress:
			return plainString(v) || plainInteger(v)
		default:
			// A member of the host's own (a tool-use id, say): the SDK only
			// decodes it into the request's _meta, which fsmcp's handlers
			// never read. Taken when its value decodes the same everywhere
			// and its key is outside the protocol's namespace, whose
			// members a later SDK may act on.
			return !bytes.HasPrefix(k, protocolPrefix) && (plainString(v) || plainInteger(v) || isLiteral(v))
		}
		return true
	})
	if !ok || !named || caps == nil {
		return directCall{}, false
	}
	c.key = append(append(append(make([]byte, 0, len(caps)+1+len(info)), caps...), 0), info...)
	return c, true
}

// protocolPrefix begins the keys of the protocol's own _meta members, as
// written.
var protocolPrefix = []byte(`"io.modelcontextprotocol/`)

// isLiteral reports whether v is true, false or null.
func isLiteral(v []byte) bool {
	return string(v) == "true" || string(v) == "false" || string(v) == "null"
}

// plainString reports whether v is a JSON string of printable ASCII
// without escapes, which every decoder reads the same.
func plainString(v []byte) bool {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return false
	}
	for _, b := range v[1 : len(v)-1] {
		if b < 0x20 || b > 0x7e || b == '\\' || b == '"' {
			return false
		}
	}
	return true
}

// plainInteger reports whether v is a JSON integer of at most 15 digits,
// which every decoder reads exactly.
func plainInteger(v []byte) bool {
	if len(v) > 0 && v[0] == '-' {
		v = v[1:]
	}
	if len(v) == 0 || len(v) > 15 || (v[0] == '0' && len(v) > 1) {
		return false
	}
	for _, b := range v {
		if b < '0' || b > '9' {
			return false
		}
	}
	return true
}
