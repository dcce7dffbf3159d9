package textscan

import (
	"bytes"
	"context"
	"io"
	"math"
	"sync"
	"unicode/utf8"
)

// Position is where a scan starts or resumes. Offset is at a line start
// (or, inside a line longer than MaxLineBytes, at a window boundary); Line is
// the 1-based number of that line. The zero value is the start of the file
// (Line 0 is treated as 1).
type Position struct {
	Offset int64
	Line   int
}

// Match is one reported line.
type Match struct {
	Line   int    // 1-based line number
	Offset int64  // byte offset of the line start (window start for giant lines)
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

	chunk   int // usual read size (readChunk; smaller in tests)
	maxLine int // MaxLineBytes (smaller in tests)

	// ctx, when set, ends a Scan between regions (at least every
	// MaxLineBytes scanned) once it is done.
	ctx context.Context
	// The guard of one Scan call (see find): comparison work done by the
	// anchor search, the bytes of the regions reached, and whether the
	// call has switched to the automaton.
	work, reached int64
	linear        bool
	// alwaysLinear starts every Scan on the automaton (tests).
	alwaysLinear bool
}

// SetContext makes every later Scan stop with ctx's error, within
// MaxLineBytes of scanning, once ctx is done.
func (s *Scanner) SetContext(ctx context.Context) { s.ctx = ctx }

// bufPool holds the buffers of released Scanners, so a page's scan does
// not allocate (and soon collect) another quarter MiB.
var bufPool sync.Pool

// Release gives the Scanner's buffer back for other Scanners to use; s
// may still be used, and allocates anew.
func (s *Scanner) Release() {
	if c := cap(s.buf); c > 0 && c <= 2*(MaxLineBytes+readChunk) {
		b := s.buf[:0]
		bufPool.Put(&b)
	}
	s.buf, s.off, s.head = nil, 0, nil
}

// NewScanner returns a Scanner for m.
func NewScanner(m *Matcher) *Scanner {
	an := make([]anchor, len(m.terms))
	for i, t := range m.terms {
		an[i] = anchor{t.rare, t.c1, t.c2}
	}
	return &Scanner{
		m:       m,
		st:      make([]termState, len(m.terms)),
		an:      an,
		chunk:   readChunk,
		maxLine: MaxLineBytes,
	}
}

// Scan scans r (of the given size) from pos, reading at most about budget
// bytes, and calls emit for each matching, decodable line in order. If emit
// returns false the scan stops and next is the start of the line after the
// last emitted match. Scan returns the position to resume from, the number
// of source bytes consumed (next.Offset - pos.Offset) and done=true when the
// end of the file was reached.
//
// Each call consumes whole lines: the line containing the budget end is
// finished (up to MaxLineBytes, see the package doc for longer lines), so
// every call makes progress, even with budget <= 1.
func (s *Scanner) Scan(r io.ReaderAt, size int64, pos Position, budget int64, emit func(Match) bool) (next Position, scanned int64, done bool, err error) {
	cur := max(pos.Offset, 0)
	line := max(pos.Line, 1)
	if cur >= size {
		return Position{Offset: cur, Line: line}, 0, true, nil
	}
	start := cur
	budget = max(budget, 1)
	limit := size
	if budget < size-cur {
		limit = cur + budget
	}
	if s.head != r || cur != 0 {
		s.buf, s.off = s.buf[:0], cur
	}
	s.head = nil
	s.work, s.reached, s.linear = 0, 0, s.alwaysLinear

	// win: inside a giant line, cur at a window boundary; first: that
	// boundary is the line start.
	win, first := false, false
	if cur > 0 {
		var b [1]byte
		if n, err := r.ReadAt(b[:], cur-1); n != 1 {
			if err == nil || err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return Position{Offset: cur, Line: line}, 0, false, err
		}
		win = b[0] != '\n'
	}

	for cur < limit {
		if s.ctx != nil {
			if err := s.ctx.Err(); err != nil {
				return Position{Offset: cur, Line: line}, cur - start, false, err
			}
		}
		if win {
			ncur, nline, last, stop, err := s.window(r, size, cur, line, first, emit)
			if err != nil {
				return Position{Offset: cur, Line: line}, cur - start, false, err
			}
			cur, line, win, first = ncur, nline, !last, false
			if stop {
				break
			}
			continue
		}
		// At most maxLine bytes at a time, so a region of whole lines
		// never holds a giant line.
		step := int64(min(s.chunk, s.maxLine))
		if err := s.fill(r, cur, int(min(step, limit-cur))); err != nil {
			return Position{Offset: cur, Line: line}, cur - start, false, err
		}
		data := s.buf[:min(int64(len(s.buf)), limit-cur, step)]
		var region []byte
		if cur+int64(len(data)) == size {
			region = data
		} else if i := bytes.LastIndexByte(data, '\n'); i >= 0 {
			region = data[:i+1]
		} else {
			var giant bool
			region, giant, err = s.extend(r, size, cur)
			if err != nil {
				return Position{Offset: cur, Line: line}, cur - start, false, err
			}
			if giant {
				win, first = true, true
				continue
			}
		}
		s.reached += int64(len(region))
		n, lines, stop := s.lines(region, cur, line, emit)
		cur += int64(n)
		line += lines
		if stop {
			break
		}
	}
	return Position{Offset: cur, Line: line}, cur - start, cur >= size, nil
}

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
		nb := make([]byte, have, max(n, min(2*cap(s.buf), s.maxLine+s.m.maxLen+s.chunk)))
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

