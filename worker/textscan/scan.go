package textscan

import (
	"bytes"
	"context"
	"io"
	"math"
	"sync"
	"unicode/utf8"
)

// Position is where a scan starts or resumes: Offset, which may lie inside
// a line, in line number Line (1-based; 0 is taken as 1) that starts at
// LineStart. Skip reports that the line was already reported, so the scan
// only looks for its end. The zero value is the start of the file.
type Position struct {
	Offset    int64
	Line      int
	LineStart int64
	Skip      bool
}

// Match is one reported line.
type Match struct {
	Line   int    // 1-based line number
	Offset int64  // byte offset of the line start
	Text   string // evidence: the line without "\n"/trailing "\r", cut to MaxEvidenceBytes
}

const none = math.MaxInt

type termState struct {
	next   int // cached next match start, valid while >= the search origin
	p1, p2 int // cached next positions of the anchor bytes
}

// Scanner scans files for a Matcher's terms, reusing its buffers across
// calls. It is not safe for concurrent use.
type Scanner struct {
	m  *Matcher
	st []termState
	an []anchor // each term's anchor byte, tuned on the first data scanned
	// tuned is set once an[] has been chosen from data.
	tuned bool
	buf   []byte // file bytes [off, off+len(buf))
	off   int64
	// head is the reader whose opening bytes IsBinary left in buf, for
	// the Scan that follows it.
	head io.ReaderAt
	// lastBinary: the last file IsBinary judged was binary.
	lastBinary bool
	// countToEnd counts the lines after a file's last match too (a
	// benchmark's reference).
	countToEnd bool

	chunk int // usual read size (readChunk; smaller in tests)

	// ctx, when set, ends a Scan between rounds (at least every
	// readChunk bytes scanned) once it is done.
	ctx context.Context
	// The guard of one Scan call (see find): comparison work done by the
	// anchor search, the bytes of the rounds reached, and whether the
	// call has switched to the automaton.
	work, reached int64
	linear        bool
	// alwaysLinear starts every Scan on the automaton (tests).
	alwaysLinear bool
	// td is the matcher's prefilter, its windows tuned with the anchors
	// (nil without one).
	td *teddy
	// noTeddy makes a matcher with a prefilter use the anchor search
	// instead (tests).
	noTeddy bool
	// lanes receives the buckets of a prefilter step's positions; the
	// last step with candidates, of this region, starts at stepAt and
	// covers stepLen positions (0: none), of which stepLanes are
	// candidates (see findTeddy).
	lanes           [64]byte
	stepAt, stepLen int
	stepLanes       uint64
}

// SetContext makes every later Scan stop with ctx's error, within
// readChunk bytes of scanning, once ctx is done.
func (s *Scanner) SetContext(ctx context.Context) { s.ctx = ctx }

// bufPool holds the buffers of released Scanners, so a page's scan does
// not allocate (and soon collect) another quarter MiB.
var bufPool sync.Pool

// Release gives the Scanner's buffer back for other Scanners to use; s
// may still be used, and allocates anew.
func (s *Scanner) Release() {
	if c := cap(s.buf); c > 0 && c <= 2*readChunk+2*maxTermBytes {
		b := s.buf[:0]
		bufPool.Put(&b)
	}
	s.buf, s.off, s.head = nil, 0, nil
}

// maxTermBytes bounds the overlap a buffer keeps for terms that straddle
// two reads; longer terms only make the buffer grow.
const maxTermBytes = 256

// NewScanner returns a Scanner for m.
func NewScanner(m *Matcher) *Scanner {
	an := make([]anchor, len(m.terms))
	for i, t := range m.terms {
		an[i] = anchor{t.rare, t.c1, t.c2}
	}
	return &Scanner{
		m:     m,
		st:    make([]termState, len(m.terms)),
		an:    an,
		td:    m.td,
		chunk: readChunk,
	}
}

