package textscan

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

// refLooksBinary is LooksBinary from its documentation: split the head
// into lines; the file is binary when one line holds a NUL and is not valid
// UTF-8, where the last line of a head cut at HeadBytes may end in the
// first bytes of a character without that counting against it.
func refLooksBinary(head []byte) bool {
	cut := len(head) >= HeadBytes
	if cut {
		head = head[:HeadBytes]
	}
	lines := bytes.Split(head, []byte("\n"))
	for i, ln := range lines {
		if bytes.IndexByte(ln, 0) < 0 {
			continue
		}
		if i == len(lines)-1 && cut {
			// Drop a trailing incomplete (but so far well-formed) sequence.
			for k := 1; k <= 3 && k <= len(ln); k++ {
				tail := ln[len(ln)-k:]
				if utf8.RuneStart(tail[0]) && !utf8.FullRune(tail) && utf8.Valid(append(append([]byte(nil), tail...), continuation(tail)...)) {
					ln = ln[:len(ln)-k]
					break
				}
			}
		}
		if !utf8.Valid(ln) {
			return true
		}
	}
	return false
}

// continuation completes a truncated UTF-8 sequence with the smallest
// continuation bytes, so validity of the prefix can be checked.
func continuation(prefix []byte) []byte {
	need := 0
	switch c := prefix[0]; {
	case c&0xE0 == 0xC0:
		need = 2
	case c&0xF0 == 0xE0:
		need = 3
	case c&0xF8 == 0xF0:
		need = 4
	}
	var out []byte
	for i := len(prefix); i < need; i++ {
		b := byte(0x80)
		// The second byte of E0, ED, F0 and F4 sequences is range-limited.
		if i == 1 {
			switch prefix[0] {
			case 0xE0:
				b = 0xA0
			case 0xF0:
				b = 0x90
			}
		}
		out = append(out, b)
	}
	return out
}

// FuzzLooksBinary compares LooksBinary with refLooksBinary, on heads as
// given and placed at the HeadBytes boundary (padded in front with text),
// and checks that bytes past HeadBytes never change the answer.
func FuzzLooksBinary(f *testing.F) {
	for _, s := range []string{
		"text\n", "a\x00b\n", "a\x00\xff\n", "a\x00\nb\xff\n", "\xff\n\x00", "é\x00", "\x00é", "\x00\xc3",
		"\x00\xe2\x82", "\x00\xf0\x9f\x98", "\x00\xed\xa0\x80", "\x00\xc0\xaf", "\x00\xed\xa0", "\x00\xe0\x80", "\x00\xf4\x90", "\x00\xf5", "\r\n\x00\r\n", strings.Repeat("\x00", 40),
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, b []byte, atBoundary bool) {
		if atBoundary && len(b) < HeadBytes {
			b = append(bytes.Repeat([]byte("x"), HeadBytes-len(b)), b...)
		}
		if got, want := LooksBinary(b), refLooksBinary(b); got != want {
			t.Fatalf("LooksBinary = %v, reference %v (len %d, tail %q)", got, want, len(b), b[max(0, min(len(b), HeadBytes)-16):min(len(b), HeadBytes)])
		}
		if len(b) >= HeadBytes {
			more := append(append([]byte(nil), b[:HeadBytes]...), "\xff\x00 beyond the head\n"...)
			if LooksBinary(more) != LooksBinary(b[:HeadBytes]) {
				t.Fatal("bytes past HeadBytes changed the answer")
			}
		}
	})
}
