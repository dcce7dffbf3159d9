package worker

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// asciiCostSwitch is what escapedLen charged an ASCII byte before the
// table, a switch a byte: BenchmarkEscapedLenSwitch's loop.
func asciiCostSwitch(c byte) int {
	switch {
	case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t':
		return 2
	case c < 0x20 || c == '<' || c == '>' || c == '&':
		return 6
	}
	return 1
}

// TestASCIIEscapedLen holds the table to what encoding/json writes for
// each ASCII byte. The two exceptions are \b and \f, which encoding/json
// writes in two bytes since Go 1.22 and the table still charges as
// \u0008 and \u000c: more than they cost, which a bound may.
func TestASCIIEscapedLen(t *testing.T) {
	for c := range byte(utf8.RuneSelf) {
		want := encodedLen(t, []byte{c})
		if c == '\b' || c == '\f' {
			want = 6
		}
		if got := int(asciiEscapedLen[c]); got != want {
			t.Errorf("byte %#x costs %d, want %d", c, got, want)
		}
	}
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

func BenchmarkEscapedLen(b *testing.B) { benchEscapedLen(b, escapedLen) }

// BenchmarkEscapedLenSwitch is escapedLen's loop with the switch it had.
func BenchmarkEscapedLenSwitch(b *testing.B) {
	benchEscapedLen(b, func(p []byte) int {
		n := 0
		for _, c := range p { // the text is ASCII
			n += asciiCostSwitch(c)
		}
		return n
	})
}
