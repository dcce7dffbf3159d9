package worker

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fsmcp/fsmcp/worker/paging"
	"github.com/fsmcp/fsmcp/worker/walk"
)

// toolError is a failure reported to the caller as a tool error: short,
// actionable, and free of host paths.
type toolError struct{ msg string }

func (e *toolError) Error() string { return e.msg }

func toolErrorf(format string, args ...any) error {
	return &toolError{msg: fmt.Sprintf(format, args...)}
}

// errorResult turns an error into a tool result. A tool error, or a walk's
// (a ceiling crossed, a directory unreadable), is reported as it is; any
// other error is internal, and its text is replaced so nothing of the host
// leaks.
func errorResult(err error) *mcp.CallToolResult {
	msg := "internal error; the call was not completed"
	var te *toolError
	var we *walk.Error
	switch {
	case errors.As(err, &te):
		msg = te.msg
	case errors.As(err, &we):
		msg = we.Error()
	}
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}
}

// resultFor wraps a structured value as a tool result: the JSON text in
// content, the same value as structuredContent.
func resultFor(structured []byte) *mcp.CallToolResult {
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: string(structured)}},
		StructuredContent: json.RawMessage(structured),
	}
}

// resultSize bounds the size of the result as a client decodes and
// re-encodes it, plus a reserve for the _meta the SDK adds to every
// response. The structured bytes appear twice, once as they are and once
// escaped inside the content text, so the bound is computed from the bytes
// rather than by encoding the result again.
func resultSize(structured []byte) int {
	return resultFrame + len(structured) + 2 + escapedLen(structured) + metaReserve
}

// resultFrame is what a result costs beyond its two copies of the
// structured bytes.
var resultFrame = func() int {
	b, err := json.Marshal(resultFor([]byte("{}")))
	if err != nil {
		panic(err)
	}
	return len(b) - len(`{}`) - len(`"{}"`)
}()

// metaReserve covers what the SDK adds around a tool result (the server's
// identity in _meta, the result type).
const metaReserve = 512

// escapedLen is a safe upper bound of the bytes b costs once more as the
// inside of a JSON string (as Go's encoder writes it, HTML escaping
// included).
func escapedLen(b []byte) int {
	n := 0
	for i := 0; i < len(b); {
		if c := b[i]; c < utf8.RuneSelf {
			n += int(asciiEscapedLen[c])
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r == '\u2028' || r == '\u2029' || r == utf8.RuneError {
			n += 6
		} else {
			n += size
		}
		i += size
	}
	return n
}

// asciiEscapedLen is what each ASCII byte costs in a JSON string: 2 for
// the escapes with a letter, 6 for the other control bytes and for <, >
// and & (\u00XX), 1 for the rest.
var asciiEscapedLen = func() (t [utf8.RuneSelf]uint8) {
	for c := range t {
		switch {
		case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t':
			t[c] = 2
		case c < 0x20 || c == '<' || c == '>' || c == '&':
			t[c] = 6
		default:
			t[c] = 1
		}
	}
	return t
}()

// fitter packs items into a page under the result ceiling, digesting the
// bytes each item contributes to the page's content_hash.
type fitter struct {
	ceiling int
	used    int // conservative running estimate
	items   []json.RawMessage
	digest  hash.Hash
}

// envelopeReserve covers the page's fixed parts (keys, a cursor, the hash)
// in both copies.
const envelopeReserve = 2*cursorReserve + 600

// cursorReserve bounds an issued cursor's length.
const cursorReserve = 1024

func newFitter(ceiling int64) *fitter {
	return &fitter{ceiling: int(ceiling), used: envelopeReserve + metaReserve, digest: sha256.New()}
}

// cost is the estimated cost of one more item.
func itemCost(b []byte) int { return len(b) + 1 + escapedLen(b) + 2 }

// add appends the item b if it fits, digesting hashed (the item's bytes as
// content_hash counts them: docs/reference.md, Results and pages), and
// reports whether it did.
func (f *fitter) add(b, hashed []byte) bool {
	c := itemCost(b)
	if f.used+c > f.ceiling {
		return false
	}
	f.used += c
	f.items = append(f.items, json.RawMessage(b))
	f.digest.Write(hashed)
	return true
}

// Add is add for an item of a search_text page (paging.Result).
func (f *fitter) Add(it paging.Item) bool { return f.add(it.JSON, it.Hashed) }

// Len is the number of items on the page.
func (f *fitter) Len() int { return len(f.items) }

// Room is what more items may cost (itemCost) under the ceiling.
func (f *fitter) Room() int { return f.ceiling - f.used }

// hash is the page's content_hash: the digest of what the items added.
func (f *fitter) hash() string { return hashString(f.digest) }

// finish renders the page with the given cursor, checking the real size;
// it fails only if the estimate was wrong, which is a bug.
func (f *fitter) finish(next *string) (*mcp.CallToolResult, error) {
	if next != nil && len(*next) > cursorReserve {
		return nil, fmt.Errorf("cursor of %d bytes exceeds its reserve", len(*next))
	}
	b := renderPage(f.items, next, f.hash())
	if n := resultSize(b); n > f.ceiling {
		return nil, fmt.Errorf("page of %d bytes exceeds the ceiling %d", n, f.ceiling)
	}
	return resultFor(b), nil
}

// renderPage writes the page envelope around items that are already
// compact JSON. Cursors are base64url and dots, and hashes "sha256:" and
// hex, so neither needs escaping.
func renderPage(items []json.RawMessage, next *string, hash string) []byte {
	n := 64 + len(hash)
	for _, it := range items {
		n += len(it) + 1
	}
	if next != nil {
		n += len(*next)
	}
	b := make([]byte, 0, n)
	b = append(b, `{"items":[`...)
	for i, it := range items {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, it...)
	}
	b = append(b, `],"next_cursor":`...)
	if next == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '"')
		b = append(b, *next...)
		b = append(b, '"')
	}
	b = append(b, `,"content_hash":"`...)
	b = append(b, hash...)
	return append(b, `"}`...)
}

// contentHash is the content_hash of b: "sha256:" and the SHA-256 of b in
// lowercase hex.
func contentHash(b []byte) string {
	s := sha256.Sum256(b)
	return hashPrefix + hex.EncodeToString(s[:])
}

func hashString(h hash.Hash) string { return hashPrefix + hex.EncodeToString(h.Sum(nil)) }

const hashPrefix = "sha256:"
