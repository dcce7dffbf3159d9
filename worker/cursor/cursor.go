// Package cursor issues and checks the opaque page cursors of a root.
//
// A cursor is unpadded base64url of a JSON body followed by an HMAC-SHA256
// tag. The tag covers the body and a scope: the root's name, the tool, and a
// digest of the call's arguments, so a cursor presented to another root,
// another tool or other arguments fails to verify. A cursor must come back
// exactly as issued: any other base64 spelling of the same bytes is refused.
package cursor

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
)

// MaxLen bounds the length of a cursor string accepted for decoding.
const MaxLen = 4096

// MinKeyBytes is the shortest signing key accepted.
const MinKeyBytes = 32

// ErrChanged is the error for a cursor whose bound state no longer holds.
var ErrChanged = errors.New("the filesystem changed since this cursor was issued; start the traversal again")

// ErrInvalid is the error for a cursor that is not one this root issued for
// this call.
var ErrInvalid = errors.New("invalid cursor: pass next_cursor exactly as returned, with the same tool and arguments, or start without a cursor")

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

// DecodeKey parses a key given as canonical unpadded base64url of at least
// MinKeyBytes bytes. Its errors never include the value.
func DecodeKey(s string) ([]byte, error) {
	if s == "" {
		return nil, errors.New("is empty")
	}
	k, err := base64.RawURLEncoding.Strict().DecodeString(s)
	if err != nil || base64.RawURLEncoding.EncodeToString(k) != s {
		return nil, errors.New("is not canonical unpadded base64url")
	}
	if len(k) < MinKeyBytes {
		return nil, fmt.Errorf("decodes to %d bytes; at least %d are needed", len(k), MinKeyBytes)
	}
	return k, nil
}

// Scope identifies the call a cursor belongs to.
type Scope struct {
	Tool string
	Args any // the arguments that shape the traversal, cursor and limit left out
}

func (c *Codec) tag(s Scope, body []byte) ([]byte, error) {
	args, err := json.Marshal(s.Args)
	if err != nil {
		return nil, fmt.Errorf("cursor scope: %w", err)
	}
	m := hmac.New(sha256.New, c.key)
	for _, part := range [][]byte{[]byte("fsmcp-cursor-v1"), []byte(c.root), []byte(s.Tool), args, body} {
		var n [8]byte
		l := len(part)
		for i := range n {
			n[i] = byte(l >> (8 * i))
		}
		m.Write(n[:])
		m.Write(part)
	}
	return m.Sum(nil), nil
}

// Encode issues a cursor carrying body for the scope.
func (c *Codec) Encode(s Scope, body any) (string, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return "", fmt.Errorf("cursor body: %w", err)
	}
	t, err := c.tag(s, b)
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(append(b, t...)), nil
}

// Decode verifies token against the scope and unpacks its body. Every
// failure is ErrInvalid.
func (c *Codec) Decode(token string, s Scope, body any) error {
	if len(token) > MaxLen || len(token) < sha256.Size {
		return ErrInvalid
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(token)
	if err != nil || base64.RawURLEncoding.EncodeToString(raw) != token || len(raw) <= sha256.Size {
		return ErrInvalid
	}
	b, got := raw[:len(raw)-sha256.Size], raw[len(raw)-sha256.Size:]
	want, err := c.tag(s, b)
	if err != nil || !hmac.Equal(got, want) {
		return ErrInvalid
	}
	if err := json.Unmarshal(b, body); err != nil {
		return ErrInvalid
	}
	return nil
}
