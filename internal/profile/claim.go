package profile

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fsmcp/fsmcp/internal/jsonstr"
)

// metaProtocolVersion is the _meta key by which a 2026-07-28 request names
// its protocol revision.
const metaProtocolVersion = "io.modelcontextprotocol/protocolVersion"

// Transport wraps t so that every call except the legacy initialize (which
// the profile's middleware answers) must name Version in its params' _meta,
// ping included (the revision has no ping: with the claim it is an unknown
// method). It is TransportFor with Version alone.
func Transport(t mcp.Transport) mcp.Transport { return TransportFor(t, Config{}) }

// TransportFor wraps t so that a call reaches the server only in an era c
// serves: a call naming one of c's revisions of the 2026-07-28 era in
// _meta; and, where c serves a revision of the initialize handshake, an
// initialize, a ping, and any other call once an initialize has been
// taken. Any other call is answered on the spot with
// CodeUnsupportedProtocolVersion and never reaches the server: go-sdk would
// answer a call outside both eras "invalid during session initialization"
// with code 0, or serve it once some other request had set the session
// up. The connection stays usable.
func TransportFor(t mcp.Transport, c Config) mcp.Transport {
	return &claimTransport{inner: t, c: c}
}

type claimTransport struct {
	inner mcp.Transport
	c     Config
}

func (t *claimTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &claimConn{Connection: c, versions: t.c.versions(), legacy: t.c.legacy()}, nil
}

type claimConn struct {
	mcp.Connection
	versions []string
	legacy   bool // a revision of the initialize handshake is served

	mu sync.Mutex
	// begun: an initialize was taken, and it was answered with a result or
	// is not answered yet. initOK: one was answered with a result.
	begun, initOK bool
	initIDs       []jsonrpc.ID // initialize requests taken and not yet answered
}

func (c *claimConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Connection.Read(ctx)
		if err != nil {
			return msg, err
		}
		req, ok := msg.(*jsonrpc.Request)
		if !ok || !req.IsCall() {
			return msg, nil
		}
		refusal := c.check(req)
		if refusal == nil {
			return msg, nil
		}
		if err := c.Connection.Write(ctx, &jsonrpc.Response{ID: req.ID, Error: refusal}); err != nil {
			return nil, err
		}
	}
}

// check returns the refusal of req, a call, or nil to let it through.
func (c *claimConn) check(req *jsonrpc.Request) *jsonrpc.Error {
	if req.Method == "initialize" {
		if c.legacy {
			if !initializeParams(req.Params) {
				return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Invalid params: initialize takes an object of protocolVersion (a string), capabilities and clientInfo"}
			}
			c.mu.Lock()
			c.begun = true
			c.initIDs = append(c.initIDs, req.ID)
			c.mu.Unlock()
		}
		return nil // the server negotiates, or the middleware refuses it
	}
	named := namedVersion(req.Params)
	served := named != "" && slices.Contains(c.versions, named)
	switch {
	case named == Version && served:
		return nil
	case named != "" && !served:
		return c.namedRefusal(named, "this server implements "+strings.Join(c.versions, ", "))
	case c.legacy && (req.Method == "ping" || c.hasBegun()):
		return nil
	case named != "":
		return c.namedRefusal(named, "that revision begins with initialize, so send initialize first")
	}
	data, _ := json.Marshal(struct {
		Supported []string `json:"supported"`
	}{c.versions})
	msg := "Unsupported protocol version: the request did not name a protocol version"
	if c.legacy {
		msg += noClaimHint(c.versions)
	}
	return &jsonrpc.Error{Code: CodeUnsupportedProtocolVersion, Message: msg, Data: data}
}

// namedRefusal is the refusal of a call naming version, saying why.
func (c *claimConn) namedRefusal(version, why string) *jsonrpc.Error {
	data, _ := json.Marshal(mcp.UnsupportedProtocolVersionData{Supported: c.versions, Requested: version})
	return &jsonrpc.Error{
		Code:    CodeUnsupportedProtocolVersion,
		Message: "Unsupported protocol version: the request named " + version + "; " + why,
		Data:    data,
	}
}

// initializeParams reports whether params decode as an initialize's; the
// SDK answers those that do not with code 0 and its own type names.
func initializeParams(params json.RawMessage) bool {
	var p mcp.InitializeParams
	trimmed := bytes.TrimSpace(params)
	return len(trimmed) > 0 && trimmed[0] == '{' && json.Unmarshal(trimmed, &p) == nil
}

// noClaimHint tells a client of a server that also serves the initialize
// handshake how to begin.
func noClaimHint(versions []string) string {
	var legacy []string
	for _, v := range versions {
		if v != Version {
			legacy = append(legacy, v)
		}
	}
	hint := "; begin with initialize (" + strings.Join(legacy, ", ") + ")"
	if slices.Contains(versions, Version) {
		hint += ", or name " + Version + " in each request's _meta"
	}
	return hint
}

func (c *claimConn) hasBegun() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.begun
}

// Write writes msg, noting whether an initialize taken was answered with
// a result.
func (c *claimConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if resp, ok := msg.(*jsonrpc.Response); ok && c.legacy {
		c.mu.Lock()
		if i := slices.Index(c.initIDs, resp.ID); i >= 0 {
			c.initIDs = slices.Delete(c.initIDs, i, i+1)
			c.initOK = c.initOK || resp.Error == nil
			c.begun = c.initOK || len(c.initIDs) > 0
		}
		c.mu.Unlock()
	}
	return c.Connection.Write(ctx, msg)
}

// namedVersion is the version a call's params name in _meta, "" for none.
func namedVersion(params json.RawMessage) string {
	named, ok := claimedFast(params)
	if !ok {
		named = claimed(params)
	}
	return named
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
