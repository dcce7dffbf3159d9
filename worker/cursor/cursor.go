// Package cursor issues and checks the opaque page cursors of a root.
//
// A cursor is spelled <body>.<signature>, each part unpadded base64url. The
// body is JSON: a digest of the scope it was issued for (the root's name,
// the tool, and the arguments that shape the traversal) and the tool's
// position. The signature is an HMAC-SHA256 of the body under the root's
// key. A cursor must come back exactly as issued: any other base64 spelling
// of the same bytes is refused.
//
// Decode tells the failures apart in the order docs/reference.md, Cursors,
// checks them: ErrInvalid (not one this process signed), then ErrTraversal
// (signed, but for another scope). The tools then check ErrChanged (the
// state it binds moved) and ErrPosition (a position beyond the data).
package cursor

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/fsmcp/fsmcp/internal/cursorkey"
)

// MaxLen bounds the length of a cursor string accepted for decoding.
const MaxLen = 4096

// MinKeyBytes is the shortest signing key accepted.
const MinKeyBytes = cursorkey.MinBytes

// The cursor failures, in the order they are checked; their texts are
// those of docs/reference.md, Cursors.
var (
	// ErrInvalid: not a string, empty, too long, malformed, or not signed
	// with this process's key.
	ErrInvalid = errors.New("cursor is not valid")
	// ErrTraversal: signed, but for another root, tool or arguments.
	ErrTraversal = errors.New("cursor was issued for a different traversal")
	// ErrChanged: the state the cursor binds no longer holds.
	ErrChanged = errors.New("the filesystem changed since this cursor was issued; start the traversal again")
	// ErrPosition: the position lies beyond the data.
	ErrPosition = errors.New("cursor position is not valid")
)

// Codec signs and verifies cursors for one root.
type Codec struct {
	key  []byte
	root string
}

// New returns a codec signing with key (at least MinKeyBytes) for the named
// root.
func New(key []byte, root string) (*Codec, error) {
	if len(key) < MinKeyBytes {
		return nil, fmt.Errorf("cursor key is %d bytes; at least %d are needed", len(key), MinKeyBytes)
	}
	return &Codec{key: append([]byte(nil), key...), root: root}, nil
}

// RandomKey returns a fresh key for process-affine cursors.
func RandomKey() []byte {
	k := make([]byte, MinKeyBytes)
	if _, err := rand.Read(k); err != nil {
		panic(fmt.Sprintf("crypto/rand: %v", err))
	}
	return k
}

// Scope identifies the call a cursor belongs to.
type Scope struct {
	Tool string
	Args any // the arguments that shape the traversal, cursor and limit left out
}

// scopeDigest binds a cursor to the root, the tool and the arguments.
func (c *Codec) scopeDigest(s Scope) (string, error) {
	args, err := json.Marshal(s.Args)
	if err != nil {
		return "", fmt.Errorf("cursor scope: %w", err)
	}
	h := sha256.New()
	for _, part := range [][]byte{[]byte("fsmcp-cursor-v2"), []byte(c.root), []byte(s.Tool), args} {
		var n [8]byte
		binary.LittleEndian.PutUint64(n[:], uint64(len(part)))
		h.Write(n[:])
		h.Write(part)
	}
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil)[:16]), nil
}

func (c *Codec) sign(body []byte) []byte {
	m := hmac.New(sha256.New, c.key)
	m.Write(body)
	return m.Sum(nil)
}

// envelope is a cursor's body: the scope digest and the tool's position.
type envelope struct {
	Scope string          `json:"k"`
	Pos   json.RawMessage `json:"p"`
}

// Encode issues a cursor carrying pos for the scope.
func (c *Codec) Encode(s Scope, pos any) (string, error) {
	p, err := json.Marshal(pos)
	if err != nil {
		return "", fmt.Errorf("cursor body: %w", err)
	}
	k, err := c.scopeDigest(s)
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(envelope{Scope: k, Pos: p})
	if err != nil {
		return "", fmt.Errorf("cursor body: %w", err)
	}
	enc := base64.RawURLEncoding
	return enc.EncodeToString(b) + "." + enc.EncodeToString(c.sign(b)), nil
}

// Decode verifies token and unpacks its position into pos: ErrInvalid
// unless this codec signed it exactly so, ErrTraversal when it was issued
// for another scope.
func (c *Codec) Decode(token string, s Scope, pos any) error {
	if len(token) > MaxLen {
		return ErrInvalid
	}
	bodyPart, sigPart, ok := strings.Cut(token, ".")
	if !ok {
		return ErrInvalid
	}
	body, ok1 := canonical(bodyPart)
	sig, ok2 := canonical(sigPart)
	if !ok1 || !ok2 || !hmac.Equal(sig, c.sign(body)) {
		return ErrInvalid
	}
	var e envelope
	if err := json.Unmarshal(body, &e); err != nil {
		return ErrInvalid
	}
	k, err := c.scopeDigest(s)
	if err != nil {
		return err
	}
	if e.Scope != k {
		return ErrTraversal
	}
	if err := json.Unmarshal(e.Pos, pos); err != nil {
		return ErrInvalid
	}
	return nil
}

// canonical decodes s, unpadded base64url spelled exactly as this package
// spells it.
func canonical(s string) ([]byte, bool) {
	enc := base64.RawURLEncoding
	b, err := enc.Strict().DecodeString(s)
	if err != nil || len(b) == 0 || enc.EncodeToString(b) != s {
		return nil, false
	}
	return b, true
}