// Scan scans r (of the given size) from pos, reading no byte at or past
// the offset it starts reading at plus budget, and calls emit for each
// matching line in order, once per line. It returns the position to resume
// from, the number of bytes it read, done=true when the end of the file
// was reached, and stopped=true when emit returned false; next is then
// where that line's match will be found again. When done, next.Offset is
// the file's size and its line fields are not counted past the last match.
//
// Resuming inside a line, Scan reads again the MaxTermLen()-1 bytes before
// pos.Offset, where a term cut by the previous call's end may start; it
// makes progress whenever budget is at least MaxTermLen() (or pos is a line
// start and budget at least 1), and otherwise returns pos unchanged.
func (s *Scanner) Scan(r io.ReaderAt, size int64, pos Position, budget int64, emit func(Match) bool) (next Position, scanned int64, done, stopped bool, err error) {
	cur := max(pos.Offset, 0)
	st := scanState{line: max(pos.Line, 1), ls: min(max(pos.LineStart, 0), cur), skip: pos.Skip}
	if cur >= size {
		return st.at(cur), 0, true, false, nil
	}
	from := pos.ReadsFrom(s.m.maxLen) // the first byte read
	end := min(size, from+max(budget, 0))
	if end <= cur {
		return pos, 0, false, false, nil
	}
	if s.head != r || from != 0 {
		s.buf, s.off = s.buf[:0], from
	}
	s.head = nil
	s.work, s.reached, s.linear = 0, 0, s.alwaysLinear

	// Each round holds the file bytes [base, base+n): it counts lines from
	// cur, looks for terms starting at q or later (q < cur only on the
	// first round, inside the current line), and hands on at base+lim. A
	// round before the last holds MaxTermLen()-1 bytes past lim, so every
	// term starting before lim is seen whole.
	base, q := from, from
	for cur < end {
		if s.ctx != nil {
			if err := s.ctx.Err(); err != nil {
				return st.at(cur), cur - from, false, false, err
			}
		}
		n := int(min(cur-base+int64(s.chunk+s.m.maxLen-1), end-base))
		if err := s.fill(r, base, n); err != nil {
			return st.at(cur), cur - from, false, false, err
		}
		data := s.buf[:n]
		lim := n
		if base+int64(n) < end {
			lim = n - (s.m.maxLen - 1)
		}
		s.reached += int64(n)
		m, stop, err := s.region(r, size, data, base, int(cur-base), int(q-base), lim, &st, emit)
		if err != nil {
			return st.at(cur), cur - from, false, false, err
		}
		if stop {
			return Position{Offset: base + int64(m), Line: st.line, LineStart: st.ls}, base + int64(n) - from, false, true, nil
		}
		cur = base + int64(lim)
		base, q = cur, cur
	}
	next = st.at(cur)
	if cur < size && !st.skip && st.ls > from && st.ls < cur {
		// The page ends inside a line that started on it: the next call
		// reads that line again from its start, whole when it can.
		next = Position{Offset: st.ls, Line: st.line, LineStart: st.ls}
	}
	return next, cur - from, cur >= size, false, nil
}

// ReadsFrom returns the first byte a Scan from p reads for terms of at
// most maxTermLen bytes: p.Offset or, resuming inside a line not yet
// reported, up to maxTermLen-1 bytes before it (not before the line's
// start), where a term cut by the previous call's end may start.
func (p Position) ReadsFrom(maxTermLen int) int64 {
	cur := max(p.Offset, 0)
	ls := min(max(p.LineStart, 0), cur)
	if p.Skip || cur <= ls {
		return cur
	}
	return max(ls, cur-int64(maxTermLen-1))
}

// scanState is where a scan is: the number and start of the current line,
// and whether that line was already reported.
type scanState struct {
	line int
	ls   int64
	skip bool
}

func (st scanState) at(off int64) Position {
	return Position{Offset: off, Line: st.line, LineStart: st.ls, Skip: st.skip}
}

// region scans data (the file bytes at base) from p, counting lines up to
// lim, for matches starting at q or later (q < p only inside the current
// line) and before lim. It returns stop=true and the match start m when
// emit refused a match.
func (s *Scanner) region(r io.ReaderAt, size int64, data []byte, base int64, p, q, lim int, st *scanState, emit func(Match) bool) (m int, stop bool, err error) {
	if !s.tuned {
		s.tune(data)
	}
	s.reset()
	for p < lim {
		if st.skip {
			i := bytes.IndexByte(data[p:lim], '\n')
			if i < 0 {
				return 0, false, nil
			}
			p += i + 1
			st.line++
			st.ls, st.skip, q = base+int64(p), false, p
			continue
		}
		m := s.find(data, q)
		if m < 0 || m >= lim {
			if base+int64(lim) < size || s.countToEnd {
				// The lines after the file's last match are not
				// counted: nothing resumes from the file's end.
				s.countLines(data[p:lim], base+int64(p), st)
			}
			return 0, false, nil
		}
		if m > p {
			s.countLines(data[p:m], base+int64(p), st)
		}
		// s.buf holds data and may hold more past it (the rest of the
		// head IsBinary read): the evidence comes from there when it can.
		text, ok, err := s.evidence(r, size, s.buf, base, st.ls)
		if err != nil {
			return 0, false, err
		}
		if ok && !emit(Match{Line: st.line, Offset: st.ls, Text: text}) {
			return m, true, nil
		}
		st.skip = true
		p = max(p, m)
		q = p
	}
	return 0, false, nil
}

