package profile

import (
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

func TestCheckClaim(t *testing.T) {
	const noClaim = "Unsupported protocol version: the request did not name a protocol version"
	tests := []struct {
		name, params string
		message      string // "" when the call passes
		data         string
	}{
		{"the claim", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`, "", ""},
		{"the claim among other keys", `{"name":"x","arguments":{},"_meta":{"a":1,"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`, "", ""},
		{"no params", ``, noClaim, `{"supported":["2026-07-28"]}`},
		{"params null", `null`, noClaim, `{"supported":["2026-07-28"]}`},
		{"params an array", `[1]`, noClaim, `{"supported":["2026-07-28"]}`},
		{"no _meta", `{"name":"x"}`, noClaim, `{"supported":["2026-07-28"]}`},
		{"_meta not an object", `{"_meta":"2026-07-28"}`, noClaim, `{"supported":["2026-07-28"]}`},
		{"version empty", `{"_meta":{"io.modelcontextprotocol/protocolVersion":""}}`, noClaim, `{"supported":["2026-07-28"]}`},
		{"version a number", `{"_meta":{"io.modelcontextprotocol/protocolVersion":20260728}}`, noClaim, `{"supported":["2026-07-28"]}`},
		{"key spelled otherwise", `{"_meta":{"io.modelcontextprotocol/ProtocolVersion":"2026-07-28"}}`, noClaim, `{"supported":["2026-07-28"]}`},
		{"older revision", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25"}}`,
			"Unsupported protocol version: the request named 2025-11-25; this server implements 2026-07-28", `{"supported":["2026-07-28"],"requested":"2025-11-25"}`},
		{"newer revision", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2027-01-01"}}`,
			"Unsupported protocol version: the request named 2027-01-01; this server implements 2026-07-28", `{"supported":["2026-07-28"],"requested":"2027-01-01"}`},
		// Spellings the member walk leaves to the decoder (some), answered
		// as decoded.
		{"_meta in another case", `{"_META":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`, "", ""},
		{"escaped _meta key", `{"_m\u0065ta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`, "", ""},
		{"escaped version key", `{"_meta":{"io.modelcontextprotocol\/protocolVersion":"2026-07-28"}}`, "", ""},
		{"_meta twice, merged", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"_meta":{"a":1}}`, "", ""},
		{"version twice, the last counts", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/protocolVersion":"2025-11-25"}}`,
			"Unsupported protocol version: the request named 2025-11-25; this server implements 2026-07-28", `{"supported":["2026-07-28"],"requested":"2025-11-25"}`},
		{"escaped version value", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-2\u0038"}}`, "", ""},
		{"_meta null", `{"_meta":null}`, noClaim, `{"supported":["2026-07-28"]}`},
		{"version not UTF-8", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"` + "\xcc" + `"}}`,
			"Unsupported protocol version: the request named \ufffd; this server implements 2026-07-28", `{"supported":["2026-07-28"],"requested":"` + "\ufffd" + `"}`},
		{"content crossed", `{"name":"w","arguments":{"content":"\"_meta\":{} }"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`, "", ""},
	}
	// The rows claimedFast leaves to the decoder.
	decoded := map[string]bool{"no params": true, "params null": true, "params an array": true, "_meta not an object": true,
		"escaped _meta key": true, "escaped version key": true, "_meta twice, merged": true, "version twice, the last counts": true, "_meta null": true}
	for _, tt := range tests {
		// The member walk answers every plain spelling, as the decoder.
		named, ok := claimedFast(json.RawMessage(tt.params))
		if want := !decoded[tt.name]; ok != want {
			t.Errorf("%s: claimedFast answered %v, want %v", tt.name, ok, want)
		}
		if ok && named != claimed(json.RawMessage(tt.params)) {
			t.Errorf("%s: claimedFast = %q, claimed = %q", tt.name, named, claimed(json.RawMessage(tt.params)))
		}
		e := checkClaim(json.RawMessage(tt.params))
		switch {
		case tt.message == "" && e != nil:
			t.Errorf("%s: refused with %q", tt.name, e.Message)
		case tt.message == "":
		case e == nil:
			t.Errorf("%s: passed, want %q", tt.name, tt.message)
		case e.Code != CodeUnsupportedProtocolVersion || e.Message != tt.message || string(e.Data) != tt.data:
			t.Errorf("%s: %d %q %s, want %d %q %s", tt.name, e.Code, e.Message, e.Data, CodeUnsupportedProtocolVersion, tt.message, tt.data)
		}
	}
}

func TestIsObjectOrAbsent(t *testing.T) {
	for raw, want := range map[string]bool{
		``: true, `{}`: true, ` {"a":1}`: true, `null`: true, ` null `: true,
		`[]`: false, `"{}"`: false, `7`: false, `true`: false, `nullx`: false,
	} {
		if got := isObjectOrAbsent(json.RawMessage(raw)); got != want {
			t.Errorf("isObjectOrAbsent(%q) = %v, want %v", raw, got, want)
		}
	}
}

// FuzzClaimed: wherever the member walk answers, it answers as the
// decoder does.
func FuzzClaimed(f *testing.F) {
	for _, s := range []string{
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`,
		`{"name":"x","arguments":{"content":"\"_meta\""},"_Meta":{"a":1,"io.modelcontextprotocol/protocolVersion":"2025-11-25"}}`,
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-2\u0038"}}`,
		`{"_meta":null}`, `[]`, `{"_meta":{"io.modelcontextprotocol/protocolVersion":7}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, params []byte) {
		if !json.Valid(params) {
			return // the transport passes only parsed params
		}
		if named, ok := claimedFast(params); ok && named != claimed(params) {
			t.Fatalf("claimedFast(%q) = %q, claimed = %q", params, named, claimed(params))
		}
	})
}

// checkClaim returns the refusal of a call whose params do not name
// Version in _meta, or nil: the check of a server serving Version alone.
func checkClaim(params json.RawMessage) *jsonrpc.Error {
	c := &claimConn{versions: []string{Version}}
	return c.check(&jsonrpc.Request{Method: "tools/call", Params: params})
}
