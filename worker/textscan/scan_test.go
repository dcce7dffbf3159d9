package textscan

import (
	"bytes"
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// ---- naive reference ----

func lowerASCII(b []byte) []byte {
	out := make([]byte, len(b))
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		out[i] = c
	}
	return out
}

// refEvidence is the evidence of a whole line (without its '\n'): a
// trailing CR dropped, the rest cut to MaxEvidenceBytes without splitting
// the rune at the cut.
func refEvidence(ln []byte) (string, bool) {
	ln = bytes.TrimSuffix(ln, []byte("\r"))
	if len(ln) > MaxEvidenceBytes {
		cut := MaxEvidenceBytes - 3
		for k := 0; k <= 3; k++ {
			if utf8.RuneStart(ln[MaxEvidenceBytes-k]) {
				cut = MaxEvidenceBytes - k
				break
			}
		}
		ln = ln[:cut]
	}
	return string(ln), utf8.Valid(ln)
}

// reference scans text the slow way: split lines, bytes.Contains on folded
// copies.
func reference(text []byte, terms []string, fold bool) []Match {
	var ft [][]byte
	for _, t := range terms {
		b := []byte(t)
		if fold {
			b = lowerASCII(b)
		}
		ft = append(ft, b)
	}
	var out []Match
	off, line := 0, 1
	for off < len(text) {
		var ln []byte
		nextOff := len(text)
		if e := bytes.IndexByte(text[off:], '\n'); e >= 0 {
			ln, nextOff = text[off:off+e], off+e+1
		} else {
			ln = text[off:]
		}
		hay := ln
		if fold {
			hay = lowerASCII(ln)
		}
		hit := false
		for _, t := range ft {
			hit = hit || bytes.Contains(hay, t)
		}
		if txt, ok := refEvidence(ln); hit && ok {
			out = append(out, Match{Line: line, Offset: int64(off), Text: txt})
		}
		off, line = nextOff, line+1
	}
	return out
}

// ---- helpers ----

func newTestScanner(t testing.TB, terms []string, fold bool, chunk int) *Scanner {
	t.Helper()
	m, err := NewMatcher(terms, fold)
	if err != nil {
		t.Fatal(err)
	}
	s := NewScanner(m)
	if chunk > 0 {
		s.chunk = chunk
	}
	return s
}

// scanAll runs successive Scan calls with the given budget (at least the
// longest term) until done, checking the resume invariants, and returns
// all matches.
func scanAll(t testing.TB, s *Scanner, text []byte, budget int64) []Match {
	t.Helper()
	budget = max(budget, int64(s.m.MaxTermLen()))
	r := bytes.NewReader(text)
	size := int64(len(text))
	var got []Match
	pos := Position{}
	for calls := 0; ; calls++ {
		if calls > len(text)+2 {
			t.Fatalf("no progress: %d calls for %d bytes", calls, len(text))
		}
		next, scanned, done, stopped, err := s.Scan(r, size, pos, budget, func(m Match) bool {
			got = append(got, m)
			return true
		})
		if err != nil || stopped {
			t.Fatal(err, stopped)
		}
		if scanned > budget {
			t.Fatalf("scanned %d bytes with a budget of %d", scanned, budget)
		}
		if done {
			if next.Offset != size {
				t.Fatalf("done at %d of %d", next.Offset, size)
			}
			return got
		}
		if next.Offset <= pos.Offset {
			t.Fatalf("no progress from %+v to %+v", pos, next)
		}
		checkPosition(t, text, next)
		pos = next
	}
}

// checkPosition checks that p's line number and line start are those of
// its offset.
func checkPosition(t testing.TB, text []byte, p Position) {
	t.Helper()
	if want := 1 + bytes.Count(text[:p.Offset], []byte("\n")); p.Line != want {
		t.Fatalf("resume at %d: line %d, want %d", p.Offset, p.Line, want)
	}
	if want := int64(bytes.LastIndexByte(text[:p.Offset], '\n') + 1); p.LineStart != want {
		t.Fatalf("resume at %d: line start %d, want %d", p.Offset, p.LineStart, want)
	}
}