// countLines counts the newlines of b (the file bytes at off) into st.
func (s *Scanner) countLines(b []byte, off int64, st *scanState) {
	if n := bytes.Count(b, nl); n > 0 {
		st.line += n
		st.ls = off + int64(bytes.LastIndexByte(b, '\n')) + 1
	}
}

var nl = []byte{'\n'}

// fill makes s.buf hold the file bytes [off, off+n), keeping what it already
// holds from off on; n must not reach past the end of the file.
func (s *Scanner) fill(r io.ReaderAt, off int64, n int) error {
	if off >= s.off && off <= s.off+int64(len(s.buf)) {
		if k := int(off - s.off); k > 0 {
			s.buf = s.buf[:copy(s.buf, s.buf[k:])]
		}
	} else {
		s.buf = s.buf[:0]
	}
	s.off = off
	have := len(s.buf)
	if have >= n {
		return nil
	}
	if cap(s.buf) == 0 {
		if b, ok := bufPool.Get().(*[]byte); ok {
			s.buf = (*b)[:0]
		}
	}
	if cap(s.buf) < n {
		nb := make([]byte, have, max(n, min(2*cap(s.buf), s.chunk+2*s.m.maxLen)))
		copy(nb, s.buf)
		s.buf = nb
	}
	got, err := r.ReadAt(s.buf[have:n], off+int64(have))
	s.buf = s.buf[:have+got]
	if got < n-have {
		if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return err
	}
	return nil
}

// evidence returns the reported text of the line starting at ls: the line
// without its '\n' and a trailing '\r', cut to MaxEvidenceBytes on a UTF-8
// boundary. ok is false when that text is not valid UTF-8 (the line is
// then not reported). The bytes come from data (the file bytes at base)
// when it holds them, else from r.
func (s *Scanner) evidence(r io.ReaderAt, size int64, data []byte, base, ls int64) (string, bool, error) {
	want := min(int64(MaxEvidenceBytes+2), size-ls) // the text, a CR, a LF
	var head []byte
	if ls >= base && ls+want <= base+int64(len(data)) {
		head = data[ls-base : ls-base+want]
	} else {
		var b [MaxEvidenceBytes + 2]byte
		n, err := r.ReadAt(b[:want], ls)
		if int64(n) < want {
			if err == nil || err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return "", false, err
		}
		head = b[:n]
	}
	text, ok := Evidence(head, ls+int64(len(head)) == size)
	return text, ok, nil
}

// Evidence is the reported text of a line whose first bytes are head (all
// of the line when it holds a '\n' or when atEOF): up to the first '\n',
// without a trailing '\r', cut to MaxEvidenceBytes on a UTF-8 boundary;
// ok is false when that text is not valid UTF-8.
func Evidence(head []byte, atEOF bool) (string, bool) {
	whole := atEOF
	if i := bytes.IndexByte(head, '\n'); i >= 0 {
		head, whole = head[:i], true
	}
	if whole && len(head) > 0 && head[len(head)-1] == '\r' {
		head = head[:len(head)-1]
	}
	if len(head) > MaxEvidenceBytes {
		cut := MaxEvidenceBytes
		for k := 0; k < utf8.UTFMax-1 && cut > 0 && !utf8.RuneStart(head[cut]); k++ {
			cut--
		}
		head = head[:cut]
	}
	return string(head), utf8.Valid(head)
}

// anchor is the byte of a term the scan looks for first: its index in the
// term, and the byte in both cases (the same twice unless folding a letter).
type anchor struct {
	rare   int
	c1, c2 byte
}

// tuneSample is how many bytes of the first data scanned choose the anchors.
const tuneSample = 16 << 10

// tune chooses each term's anchor from the opening bytes of data: the byte
// of the term that occurs there least often, the matcher's static guess
// breaking ties. The static guess alone fails on text whose letter
// frequencies are not English prose's: code is full of "q" in "req", or
// of capitals, and a common anchor sends the scan from one false start
// to the next.
func (s *Scanner) tune(data []byte) {
	if len(data) < 1024 {
		return // too little to tell; try again with the next region
	}
	s.tuned = true
	var hist [256]int
	for _, c := range data[:min(len(data), tuneSample)] {
		hist[c]++
	}
	for i, t := range s.m.terms {
		best := -1
		for j, c := range t.b {
			n, f := hist[c], int(freq[c])
			if c2 := upper[c]; s.m.fold && c2 != c {
				n, f = n+hist[c2], f+int(freq[c2])
			}
			if score := n<<16 + f; best < 0 || score < best {
				best = score
				s.an[i] = anchor{j, c, c}
				if s.m.fold {
					s.an[i].c2 = upper[c]
				}
			}
		}
	}
	if s.td != nil {
		// The same counts, the static guess breaking ties, choose the
		// prefilter's windows.
		s.td = newTeddy(s.m.terms, s.m.fold, windows(s.m.terms, s.m.fold, func(c byte) int {
			return hist[c]<<8 + int(freq[c])
		}))
	}
}

