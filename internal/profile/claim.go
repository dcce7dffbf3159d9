package profile

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fsmcp/fsmcp/internal/jsonstr"
)

// metaProtocolVersion is the _meta key by which a 2026-07-28 request names
// its protocol revision.
const metaProtocolVersion = "io.modelcontextprotocol/protocolVersion"

// Transport wraps t so that every call except the legacy initialize (which
// Refuse answers) must name Version in its params' _meta, ping included (the
// revision has no ping: with the claim it is an unknown method). A call that
// names no version, or another one, is answered on the spot with
// CodeUnsupportedProtocolVersion and never reaches the server: go-sdk would
// treat it as the legacy protocol and answer "invalid during session
// initialization" with code 0, or serve it once some other request had
// set the session up. The connection stays usable.
func Transport(t mcp.Transport) mcp.Transport { return &claimTransport{inner: t} }

type claimTransport struct{ inner mcp.Transport }

func (t *claimTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &claimConn{Connection: c}, nil
}

type claimConn struct{ mcp.Connection }

func (c *claimConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Connection.Read(ctx)
		if err != nil {
			return msg, err
		}
		req, ok := msg.(*jsonrpc.Request)
		if !ok || !req.IsCall() || req.Method == "initialize" {
			return msg, nil
		}
		refusal := checkClaim(req.Params)
		if refusal == nil {
			return msg, nil
		}
		if err := c.Connection.Write(ctx, &jsonrpc.Response{ID: req.ID, Error: refusal}); err != nil {
			return nil, err
		}
	}
}

// checkClaim returns the refusal of a call whose params do not name
// Version in _meta, or nil.
func checkClaim(params json.RawMessage) *jsonrpc.Error {
	named, ok := claimedFast(params)
	if !ok {
		named = claimed(params)
	}
	if named == "" {
		data, _ := json.Marshal(struct {
			Supported []string `json:"supported"`
		}{[]string{Version}})
		return &jsonrpc.Error{
			Code:    CodeUnsupportedProtocolVersion,
			Message: "Unsupported protocol version: the request did not name a protocol version",
			Data:    data,
		}
	}
	if named == Version {
		return nil
	}
	data, _ := json.Marshal(mcp.UnsupportedProtocolVersionData{Supported: []string{Version}, Requested: named})
	return &jsonrpc.Error{
		Code:    CodeUnsupportedProtocolVersion,
		Message: "Unsupported protocol version: the request named " + named + "; this server implements " + Version,
		Data:    data,
	}
}

// claimed is the version params' _meta names, "" for none: as decoded
// into a struct, so "_meta" matches in any case and a key repeated
// counts last.
func claimed(params json.RawMessage) string {
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	_ = json.Unmarshal(params, &p) // params that are not an object name no version
	var named string
	if raw, ok := p.Meta[metaProtocolVersion]; !ok || json.Unmarshal(raw, &named) != nil {
		return ""
	}
	return named
}

// claimedFast is claimed without decoding the params: their members are
// walked (a call's arguments, a whole file's content for a write, are
// crossed, not decoded). It reports false where it leaves the answer to
// claimed: params that are not an object, a key written with an escape,
// _meta twice (in any case) or the version twice, _meta not an object.
// The params come from a parsed line, so they are valid JSON.
func claimedFast(params json.RawMessage) (string, bool) {
	meta, ok := onlyMember(params, func(k []byte) bool { return bytes.EqualFold(k, metaKey) })
	if !ok {
		return "", false
	}
	if meta == nil {
		return "", true
	}
	raw, ok := onlyMember(meta, func(k []byte) bool { return string(k) == versionKey })
	if !ok {
		return "", false
	}
	named, _ := jsonstr.Unquote(raw) // none, or not a string: none named
	return named, true
}

// onlyMember is the value of the one member of the object data whose key
// (as written) match accepts, nil when none does. ok is false where data
// is not an object, a key is written with an escape, or two keys match.
func onlyMember(data []byte, match func(key []byte) bool) (v []byte, ok bool) {
	ok = true
	if !jsonstr.Members(data, func(k, val []byte) {
		switch {
		case bytes.IndexByte(k, '\\') >= 0:
			ok = false
		case match(k):
			ok = ok && v == nil
			v = val
		}
	}) {
		return nil, false
	}
	return v, ok
}

// The keys claimedFast looks for, quoted as written.
var (
	metaKey    = []byte(`"_meta"`)
	versionKey = `"` + metaProtocolVersion + `"`
)
