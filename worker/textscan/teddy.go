package textscan

import (
	"bytes"
	"math/bits"
	"slices"
)

// teddy is the multi-term prefilter, after Hyperscan's and ripgrep's
// Teddy: each term has a window of teddyLen consecutive bytes (its rarest,
// see windows), the terms are put in 8 buckets (one bit each), and for
// each byte j of a window two 16-entry tables, indexed by a text byte's
// low and high nibble, hold the bits of the buckets whose windows may have
// that nibble there. A text position is a candidate for the buckets whose
// bits survive the AND of the lookups of its teddyLen bytes; only those
// buckets' terms are compared there. On amd64 teddyBlocks does the lookups
// 32 positions a step with AVX2 (VPSHUFB), or 64 with AVX-512 VBMI, which
// looks up 7 bits of a byte at once (VPERMI2B); the tail of a buffer is
// looked up one position at a time in whole-byte tables (teddy.at).
//
// Candidates come in text order. A term's start is its window's position
// less the window's offset in the term, so after a first hit the scan goes
// on up to the largest offset past it or the line's end (see bound), and
// returns the earliest start: the one the anchor search finds. The scan's results, positions and cursors
// do not depend on which of the two ran.
type teddy struct {
	// masks holds, for byte j of the windows (j < teddyLen), the
	// low-nibble table at 2j and the high-nibble table at 2j+1, each
	// written twice (for the two 128-bit lanes VPSHUFB looks up in).
	masks [2 * teddyLen][32]byte
	// exact[j][c] holds the bits of the buckets whose windows may have
	// byte c at j (the scan of a buffer's tail), and low7[j][x] those of
	// bytes x and x|0x80 (a 128-entry lookup, VPERMI2B).
	exact [teddyLen][256]byte
	low7  [teddyLen][128]byte
	// buckets lists the terms (indices in Matcher.terms) of each bucket.
	buckets [8][]int
	off     []int // each term's window offset
	maxOff  int   // the largest window offset
	minTail int   // the least term length less window offset
}

// teddyLen is the length of the window of each term the prefilter looks
// at (a shorter term's window is the whole term).
const teddyLen = 3

// useTeddy reports whether the matcher's terms are looked for by the
// prefilter rather than by one anchor pass each (one per term, two for a
// folded letter; see BenchmarkScanPrefilter): from two passes on with the
// AVX-512 steps, which cost about one pass, and from four with the AVX2
// ones, which cost about three.
func useTeddy(terms []term) bool {
	passes := 0
	for _, t := range terms {
		passes++
		if t.c1 != t.c2 {
			passes++
		}
	}
	return haveTeddy && (passes >= 4 || teddyWide && passes >= 2)
}

// newTeddy builds the prefilter of terms (lower-cased when fold) with the
// windows at off: both cases of a folded letter set the bucket's bits.
func newTeddy(terms []term, fold bool, off []int) *teddy {
	td := &teddy{off: off, minTail: len(terms[0].b)}
	win := func(i int) []byte {
		t := terms[i].b
		return t[off[i]:min(len(t), off[i]+teddyLen)]
	}
	// Terms whose windows share bytes share a bucket, so a bucket's
	// tables admit few nibbles: sort by window, then cut the order into 8
	// runs.
	order := make([]int, len(terms))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return bytes.Compare(win(a), win(b)) })
	for r, i := range order {
		b := r * 8 / len(terms)
		td.buckets[b] = append(td.buckets[b], i)
		td.maxOff = max(td.maxOff, off[i])
		td.minTail = min(td.minTail, len(terms[i].b)-off[i])
		w := win(i)
		bit := byte(1) << b
		for j := range teddyLen {
			lo, hi := &td.masks[2*j], &td.masks[2*j+1]
			if j >= len(w) {
				// Past a short term's end any byte will do (the
				// comparison checks the term fits).
				for k := range lo {
					lo[k] |= bit
					hi[k] |= bit
				}
				for c := range td.exact[j] {
					td.exact[j][c] |= bit
				}
				continue
			}
			for _, c := range []byte{w[j], upper[w[j]]} {
				if c != w[j] && !fold {
					break
				}
				lo[c&15] |= bit
				lo[16+(c&15)] |= bit
				hi[c>>4] |= bit
				hi[16+(c>>4)] |= bit
				td.exact[j][c] |= bit
			}
		}
	}
	for j := range td.low7 {
		for x := range td.low7[j] {
			td.low7[j][x] = td.exact[j][x] | td.exact[j][x|0x80]
		}
	}
	return td
}

