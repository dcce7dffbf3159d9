// Package textscan is the byte-oriented literal scanner behind the
// search_text tool. It is a pure package: it knows nothing about MCP or
// directory walking; it scans the bytes of one file, given as an
// io.ReaderAt and a size, under a byte budget, and can be resumed.
//
// # Matching
//
// A Matcher holds 1..MaxTerms literal byte strings. With foldASCII only the
// ASCII letters A-Z/a-z are folded, on both sides; every other byte
// (including all bytes of multi-byte UTF-8 sequences) must match exactly, so
// "CAFÉ" matches "cafÉ" but not "café". A line that contains several terms
// is reported once.
//
// Matching runs in time linear in the bytes scanned, whatever the terms
// (up to MaxTerms of up to 256 bytes): each term is looked for by its rarest
// byte and compared, which is fastest on ordinary text (several terms at
// once by a SIMD prefilter on their rarest three bytes, see teddy), and a
// guard counts the comparison work; where it would exceed twice the bytes
// scanned (text made of a term's own bytes, many terms) the rest of the
// scan runs on an Aho-Corasick automaton, one table lookup per byte for all terms, folding
// through its byte classes (see Scanner.find). MatchString, for paths, uses
// the automaton for anything but one case-sensitive term.
//
// # Lines and evidence
//
// Lines are split on '\n'. A file without a trailing newline still has its
// last line; an empty file has no lines. Matching is done on raw bytes. A
// matching line is reported once, with its 1-based number and its evidence:
// the line without its '\n' and a trailing '\r', cut to at most
// MaxEvidenceBytes on a UTF-8 boundary (see Evidence). A matching line
// whose evidence is not valid UTF-8 is skipped alone. Binary detection
// (LooksBinary) is separate: the caller decides whether to scan a file at
// all.
//
// # Budget and resumption
//
// Scan reads no byte past its budget, even inside a line, and returns the
// position to resume from, which may lie inside a line: it carries the
// line's number and start, and whether the line was already reported. A
// resumed scan reads again the few bytes before that position where a term
// cut by the budget may start, so a match is found exactly once however
// the file is cut into calls. A page that ends inside a line that started
// on it resumes at that line's start instead. Lines of any length are
// scanned in buffers of bounded size; evidence is read from the line's
// start.
package textscan

import (
	"errors"
	"fmt"
	"strings"
	"sync"
)

const (
	// MaxEvidenceBytes is the longest evidence text reported for a line.
	MaxEvidenceBytes = 1024
	// HeadBytes is how much of a file's opening LooksBinary judges.
	HeadBytes = 8192
	// MaxTerms is the largest number of terms a Matcher accepts.
	MaxTerms = 16

	// readChunk is the usual size of one ReadAt.
	readChunk = 256 << 10
)

// Errors returned by NewMatcher.
var (
	ErrNoTerms      = errors.New("textscan: no search terms")
	ErrTooManyTerms = fmt.Errorf("textscan: more than %d search terms", MaxTerms)
	ErrEmptyTerm    = errors.New("textscan: empty search term")
	ErrTermNewline  = errors.New("textscan: search term contains a line break (\\n or \\r)")
)

// lower maps ASCII upper-case letters to lower case and every other byte to
// itself.
var lower = func() (t [256]byte) {
	for i := range t {
		t[i] = byte(i)
	}
	for c := 'A'; c <= 'Z'; c++ {
		t[c] = byte(c + 'a' - 'A')
	}
	return t
}()

// upper is the inverse of lower for ASCII letters.
var upper = func() (t [256]byte) {
	for i := range t {
		t[i] = byte(i)
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c] = byte(c - 'a' + 'A')
	}
	return t
}()

