package cursor

import (
	"encoding/base64"
	"strings"
	"testing"
)

type body struct {
	N int    `json:"n"`
	S string `json:"s"`
}

func TestRoundTripAndRefusals(t *testing.T) {
	key := RandomKey()
	c, err := New(key, "reader")
	if err != nil {
		t.Fatal(err)
	}
	scope := Scope{Tool: "list_directory", Args: map[string]any{"path": "lib"}}
	tok, err := c.Encode(scope, body{N: 3, S: "x"})
	if err != nil {
		t.Fatal(err)
	}
	var got body
	if err := c.Decode(tok, scope, &got); err != nil || got != (body{3, "x"}) {
		t.Fatalf("Decode = %+v, %v", got, err)
	}
	other, _ := New(key, "writer")
	bodyPart, sigPart, _ := strings.Cut(tok, ".")
	if strings.ContainsAny(tok, "=+/") || strings.Count(tok, ".") != 1 {
		t.Fatalf("cursor %q is not two unpadded base64url parts joined by a dot", tok)
	}
	raw, _ := base64.RawURLEncoding.DecodeString(bodyPart)
	flipped := append([]byte(nil), raw...)
	flipped[len(flipped)/2] ^= 1
	cases := []struct {
		name  string
		codec *Codec
		tok   string
		scope Scope
		want  error
	}{
		{"other root", other, tok, scope, ErrTraversal},
		{"other tool", c, tok, Scope{Tool: "search_files", Args: scope.Args}, ErrTraversal},
		{"other args", c, tok, Scope{Tool: scope.Tool, Args: map[string]any{"path": "docs"}}, ErrTraversal},
		{"other key", mustNew(t, RandomKey(), "reader"), tok, scope, ErrInvalid},
		{"flipped bit", c, base64.RawURLEncoding.EncodeToString(flipped) + "." + sigPart, scope, ErrInvalid},
		{"padded", c, tok + "=", scope, ErrInvalid},
		{"std alphabet", c, base64.StdEncoding.EncodeToString(raw) + "." + sigPart, scope, ErrInvalid},
		{"no dot", c, bodyPart + sigPart, scope, ErrInvalid},
		{"two dots", c, tok + ".", scope, ErrInvalid},
		{"empty", c, "", scope, ErrInvalid},
		{"oversized", c, strings.Repeat("A", MaxLen+1), scope, ErrInvalid},
		{"garbage", c, "not a cursor!", scope, ErrInvalid},
	}
	for _, tc := range cases {
		if err := tc.codec.Decode(tc.tok, tc.scope, &got); err != tc.want {
			t.Errorf("%s: Decode err = %v, want %v", tc.name, err, tc.want)
		}
	}
}

// TestNonCanonicalSpelling alters the unused low bits of the final base64
// character, which decodes to the same bytes under a lenient decoder.
func TestNonCanonicalSpelling(t *testing.T) {
	c := mustNew(t, RandomKey(), "r")
	scope := Scope{Tool: "t"}
	for i := range 10 {
		tok, _ := c.Encode(scope, body{S: strings.Repeat("x", i)})
		bodyPart, sigPart, _ := strings.Cut(tok, ".")
		last := bodyPart[len(bodyPart)-1]
		idx := strings.IndexByte(alphabet, last)
		altBody := bodyPart[:len(bodyPart)-1] + string(alphabet[idx^1])
		alt := altBody + "." + sigPart
		raw1, _ := base64.RawURLEncoding.DecodeString(bodyPart)
		raw2, err := base64.RawURLEncoding.DecodeString(altBody)
		if err != nil || string(raw1) != string(raw2) {
			continue // that flip changed a data bit; not an alternate spelling
		}
		var b body
		if err := c.Decode(alt, scope, &b); err != ErrInvalid {
			t.Fatalf("alternate spelling accepted: %v", err)
		}
		return
	}
	t.Fatal("no cursor length with spare bits came up")
}

const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

func FuzzDecode(f *testing.F) {
	c, _ := New(make([]byte, 32), "r")
	tok, _ := c.Encode(Scope{Tool: "t"}, body{N: 1})
	f.Add(tok)
	f.Add("")
	f.Add("AAAA")
	f.Fuzz(func(t *testing.T, s string) {
		var b body
		if err := c.Decode(s, Scope{Tool: "t"}, &b); err == nil && s != tok {
			again, _ := c.Encode(Scope{Tool: "t"}, b)
			if again != s {
				t.Fatalf("accepted a cursor it did not issue: %q", s)
			}
		}
	})
}

func mustNew(t *testing.T, key []byte, root string) *Codec {
	t.Helper()
	c, err := New(key, root)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// FuzzDecodeEdit issues a cursor for a fuzzed body and edits it at one
// place (a byte replaced, inserted or deleted): the issued spelling
// decodes to the body under its own scope only, and every other spelling
// is refused, whatever a lenient base64 decoder would make of it.
func FuzzDecodeEdit(f *testing.F) {
	c := &Codec{key: make([]byte, MinKeyBytes), root: "r"}
	scope := Scope{Tool: "t", Args: map[string]any{"path": "a"}}
	f.Add(3, "x", uint16(0), byte('A'), uint8(0))
	f.Add(0, "", uint16(9999), byte('='), uint8(1))
	f.Add(-1, "état", uint16(5), byte('-'), uint8(2))
	f.Add(1<<40, strings.Repeat("z", 300), uint16(40), byte('_'), uint8(0))
	f.Fuzz(func(t *testing.T, n int, s string, pos uint16, b byte, op uint8) {
		// Bodies are the server's own JSON; keep them valid UTF-8 so they
		// round-trip.
		want := body{N: n, S: strings.ToValidUTF8(s, "?")}
		tok, err := c.Encode(scope, want)
		if err != nil {
			t.Fatal(err)
		}
		var got body
		if len(tok) <= MaxLen {
			if err := c.Decode(tok, scope, &got); err != nil || got != want {
				t.Fatalf("issued cursor refused: %v", err)
			}
		}
		for _, other := range []Scope{{Tool: "u", Args: scope.Args}, {Tool: "t", Args: map[string]any{"path": "b"}}} {
			if c.Decode(tok, other, &got) == nil {
				t.Fatalf("cursor accepted under scope %+v", other)
			}
		}
		i := int(pos) % (len(tok) + 1)
		var edited string
		switch op % 3 {
		case 0:
			if i == len(tok) {
				i--
			}
			edited = tok[:i] + string(b) + tok[i+1:]
		case 1:
			edited = tok[:i] + string(b) + tok[i:]
		default:
			if i == len(tok) {
				i--
			}
			edited = tok[:i] + tok[i+1:]
		}
		if edited == tok {
			return
		}
		if err := c.Decode(edited, scope, &got); err != ErrInvalid {
			t.Fatalf("edited cursor %q (from %q) accepted: %v", edited, tok, err)
		}
	})
}
