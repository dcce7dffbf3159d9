package front

import (
	"bytes"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fsmcp/fsmcp/internal/jsonstr"
	"github.com/fsmcp/fsmcp/internal/profile"
)

// The front serves hosts of both protocol eras: those that name 2026-07-28
// in each request's _meta, and those that began with the 2025 initialize
// handshake and name nothing. A worker serves 2026-07-28 alone, so every
// call reaches it in that era; what the host gets back is shaped for the
// host's era as go-sdk shapes its own answers: a 2026-07-28 result carries
// resultType "complete" and names the supervisor in _meta's serverInfo, a
// 2025 result carries neither (its revisions have no resultType, and the
// host learnt the server's name from initialize). Tools, schemas, content,
// structured content, errors and cursors are the same in both.

// The _meta members a call of the 2026-07-28 era names, as the front adds
// them to a 2025 host's call for the worker: the revision, and the
// client's capabilities, which no fsmcp tool reads.
const (
	metaKey          = `"_meta"`
	protocolPrefix   = `"io.modelcontextprotocol/`
	versionKey       = `"` + mcp.MetaKeyProtocolVersion + `"`
	modernClaim      = versionKey + `:"` + profile.Version + `","` + mcp.MetaKeyClientCapabilities + `":{}`
	resultTypeMember = `,"resultType":"complete"}`
)

// metaEra reads the era of a call from its _meta value (an object, as the
// host wrote it): modern where it names 2026-07-28. ok is false where the
// relay leaves the call to the SDK: _meta not an object, a key written
// with an escape or twice, or a 2025 call carrying members of the
// protocol's namespace, whose meaning the SDK settles.
func metaEra(meta []byte) (modern, ok bool) {
	if len(meta) == 0 || meta[0] != '{' {
		return false, false
	}
	protocol := false
	ok = jsonstr.UniqueMembers(meta, func(k, v []byte) bool {
		if string(k) == versionKey {
			named, _ := jsonstr.Unquote(v)
			modern = named == profile.Version
		}
		protocol = protocol || bytes.HasPrefix(k, []byte(protocolPrefix))
		return true
	})
	return modern, ok && (modern || !protocol)
}

// legacyMeta is a 2025 call's _meta (nil: none) with the 2026-07-28 claim
// added for the worker.
func legacyMeta(meta []byte) []byte {
	inner := []byte(nil)
	if len(meta) > 1 {
		inner = bytes.TrimSpace(meta[1 : len(meta)-1])
	}
	b := make([]byte, 0, len(modernClaim)+len(inner)+3)
	b = append(b, '{')
	b = append(b, modernClaim...)
	if len(inner) > 0 {
		b = append(b, ',')
		b = append(b, inner...)
	}
	return append(b, '}')
}

// The worker writes every result as {"_meta":{serverInfo},...,"resultType":
// "complete"}: legacyResult cuts those two members out of a result of
// that shape without looking at the rest.
var workerHead = []byte(`{"_meta":{"` + mcp.MetaKeyServerInfo + `":`)

// legacyResult is a worker's 2026-07-28 result as a 2025 host gets it:
// without resultType, and without serverInfo in _meta (nor _meta, when
// nothing else is in it). A result the worker spelled otherwise is walked
// member by member; one that cannot be (an escaped or repeated key, which
// the worker never writes) is passed on as it came.
func legacyResult(result json.RawMessage) json.RawMessage {
	if bytes.HasPrefix(result, workerHead) && bytes.HasSuffix(result, []byte(resultTypeMember)) {
		end := jsonstr.ValueEnd(result, len(workerHead))
		last := len(result) - len(resultTypeMember)
		if end > 0 && end+1 < last && result[end] == '}' && result[end+1] == ',' {
			out := make([]byte, 0, last-end)
			out = append(out, '{')
			out = append(out, result[end+2:last]...)
			return append(out, '}')
		}
	}
	out := make([]byte, 0, len(result))
	out = append(out, '{')
	if !jsonstr.UniqueMembers(result, func(k, v []byte) bool {
		switch string(k) {
		case `"resultType"`:
			return true
		case metaKey:
			if v = withoutServerInfo(v); v == nil {
				return true
			}
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(append(append(out, k...), ':'), v...)
		return true
	}) {
		return result
	}
	return append(out, '}')
}

// withoutServerInfo is a _meta object without its serverInfo member, nil
// when nothing else is in it.
func withoutServerInfo(meta []byte) []byte {
	out := []byte{'{'}
	jsonstr.Members(meta, func(k, v []byte) {
		if string(k) == `"`+mcp.MetaKeyServerInfo+`"` {
			return
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(append(append(out, k...), ':'), v...)
	})
	if len(out) == 1 {
		return nil
	}
	return append(out, '}')
}

// toolErrorResult is the result of one of the front's own tool errors,
// text, for a host of the era modern says, spelled as go-sdk spells a
// tool error for that era (and as the worker spells its own).
func (s *Server) toolErrorResult(text string, modern bool) json.RawMessage {
	quoted, _ := json.Marshal(text) // a string always encodes
	b := make([]byte, 0, len(quoted)+len(s.implJSON)+128)
	b = append(b, '{')
	if modern {
		b = append(b, workerHead[1:]...)
		b = append(b, s.implJSON...)
		b = append(b, "},"...)
	}
	b = append(b, `"content":[{"type":"text","text":`...)
	b = append(b, quoted...)
	b = append(b, `}],"isError":true`...)
	if modern {
		return append(b, resultTypeMember...)
	}
	return append(b, '}')
}

// hostResult is a worker's result, got through the SDK, for the host:
// its content, structured content and error flag, with _meta but for the
// worker's serverInfo. The front server's SDK then sets the result type
// and its own serverInfo where the host's era has them.
func hostResult(res *mcp.CallToolResult) *mcp.CallToolResult {
	out := &mcp.CallToolResult{Content: res.Content, StructuredContent: res.StructuredContent, IsError: res.IsError}
	for k, v := range res.Meta {
		if k == mcp.MetaKeyServerInfo {
			continue
		}
		if out.Meta == nil {
			out.Meta = mcp.Meta{}
		}
		out.Meta[k] = v
	}
	return out
}
