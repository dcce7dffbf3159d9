// Package cursorkey reads the key that makes a root's cursors
// deterministic: canonical unpadded base64url of at least MinBytes bytes,
// given in an environment variable. The worker signs with it; the
// supervisor checks it before starting anything, so a malformed key is a
// configuration error on every path. No error shows the key.
package cursorkey

import (
	"encoding/base64"
	"errors"
	"fmt"
)

// MinBytes is the shortest key accepted.
const MinBytes = 32

// Command is a shell line that prints a fresh key, as the docs and error
// messages offer it.
const Command = `head -c 32 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n'`

// Format says what a key is, for messages.
const Format = "unpadded base64url of 32 bytes or more"

// Decode parses a key given as canonical unpadded base64url of at least
// MinBytes bytes. Its errors never include the value.
func Decode(s string) ([]byte, error) {
	if s == "" {
		return nil, errors.New("is empty")
	}
	k, err := base64.RawURLEncoding.Strict().DecodeString(s)
	if err != nil || base64.RawURLEncoding.EncodeToString(k) != s {
		return nil, errors.New("is not canonical unpadded base64url")
	}
	if len(k) < MinBytes {
		return nil, fmt.Errorf("decodes to %d bytes, fewer than %d", len(k), MinBytes)
	}
	return k, nil
}