func checkMatches(t testing.TB, got, want []Match) {
	t.Helper()
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("matches differ\n got: %+v\nwant: %+v", got, want)
	}
	for _, m := range got {
		if !utf8.ValidString(m.Text) || len(m.Text) > MaxEvidenceBytes {
			t.Fatalf("bad evidence %q", m.Text)
		}
	}
}

// ---- tests ----

func TestNewMatcherErrors(t *testing.T) {
	many := make([]string, MaxTerms+1)
	for i := range many {
		many[i] = fmt.Sprint("t", i)
	}
	for _, tc := range []struct {
		terms []string
		err   error
	}{
		{nil, ErrNoTerms},
		{many, ErrTooManyTerms},
		{[]string{"a", ""}, ErrEmptyTerm},
		{[]string{"a\nb"}, ErrTermNewline},
		{[]string{"a\r"}, ErrTermNewline},
		{many[:MaxTerms], nil},
	} {
		_, err := NewMatcher(tc.terms, false)
		if err != tc.err {
			t.Errorf("%q: err %v, want %v", tc.terms, err, tc.err)
		}
	}
}

func TestMatchString(t *testing.T) {
	for _, tc := range []struct {
		terms []string
		fold  bool
		s     string
		want  bool
	}{
		{[]string{"foo"}, false, "a/foo/b", true},
		{[]string{"foo"}, false, "a/FOO/b", false},
		{[]string{"foo"}, true, "a/FOO/b", true},
		{[]string{"CAFÉ"}, true, "cafÉ.txt", true},
		{[]string{"CAFÉ"}, true, "café.txt", false},
		{[]string{"x", "yz"}, false, "ayzb", true},
		{[]string{"x", "yz"}, false, "ay zb", false},
		{[]string{"long-term"}, true, "lon", false},
	} {
		m, err := NewMatcher(tc.terms, tc.fold)
		if err != nil {
			t.Fatal(err)
		}
		if got := m.MatchString(tc.s); got != tc.want {
			t.Errorf("%q fold=%v in %q: %v, want %v", tc.terms, tc.fold, tc.s, got, tc.want)
		}
	}
}