// reset invalidates the cached term positions before a new region.
func (s *Scanner) reset() {
	for i := range s.st {
		s.st[i] = termState{next: -1, p1: -1, p2: -1}
	}
	s.stepLen = 0
}

// find returns the start >= from of a term occurrence in buf on the first
// line that holds one, or -1. Calls for one region must have non-decreasing
// from.
//
// Each term is looked for by its anchor (memchr for its rarest byte, then a
// comparison), which is fastest on ordinary text; but on text made of a
// term's own bytes every candidate costs a comparison as long as the term,
// and with many terms each scans the region on its own. So the comparison
// work is charged (see charge), and once it exceeds twice the bytes the
// call has reached, the rest of the call runs on the Aho-Corasick automaton:
// one table lookup per byte for all terms at once, folded or not. A single
// case-sensitive term keeps bytes.Index instead (its Rabin-Karp fallback
// is linear). Terms that would take several anchor
// passes, where the CPU can, are looked for together by the SIMD
// prefilter instead (see teddy), its comparisons charged the same way.
func (s *Scanner) find(buf []byte, from int) int {
	if !s.linear && s.td != nil && !s.noTeddy {
		if m := s.findTeddy(buf, from); !s.linear {
			return m
		}
	}
	if !s.linear {
		best := none
		for i := range s.st {
			st := &s.st[i]
			if st.next < from {
				st.next = s.findTerm(i, buf, from)
			}
			best = min(best, st.next)
		}
		if !s.linear {
			if best == none {
				return -1
			}
			return best
		}
	}
	return find(s.m.auto(), buf, from)
}

// workSlack is the comparison work a Scan call may do before the guard
// compares it with the bytes reached: enough that ordinary text never
// switches.
const workSlack = 64 << 10

// charge adds n bytes of comparison work to the call's guard and reports
// whether the call has now switched to the automaton.
func (s *Scanner) charge(n int) bool {
	s.work += int64(n)
	if s.work > 2*s.reached+workSlack {
		s.linear = true
	}
	return s.linear
}

func (s *Scanner) findTerm(i int, buf []byte, from int) int {
	t := &s.m.terms[i]
	n := len(t.b)
	if from+n > len(buf) {
		return none
	}
	st := &s.st[i]
	start, fails := from, 0
	single := len(s.m.terms) == 1
	for {
		if !s.m.fold && fails > 4+(from-start)>>4 {
			// The anchor byte is common here: bytes.Index copes with
			// that (it falls back to a rolling hash) and the anchor
			// loop does not. With several terms its pass over the
			// region is charged: many terms doing so are one pass of
			// the automaton instead.
			j := bytes.Index(buf[from:], t.b)
			span := len(buf) - from
			if j >= 0 {
				span = j + n
			}
			if !single && s.charge(span) {
				return none
			}
			if j >= 0 {
				return from + j
			}
			return none
		}
		an := &s.an[i]
		q := from + an.rare
		if from+n > len(buf) {
			return none
		}
		if st.p1 < q {
			st.p1 = indexByteFrom(buf, q, an.c1)
		}
		c := st.p1
		if an.c2 != an.c1 {
			if st.p2 < q {
				st.p2 = indexByteFrom(buf, q, an.c2)
			}
			c = min(c, st.p2)
		}
		if c == none {
			return none
		}
		at := c - an.rare
		if at+n > len(buf) {
			return none
		}
		if s.m.fold && foldEq(buf[at:at+n], t.b) || !s.m.fold && bytes.Equal(buf[at:at+n], t.b) {
			return at
		}
		from = at + 1
		fails++
		if (s.m.fold || !single) && s.charge(n) {
			return none
		}
	}
}

func indexByteFrom(buf []byte, from int, c byte) int {
	if from >= len(buf) {
		return none
	}
	if j := bytes.IndexByte(buf[from:], c); j >= 0 {
		return from + j
	}
	return none
}

// trimPartialTail drops a trailing incomplete (but so far valid) UTF-8
// sequence.
func trimPartialTail(p []byte) []byte {
	for i := 1; i < utf8.UTFMax && i <= len(p); i++ {
		if utf8.RuneStart(p[len(p)-i]) {
			if !utf8.FullRune(p[len(p)-i:]) {
				return p[:len(p)-i]
			}
			return p
		}
	}
	return p
}
