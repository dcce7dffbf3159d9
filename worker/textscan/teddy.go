package textscan

import (
	"bytes"
	"math/bits"
	"slices"
)

// teddy is the multi-term prefilter of a Matcher with several terms, after
// Hyperscan's and ripgrep's Teddy: the terms are put in 8 buckets (one bit
// each), and for each of the first teddyLen bytes of a term two 16-entry
// tables, indexed by a text byte's low and high nibble, hold the bits of
// the buckets whose terms may have that nibble there. A text position is a
// candidate for the buckets whose bits survive the AND of its teddyLen
// bytes' lookups; only those buckets' terms are compared there. On amd64
// with AVX2, teddyBlocks does the lookups 32 positions a step (VPSHUFB);
// the tail of a buffer, and every CPU without it, uses the same tables one
// position at a time (teddy.at) or, without SIMD, the anchor search.
//
// Candidates come in text order and each is verified before the next, so
// the first verified one is the earliest term start, as the anchor search
// finds: the scan's results, positions and cursors do not depend on which
// of the two ran.
type teddy struct {
	// masks holds, for byte j of a term (j < teddyLen), the low-nibble
	// table at 2j and the high-nibble table at 2j+1, each written twice
	// (for the two 128-bit lanes VPSHUFB looks up in).
	masks [2 * teddyLen][32]byte
	// buckets lists the terms (indices in Matcher.terms) of each bucket.
	buckets [8][]int
	minLen  int // the shortest term's length
}

// teddyLen is how many leading bytes of each term the prefilter looks at.
const teddyLen = 3

// newTeddy builds the prefilter of terms (lower-cased when fold): both
// cases of a folded letter set the bucket's bits.
func newTeddy(terms []term, fold bool) *teddy {
	td := &teddy{minLen: len(terms[0].b)}
	// Terms sharing their opening bytes share a bucket, so a bucket's
	// tables admit few nibbles: sort by the opening bytes, then cut the
	// order into 8 runs.
	order := make([]int, len(terms))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return bytes.Compare(terms[a].b[:min(teddyLen, len(terms[a].b))], terms[b].b[:min(teddyLen, len(terms[b].b))])
	})
	for r, i := range order {
		b := r * 8 / len(terms)
		td.buckets[b] = append(td.buckets[b], i)
		t := terms[i].b
		td.minLen = min(td.minLen, len(t))
		bit := byte(1) << b
		for j := range teddyLen {
			lo, hi := &td.masks[2*j], &td.masks[2*j+1]
			if j >= len(t) {
				// Past a short term's end any byte will do (the
				// verification checks the term fits).
				for k := range lo {
					lo[k] |= bit
					hi[k] |= bit
				}
				continue
			}
			for _, c := range []byte{t[j], upper[t[j]]} {
				if c != t[j] && !fold {
					break
				}
				lo[c&15] |= bit
				lo[16+c&15] |= bit
				hi[c>>4] |= bit
				hi[16+c>>4] |= bit
			}
		}
	}
	return td
}

// at returns the buckets for which buf[i:] is a candidate, the bytes past
// the end of buf admitting every bucket.
func (td *teddy) at(buf []byte, i int) byte {
	bb := byte(0xff)
	for j := 0; j < teddyLen && i+j < len(buf); j++ {
		c := buf[i+j]
		bb &= td.masks[2*j][c&15] & td.masks[2*j+1][c>>4]
	}
	return bb
}

// findTeddy is find for a matcher with a prefilter: the earliest start >=
// from of a term occurrence in buf, or -1. Failed comparisons are charged
// to the guard like the anchor search's; when it switches to the
// automaton, findTeddy returns -1 with s.linear set.
func (s *Scanner) findTeddy(buf []byte, from int) int {
	td := s.m.td
	i := from
	for i < len(buf) {
		k, lanes := teddyBlocks(td, buf[i:], &s.lanes)
		i += k
		if lanes == 0 {
			break // fewer than a step's bytes are left
		}
		for lanes != 0 {
			l := bits.TrailingZeros32(lanes)
			lanes &= lanes - 1
			if s.verify(buf, i+l, s.lanes[l]) {
				return i + l
			}
			if s.linear {
				return -1
			}
		}
		i += 32
	}
	for end := len(buf) - td.minLen; i <= end; i++ {
		if bb := td.at(buf, i); bb != 0 {
			if s.verify(buf, i, bb) {
				return i
			}
			if s.linear {
				return -1
			}
		}
	}
	return -1
}

// verify reports whether a term of the buckets bb starts at buf[at:],
// charging each failed comparison to the guard and returning false as soon
// as the guard switches the scan to the automaton.
func (s *Scanner) verify(buf []byte, at int, bb byte) bool {
	for bb != 0 {
		b := bits.TrailingZeros8(bb)
		bb &= bb - 1
		for _, ti := range s.m.td.buckets[b] {
			t := s.m.terms[ti].b
			n := len(t)
			if at+n > len(buf) {
				continue
			}
			if s.m.fold && foldEq(buf[at:at+n], t) || !s.m.fold && bytes.Equal(buf[at:at+n], t) {
				return true
			}
			if s.charge(n) {
				return false
			}
		}
	}
	return false
}
