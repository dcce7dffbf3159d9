package worker

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// escapedLenSwitch is escapedLen as it was, a switch a byte: the
// reference the table-driven one must agree with.
func escapedLenSwitch(b []byte) int {
	n := 0
	for i := 0; i < len(b); {
		c := b[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t':
				n += 2
			case c < 0x20 || c == '<' || c == '>' || c == '&':
				n += 6
			default:
				n++
			}
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

// encodedLen is what encoding/json writes for b as a string, less the
// quotes.
func encodedLen(t *testing.T, b []byte) int {
	t.Helper()
	enc, err := json.Marshal(string(b))
	if err != nil {
		t.Fatal(err)
	}
	return len(enc) - 2
}

func TestEscapedLen(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want int
	}{
		{"plain", "abc 123", 7},
		{"letter escapes", "\"\\\n\r\t", 10},
		{"other controls", "\x00\x1f\b\f", 24},
		{"html", "<>&", 18},
		{"two-byte rune", "é", 2},
		{"line separators", "\u2028\u2029", 12},
		{"invalid byte", "\xff", 6},
		{"truncated rune", "\xe2\x80", 12},
		{"empty", "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := []byte(tt.in)
			if got := escapedLen(b); got != tt.want {
				t.Errorf("escapedLen(%q) = %d, want %d", tt.in, got, tt.want)
			}
			if enc := encodedLen(t, b); enc > tt.want {
				t.Errorf("encoding/json writes %d bytes for %q, more than the bound %d", enc, tt.in, tt.want)
			}
		})
	}
}

func FuzzEscapedLen(f *testing.F) {
	for _, s := range []string{"a\"b\\c\n", "<é>\u2028\xff", strings.Repeat("x\t", 50), "\x00\x7f\x80"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got := escapedLen(b)
		if want := escapedLenSwitch(b); got != want {
			t.Fatalf("escapedLen(%q) = %d, the switch-based reference %d", b, got, want)
		}
		if enc := encodedLen(t, b); enc > got {
			t.Fatalf("encoding/json writes %d bytes for %q, more than the bound %d", enc, b, got)
		}
	})
}

func benchEscapedLen(b *testing.B, fn func([]byte) int) {
	text := []byte(strings.Repeat("0123456789abcdef fsmcp one-chunk page line\n", 24))
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		fn(text)
	}
}

func BenchmarkEscapedLen(b *testing.B)       { benchEscapedLen(b, escapedLen) }
func BenchmarkEscapedLenSwitch(b *testing.B) { benchEscapedLen(b, escapedLenSwitch) }