func TestScanCases(t *testing.T) {
	long := strings.Repeat("é", 600) // 1200 bytes
	for _, tc := range []struct {
		name  string
		terms []string
		fold  bool
		text  string
		want  []Match
	}{
		{"empty file", []string{"a"}, false, "", nil},
		{"single", []string{"needle"}, false, "hay\na needle here\nhay\n",
			[]Match{{2, 4, "a needle here"}}},
		{"no trailing newline", []string{"end"}, false, "a\nthe end",
			[]Match{{2, 2, "the end"}}},
		{"case sensitive", []string{"Foo"}, false, "foo\nFoo\nFOO\n",
			[]Match{{2, 4, "Foo"}}},
		{"fold", []string{"Foo"}, true, "foo\nFoo\nFOO\nbar\n",
			[]Match{{1, 0, "foo"}, {2, 4, "Foo"}, {3, 8, "FOO"}}},
		{"fold ascii only", []string{"CAFÉ"}, true, "café\nCAFÉ\ncafÉ\n",
			[]Match{{2, 6, "CAFÉ"}, {3, 12, "cafÉ"}}},
		{"multi term once per line", []string{"alpha", "beta", "pha"}, false,
			"alpha beta\nnone\nbeta\nalphabet\n",
			[]Match{{1, 0, "alpha beta"}, {3, 16, "beta"}, {4, 21, "alphabet"}}},
		{"CR dropped", []string{"win"}, false, "win\r\nx\r\nwin\r",
			[]Match{{1, 0, "win"}, {3, 8, "win"}}},
		{"inner CR kept", []string{"a"}, false, "a\rb\r\n", []Match{{1, 0, "a\rb"}}},
		{"evidence cut on rune boundary", []string{"x"}, false, "x" + long + "\n",
			[]Match{{1, 0, "x" + strings.Repeat("é", 511)}}},
		{"evidence exact", []string{"x"}, false, strings.Repeat("x", 1024) + "\r\n",
			[]Match{{1, 0, strings.Repeat("x", 1024)}}},
		{"evidence cut before a CR", []string{"x"}, false, strings.Repeat("x", 1025) + "\r\n",
			[]Match{{1, 0, strings.Repeat("x", 1024)}}},
		{"invalid after the evidence kept", []string{"x"}, false, strings.Repeat("x", 1030) + "\xff\n",
			[]Match{{1, 0, strings.Repeat("x", 1024)}}},
		{"invalid line skipped alone", []string{"key"}, false,
			"key ok\nkey \xff bad\nkey ok2\n\xfe no match\n",
			[]Match{{1, 0, "key ok"}, {3, 17, "key ok2"}}},
		{"empty lines", []string{"z"}, false, "\n\n\nz\n\n", []Match{{4, 3, "z"}}},
		{"overlapping candidates fold", []string{"aab"}, true, "AAAAB\naaab\n",
			[]Match{{1, 0, "AAAAB"}, {2, 6, "aaab"}}},
		{"term at end", []string{"ab"}, true, "xxAB", []Match{{1, 0, "xxAB"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if ref := reference([]byte(tc.text), tc.terms, tc.fold); !reflect.DeepEqual(ref, tc.want) && !(len(ref) == 0 && len(tc.want) == 0) {
				t.Fatalf("reference disagrees with table: %+v", ref)
			}
			for _, budget := range []int64{1, 3, 100, 1 << 30} {
				s := newTestScanner(t, tc.terms, tc.fold, 0)
				checkMatches(t, scanAll(t, s, []byte(tc.text), budget), tc.want)
			}
		})
	}
}

func TestLooksBinary(t *testing.T) {
	pad := func(s string) []byte { // put s at the end of an 8 KiB head
		return []byte(strings.Repeat("a", HeadBytes-len(s)) + s)
	}
	for _, tc := range []struct {
		name string
		head []byte
		want bool
	}{
		{"empty", nil, false},
		{"text", []byte("hello\nworld\n"), false},
		{"NUL and invalid same line", []byte("ok\na\x00b\xffc\nok\n"), true},
		{"NUL and invalid different lines", []byte("a\x00b\nc\xffd\n"), false},
		{"NUL only", []byte("a\x00b\x00\n\x00\n"), false},
		{"invalid only", []byte("a\xffb\n\xfe\n"), false},
		{"NUL with valid UTF-8", []byte("é\x00ü\n"), false},
		{"NUL line last without newline", []byte("x\n\x00\xff"), true},
		{"second NUL line bad", []byte("\x00ok\nfine\n\x00\xc3\n"), true},
		{"truncated rune at cut forgiven", pad("\n\x00\xe2\x82"), false},
		{"truncated rune at end of short file", []byte("\x00\xe2\x82"), true},
		{"invalid before cut", pad("\n\x00\xe2\x41"), true},
		{"beyond head ignored", append(pad("\n"), "\x00\xff"...), false},
	} {
		if got := LooksBinary(tc.head); got != tc.want {
			t.Errorf("%s: LooksBinary = %v, want %v", tc.name, got, tc.want)
		}
	}
	s := newTestScanner(t, []string{"x"}, false, 0)
	text := []byte("a\x00\xff\n")
	if bin, err := s.IsBinary(bytes.NewReader(text), int64(len(text)), 1<<20); err != nil || !bin {
		t.Errorf("IsBinary = %v, %v", bin, err)
	}
}

var pieces = []string{
	"foo", "FOO", "Foo", "bar", "BAR", "baz", "qux", "café", "CAFÉ", "é", "日本",
	" ", " ", " ", "x", "y", "\n", "\n", "\n", "\r\n", "\r", "\xff", "\x00", "\xe2\x82",
	"fo", "o", "ba", "r", "aaaa", "ab",
}

func randText(rng *rand.Rand, n int) []byte {
	var b []byte
	for len(b) < n {
		if rng.Intn(40) == 0 { // occasional long line
			for range 20 + rng.Intn(100) {
				b = append(b, pieces[rng.Intn(len(pieces)-5)]...)
			}
			continue
		}
		b = append(b, pieces[rng.Intn(len(pieces))]...)
	}
	return b
}

var termSets = [][]string{
	{"foo"}, {"o"}, {"bar", "baz"}, {"café"}, {"CAFÉ"}, {"aa"}, {"ab", "b", "foo bar"},
	{"qux", "日本", "x y", "\xff", "é"}, {"oo", "Fo", "BA", "r\r"[:1]},
}

// TestResumeExact checks that for many budgets and chunk sizes the union
// of successive Scan calls equals one unbounded scan and the naive
// reference, without duplicates, and that no call reads past its budget.
func TestResumeExact(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	budgets := []int64{1, 2, 3, 7, 64, 1000, 1 << 40}
	for iter := range 60 {
		text := randText(rng, 1+rng.Intn(3000))
		terms := termSets[rng.Intn(len(termSets))]
		fold := rng.Intn(2) == 0
		want := reference(text, terms, fold)
		for _, chunk := range []int{1, 5, 64, readChunk} {
			s := newTestScanner(t, terms, fold, chunk)
			s.alwaysLinear = iter%2 == 1 // the automaton alone
			full := scanAll(t, s, text, 1<<40)
			checkMatches(t, full, want)
			for _, b := range budgets {
				got := scanAll(t, s, text, b)
				if !reflect.DeepEqual(got, full) {
					t.Fatalf("iter %d terms %q fold %v chunk %d budget %d:\n got %+v\nfull %+v",
						iter, terms, fold, chunk, b, got, full)
				}
			}
		}
	}
}

// TestEmitStop: a match emit refuses is found again, at the same line, by
// the call that resumes from where Scan stopped.
func TestEmitStop(t *testing.T) {
	text := []byte("m1\nx\nm2\nm3\r\nx\nm4")
	s := newTestScanner(t, []string{"m"}, false, 0)
	r := bytes.NewReader(text)
	var got []Match
	pos := Position{}
	refuse := true
	for calls := 0; calls < 20; calls++ {
		var refused *Match
		next, _, done, stopped, err := s.Scan(r, int64(len(text)), pos, 1<<20, func(m Match) bool {
			if refuse {
				refuse, refused = false, &m
				return false
			}
			refuse = true
			got = append(got, m)
			return true
		})
		if err != nil {
			t.Fatal(err)
		}
		if stopped != (refused != nil) {
			t.Fatalf("stopped=%v, refused %v", stopped, refused)
		}
		if stopped {
			checkPosition(t, text, next)
			if next.LineStart != refused.Offset {
				t.Fatalf("stopped at %+v, want the line at %d", next, refused.Offset)
			}
		}
		if done {
			checkMatches(t, got, []Match{{1, 0, "m1"}, {3, 5, "m2"}, {4, 8, "m3"}, {6, 14, "m4"}})
			return
		}
		pos = next
	}
	t.Fatal("no end after 20 calls")
}

// TestLongLine: a line longer than several read buffers, with matches
// straddling the buffer edges, is reported once, with the evidence of its
// start, whatever the budget; and the budget is never overrun.
func TestLongLine(t *testing.T) {
	line := bytes.Repeat([]byte("abcdefgh"), (5*readChunk/2)/8)
	copy(line[readChunk-3:], "NEEDLE")    // straddles the first buffer's edge
	copy(line[2*readChunk+10:], "NEEDLE") // later in the same line
	text := append([]byte("first NEEDLE\n"), line...)
	text = append(text, "\nlast NEEDLE\n"...)
	want := []Match{
		{1, 0, "first NEEDLE"},
		{2, 13, string(line[:MaxEvidenceBytes])},
		{3, int64(13 + len(line) + 1), "last NEEDLE"},
	}
	checkMatches(t, reference(text, []string{"NEEDLE"}, true), want)
	for _, b := range []int64{700, 16384, readChunk, 1 << 40} {
		s := newTestScanner(t, []string{"needle"}, true, 0)
		checkMatches(t, scanAll(t, s, text, b), want)
		if cap(s.buf) > 2*readChunk+2*maxTermBytes {
			t.Fatalf("buffer grew to %d", cap(s.buf))
		}
	}
	// Only the end of the line matches: pages that find nothing until the
	// one whose bytes hold the match.
	line = bytes.Repeat([]byte("x"), 600000)
	copy(line[len(line)-6:], "needle")
	s := newTestScanner(t, []string{"needle"}, false, 0)
	checkMatches(t, scanAll(t, s, line, 16384), []Match{{1, 0, string(line[:MaxEvidenceBytes])}})
}

func FuzzScan(f *testing.F) {
	f.Add([]byte("foo\nbar\r\nFOO baz\n"), "foo|baz", true, uint16(3), false)
	f.Add([]byte("café\nCAFÉ\x00\xff\n"), "CAFÉ", true, uint16(1), false)
	f.Add([]byte("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab\naab"), "aab|b", false, uint16(7), true)
	f.Add([]byte(strings.Repeat("xé", 100)+"\nx"), "x|é", false, uint16(0), true)
	// The anchor byte (x) everywhere, the term nowhere until the end: the
	// case-sensitive search gives up on the anchor and uses bytes.Index.
	f.Add([]byte(strings.Repeat("x", 600)+"xa\n"+strings.Repeat("xx\n", 50)+"xa"), "xa", false, uint16(100), false)
	f.Fuzz(func(t *testing.T, text []byte, spec string, fold bool, budget uint16, small bool) {
		var terms []string
		for _, tm := range strings.Split(spec, "|") {
			if tm != "" && !strings.ContainsAny(tm, "\r\n") && len(terms) < MaxTerms {
				terms = append(terms, tm)
			}
		}
		if len(terms) == 0 {
			return
		}
		chunk := readChunk
		if small {
			chunk = 7
		}
		want := reference(text, terms, fold)
		for _, linear := range []bool{false, true} {
			s := newTestScanner(t, terms, fold, chunk)
			s.alwaysLinear = linear
			checkMatches(t, scanAll(t, s, text, 1<<40), want)
			checkMatches(t, scanAll(t, s, text, int64(budget)), want)
		}
		m, _ := NewMatcher(terms, fold)
		if got, exp := m.MatchString(string(text)), refContains(text, terms, fold); got != exp {
			t.Fatalf("MatchString = %v, want %v", got, exp)
		}
	})
}

func refContains(text []byte, terms []string, fold bool) bool {
	if fold {
		text = lowerASCII(text)
	}
	for _, tm := range terms {
		b := []byte(tm)
		if fold {
			b = lowerASCII(b)
		}
		if bytes.Contains(text, b) {
			return true
		}
	}
	return false
}

// TestTuneAnchor: in text where the static guess for the rarest byte of a
// term is common ("q" in code full of "req"), the scanner anchors on a
// byte the text lacks, and still reports exactly the matching lines.
func TestTuneAnchor(t *testing.T) {
	var text []byte
	for i := range 2000 {
		text = append(text, "\treq := resp.Req(ctx)\n"...)
		if i == 1500 {
			text = append(text, "\tlog.Print(\"req_Needle\")\n"...)
		}
	}
	for _, fold := range []bool{false, true} {
		m, err := NewMatcher([]string{"req_needle"}, fold)
		if err != nil {
			t.Fatal(err)
		}
		s := NewScanner(m)
		var got []Match
		_, _, done, _, err := s.Scan(bytes.NewReader(text), int64(len(text)), Position{}, 1<<30, func(mt Match) bool {
			got = append(got, mt)
			return true
		})
		if err != nil || !done {
			t.Fatal(done, err)
		}
		if want := 1; fold && len(got) != want || !fold && len(got) != 0 {
			t.Fatalf("fold=%v: %d matches %v", fold, len(got), got)
		}
		if fold && got[0].Line != 1502 {
			t.Fatalf("match on line %d, want 1502", got[0].Line)
		}
		if a := s.an[0]; m.terms[0].b[a.rare] != '_' {
			t.Fatalf("fold=%v: anchored on %q, want '_'", fold, m.terms[0].b[a.rare])
		}
	}
}

func TestPositionReadsFrom(t *testing.T) {
	for _, tc := range []struct {
		pos  Position
		want int64
	}{
		{Position{}, 0},
		{Position{Offset: 100, Line: 3, LineStart: 100}, 100},            // a line's start
		{Position{Offset: 100, Line: 3, LineStart: 40}, 93},              // inside a line: 7 bytes back for 8-byte terms
		{Position{Offset: 100, Line: 3, LineStart: 97}, 97},              // not before the line's start
		{Position{Offset: 100, Line: 3, LineStart: 40, Skip: true}, 100}, // the line was reported
		{Position{Offset: -5, LineStart: -9}, 0},                         // clamped as Scan clamps
	} {
		if got := tc.pos.ReadsFrom(8); got != tc.want {
			t.Errorf("%+v.ReadsFrom(8) = %d, want %d", tc.pos, got, tc.want)
		}
	}
}