// freq is a rough frequency rank of bytes in source code and prose; the
// rarest byte of a term is the memchr anchor the search looks for first.
var freq = func() (t [256]uint16) {
	for i := range t {
		switch {
		case i < 0x20 || i == 0x7f:
			t[i] = 2
		case i >= 0x80:
			t[i] = 20
		case i >= 'A' && i <= 'Z':
			t[i] = 45
		case i >= '0' && i <= '9':
			t[i] = 60
		default:
			t[i] = 40 // punctuation
		}
	}
	t['\t'] = 120
	t[' '] = 255
	for i, c := range []byte("etaoinsrhldcumfpgwybvkxjqz") {
		t[c] = uint16(220 - 7*i)
	}
	for _, c := range []byte("(),.;=\"_-/*:") {
		t[c] = 100
	}
	t['0'], t['1'] = 90, 90
	for _, c := range []byte("ETAISCDNR") {
		t[c] = 60
	}
	return t
}()

type term struct {
	b    []byte // the term, lower-cased when folding
	s    string // string(b)
	rare int    // index of the anchor byte
	c1   byte   // anchor byte, lower case
	c2   byte   // anchor byte, other case (== c1 for non-letters)
}

// Matcher is an immutable set of literal terms; it is safe for concurrent
// use.
type Matcher struct {
	terms  []term
	fold   bool
	maxLen int

	// td is the SIMD prefilter, with windows chosen by the static byte
	// frequencies, for terms that would take several anchor passes where
	// the CPU has one (see teddy, useTeddy); else nil.
	td *teddy

	autoOnce sync.Once
	ac       *automaton // built on first use
}

// auto returns the matcher's Aho-Corasick automaton, building it once.
func (m *Matcher) auto() *automaton {
	m.autoOnce.Do(func() { m.ac = newAutomaton(m.terms, m.fold) })
	return m.ac
}

// NewMatcher builds a Matcher for 1..MaxTerms non-empty terms, none
// containing '\n' or '\r'. With foldASCII, ASCII letters match regardless of
// case.
func NewMatcher(terms []string, foldASCII bool) (*Matcher, error) {
	if len(terms) == 0 {
		return nil, ErrNoTerms
	}
	if len(terms) > MaxTerms {
		return nil, ErrTooManyTerms
	}
	m := &Matcher{fold: foldASCII}
	seen := make(map[string]bool, len(terms))
	for _, t := range terms {
		if t == "" {
			return nil, ErrEmptyTerm
		}
		if strings.ContainsAny(t, "\n\r") {
			return nil, ErrTermNewline
		}
		b := []byte(t)
		if foldASCII {
			for i, c := range b {
				b[i] = lower[c]
			}
		}
		if seen[string(b)] {
			continue // duplicates change nothing
		}
		seen[string(b)] = true
		tm := term{b: b, s: string(b)}
		best := -1
		for i, c := range b {
			f := int(freq[c])
			if foldASCII && upper[c] != c {
				f += int(freq[upper[c]])
			}
			if best < 0 || f < best {
				best, tm.rare = f, i
			}
		}
		tm.c1 = b[tm.rare]
		tm.c2 = tm.c1
		if foldASCII {
			tm.c2 = upper[tm.c1]
		}
		m.terms = append(m.terms, tm)
		m.maxLen = max(m.maxLen, len(b))
	}
	if useTeddy(m.terms) {
		m.td = newTeddy(m.terms, foldASCII, staticWindows(m.terms, foldASCII))
	}
	return m, nil
}

// MaxTermLen is the length in bytes of the longest term.
func (m *Matcher) MaxTermLen() int { return m.maxLen }

// MatchString reports whether any term occurs in s, in time linear in
// len(s) whatever the terms: one case-sensitive term is strings.Contains,
// anything else one pass of the Aho-Corasick automaton.
func (m *Matcher) MatchString(s string) bool {
	if len(m.terms) == 1 && !m.fold {
		return strings.Contains(s, m.terms[0].s)
	}
	return find(m.auto(), s, 0) >= 0
}

// foldEq reports whether b equals t (lower-cased) with ASCII letters folded;
// len(b) == len(t).
func foldEq(b, t []byte) bool {
	for i, c := range t {
		if lower[b[i]] != c {
			return false
		}
	}
	return true
}