// extend reads on from cur (a line start) until the end of that line. It
// returns the line including its '\n' (or up to the end of the file), or
// giant=true if the line's content is longer than s.maxLine.
func (s *Scanner) extend(r io.ReaderAt, size, cur int64) (region []byte, giant bool, err error) {
	searched := 0
	for {
		if i := bytes.IndexByte(s.buf[searched:], '\n'); i >= 0 {
			if i += searched; i <= s.maxLine {
				return s.buf[:i+1], false, nil
			}
			return nil, true, nil
		}
		if len(s.buf) > s.maxLine {
			return nil, true, nil
		}
		if cur+int64(len(s.buf)) == size {
			return s.buf, false, nil
		}
		searched = len(s.buf)
		n := int(min(int64(searched+max(s.chunk, searched)), int64(s.maxLine+1), size-cur))
		if err := s.fill(r, cur, n); err != nil {
			return nil, false, err
		}
	}
}

// lines reports the matching lines of region, which holds whole lines
// starting at file offset base with number line; the last line ends with
// '\n' unless it is the last line of the file. It returns the bytes and
// lines consumed, and stop=true if emit asked to stop.
func (s *Scanner) lines(region []byte, base int64, line int, emit func(Match) bool) (consumed, lines int, stop bool) {
	if !s.tuned {
		s.tune(region)
	}
	s.reset()
	p := 0 // start of the current line
	for p < len(region) {
		m := s.find(region, p)
		if m < 0 {
			break
		}
		ls := p + bytes.LastIndexByte(region[p:m], '\n') + 1
		lines += bytes.Count(region[p:ls], nl)
		le := len(region)
		if i := bytes.IndexByte(region[m:], '\n'); i >= 0 {
			le = m + i
		}
		p = min(le+1, len(region))
		text := region[ls:le]
		if utf8.Valid(text) {
			if !emit(Match{Line: line + lines, Offset: base + int64(ls), Text: evidence(text, false, true)}) {
				return p, lines + 1, true
			}
		}
		lines++
	}
	if p < len(region) {
		lines += bytes.Count(region[p:], nl)
		if region[len(region)-1] != '\n' {
			lines++ // last line of the file, without newline
		}
	}
	return len(region), lines, false
}

var nl = []byte{'\n'}

// window scans one window of a giant line starting at a (first: a is the
// line start). It returns the next position, whether this was the line's
// last window, and stop=true if emit asked to stop.
func (s *Scanner) window(r io.ReaderAt, size, a int64, line int, first bool, emit func(Match) bool) (next int64, nline int, last, stop bool, err error) {
	w := s.maxLine
	want := int(min(int64(w+max(s.m.maxLen-1, 1)), size-a))
	if err := s.fill(r, a, want); err != nil {
		return a, line, false, false, err
	}
	data := s.buf[:want]
	own, search := w, data
	j := bytes.IndexByte(data, '\n')
	switch {
	case j >= 0 && j <= w:
		last, own, search = true, j, data[:j]
	case j < 0 && len(data) <= w: // a+len(data) == size
		last, own = true, len(data)
	case j >= 0:
		search = data[:j]
	}
	s.reached += int64(len(search))
	s.reset()
	if s.findBefore(search, own) {
		p := data[:own]
		if validWindow(p, !first, !last) {
			stop = !emit(Match{Line: line, Offset: a, Text: evidence(p, !first, last)})
		}
	}
	if !last {
		return a + int64(w), line, false, stop, nil
	}
	next = a + int64(own)
	if j >= 0 {
		next++
	}
	return next, line + 1, true, stop, nil
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
}

// reset invalidates the cached term positions before a new region.
func (s *Scanner) reset() {
	for i := range s.st {
		s.st[i] = termState{next: -1, p1: -1, p2: -1}
	}
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
// case-sensitive term falls back to bytes.Index instead, as before (its
// Rabin-Karp fallback is linear).
func (s *Scanner) find(buf []byte, from int) int {
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

// findBefore reports whether a term occurrence in buf starts before own.
func (s *Scanner) findBefore(buf []byte, own int) bool {
	if !s.linear {
		m := s.find(buf, 0)
		if !s.linear {
			return m >= 0 && m < own
		}
	}
	return findBefore(s.m.auto(), buf, 0, own)
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

// evidence returns the reported text for a line (or window) p: with
// midStart, leading continuation bytes of a rune cut by the window start are
// dropped; with lineEnd a trailing '\r' is dropped, otherwise (a window cut
// inside the line) a trailing incomplete rune is. The result is cut to
// MaxEvidenceBytes on a rune boundary.
func evidence(p []byte, midStart, lineEnd bool) string {
	if midStart {
		p = trimPartialHead(p)
	}
	if lineEnd {
		if n := len(p); n > 0 && p[n-1] == '\r' {
			p = p[:n-1]
		}
	} else {
		p = trimPartialTail(p)
	}
	if len(p) > MaxEvidenceBytes {
		cut := MaxEvidenceBytes
		for cut > 0 && !utf8.RuneStart(p[cut]) {
			cut--
		}
		p = p[:cut]
	}
	return string(p)
}

// validWindow reports whether p is valid UTF-8, tolerating a rune cut by
// the window start (midStart) or end (midEnd).
func validWindow(p []byte, midStart, midEnd bool) bool {
	if midStart {
		p = trimPartialHead(p)
	}
	if midEnd {
		p = trimPartialTail(p)
	}
	return utf8.Valid(p)
}

// trimPartialHead drops up to 3 leading UTF-8 continuation bytes.
func trimPartialHead(p []byte) []byte {
	for i := 0; i < utf8.UTFMax-1 && len(p) > 0 && !utf8.RuneStart(p[0]); i++ {
		p = p[1:]
	}
	return p
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