// windows chooses each term's window: the teddyLen consecutive bytes that
// occur least often together by count, of both cases when folding (count
// gives a byte's count; a product of the three, each plus one).
func windows(terms []term, fold bool, count func(c byte) int) []int {
	off := make([]int, len(terms))
	for i, t := range terms {
		best := 0.0
		for o := 0; o+teddyLen <= len(t.b); o++ {
			p := 1.0
			for _, c := range t.b[o : o+teddyLen] {
				n := count(c)
				if fold && upper[c] != c {
					n += count(upper[c])
				}
				p *= float64(n + 1)
			}
			if o == 0 || p < best {
				best, off[i] = p, o
			}
		}
	}
	return off
}

// staticWindows chooses the windows by the matcher's static byte
// frequencies, for a scan that has seen too little text to count.
func staticWindows(terms []term, fold bool) []int {
	return windows(terms, fold, func(c byte) int { return int(freq[c]) })
}

// at returns the buckets for which buf[i:] is a candidate, the bytes past
// the end of buf admitting every bucket.
func (td *teddy) at(buf []byte, i int) byte {
	bb := byte(0xff)
	for j := 0; j < teddyLen && i+j < len(buf); j++ {
		bb &= td.exact[j][buf[i+j]]
	}
	return bb
}

// findTeddy is find for a scan with a prefilter: the earliest start >=
// from of a term occurrence in buf, or -1. Failed comparisons are charged
// to the guard like the anchor search's; when it switches to the
// automaton, findTeddy returns -1 with s.linear set.
func (s *Scanner) findTeddy(buf []byte, from int) int {
	td := s.td
	best := none
	// Candidates at limit or after it cannot start before best.
	limit := len(buf)
	i := from
	for i < limit {
		var step int
		var lanes uint64
		if s.stepLen > 0 && s.stepAt <= i && i < s.stepAt+s.stepLen {
			// The step a call before this one stopped at (the region
			// loop calls again from the next line, often in the same
			// step): its candidates from i on.
			step, lanes = s.stepLen, s.stepLanes&^(1<<(i-s.stepAt)-1)
			i = s.stepAt
		} else {
			// A candidate before limit reads teddyLen-1 bytes past it.
			var k int
			k, step, lanes = teddyBlocks(td, buf[i:min(len(buf), limit+teddyLen-1)], &s.lanes)
			i += k
			if lanes == 0 {
				break // fewer than a step's bytes are left
			}
			s.stepAt, s.stepLen, s.stepLanes = i, step, lanes
		}
		for lanes != 0 {
			l := bits.TrailingZeros64(lanes)
			lanes &= lanes - 1
			if i+l >= limit {
				break
			}
			if st := s.verify(buf, from, i+l, s.lanes[l]); st < best {
				best, limit = st, td.bound(buf, i+l, st, limit)
			}
			if s.linear {
				return -1
			}
		}
		i += step
	}
	for end := min(limit, len(buf)-td.minTail+1); i < end; i++ {
		if bb := td.at(buf, i); bb != 0 {
			if st := s.verify(buf, from, i, bb); st < best {
				best, end = st, td.bound(buf, i, st, end)
			}
			if s.linear {
				return -1
			}
		}
	}
	if best == none {
		return -1
	}
	return best
}

// bound returns where the candidates that may still start a term before
// st end, after a hit at st found at candidate c, the candidates before c
// all checked and limit the bound so far. Such a term lies whole on the
// hit's line (terms hold no '\n') and its window after c: before the
// line's end, and at most the largest window offset past st. (Without the
// first bound, lines shorter than the offset would be looked at again and
// again.)
func (td *teddy) bound(buf []byte, c, st, limit int) int {
	limit = min(limit, st+td.maxOff)
	if c < limit {
		if j := bytes.IndexByte(buf[c:limit], '\n'); j >= 0 {
			return c + j
		}
	}
	return limit
}

// verify returns the earliest start, at from or after it, of a term of the
// buckets bb whose window is at buf[c:], or none. It charges each failed
// comparison to the guard and returns none as soon as the guard switches
// the scan to the automaton.
func (s *Scanner) verify(buf []byte, from, c int, bb byte) int {
	best := none
	for bb != 0 {
		b := bits.TrailingZeros8(bb)
		bb &= bb - 1
		for _, ti := range s.td.buckets[b] {
			t := s.m.terms[ti].b
			at, n := c-s.td.off[ti], len(t)
			if at < from || at+n > len(buf) || at >= best {
				continue
			}
			if s.m.fold && foldEq(buf[at:at+n], t) || !s.m.fold && bytes.Equal(buf[at:at+n], t) {
				best = at
				continue
			}
			if s.charge(n) {
				return none
			}
		}
	}
	return best
}
