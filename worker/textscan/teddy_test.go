package textscan

import (
	"bytes"
	"math/rand"
	"runtime"
	"strings"
	"testing"
)

// teddyMatcher is NewMatcher with the prefilter whatever the number of
// terms (a single term does not get one otherwise), failing on an amd64
// CPU that cannot run it. Elsewhere findTeddy runs its Go path alone.
func teddyMatcher(t testing.TB, terms []string, fold bool) *Matcher {
	t.Helper()
	if runtime.GOARCH == "amd64" && !haveTeddy {
		t.Fatal("the prefilter needs AVX2, which this CPU lacks: run the tests on an x86-64-v3 (AVX2) machine")
	}
	m, err := NewMatcher(terms, fold)
	if err != nil {
		t.Fatal(err)
	}
	if m.td == nil {
		m.td = newTeddy(m.terms, fold, staticWindows(m.terms, fold))
	}
	return m
}

// refNext is find from its definition, for every from at once: refNext[i]
// is the earliest start >= i of a term in buf, or -1.
func refNext(buf []byte, terms []string, fold bool) []int {
	hay := buf
	if fold {
		hay = lowerASCII(buf)
	}
	next := make([]int, len(buf)+1)
	next[len(buf)] = -1
	for i := len(buf) - 1; i >= 0; i-- {
		next[i] = next[i+1]
		for _, t := range terms {
			b := []byte(t)
			if fold {
				b = lowerASCII(b)
			}
			if bytes.HasPrefix(hay[i:], b) {
				next[i] = i
			}
		}
	}
	return next
}

// teddyBytes are the bytes random texts and terms are made of: few enough
// that terms occur and candidates abound, with letters of both cases,
// non-ASCII bytes and bytes that alias a letter's nibbles.
var teddyBytes = []byte("abcABC\n \x00\xff\xe9\x41\x61\x21\x12\xc3\x80qQzZ")

func randBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = teddyBytes[rng.Intn(len(teddyBytes))]
	}
	return b
}

// randTerms returns 1..MaxTerms terms of lengths 1..256 (mostly short),
// without line breaks, some copied from text so they occur, some
// overlapping each other.
func randTerms(rng *rand.Rand, text []byte) []string {
	n := 1 + rng.Intn(MaxTerms)
	var terms []string
	for len(terms) < n {
		l := 1 + rng.Intn(6)
		if rng.Intn(8) == 0 {
			l = 1 + rng.Intn(256)
		}
		var b []byte
		switch {
		case len(text) >= l && rng.Intn(2) == 0:
			at := rng.Intn(len(text) - l + 1)
			b = append(b, text[at:at+l]...)
		case len(terms) > 0 && rng.Intn(3) == 0: // overlaps another term
			o := terms[rng.Intn(len(terms))]
			b = append([]byte(o[rng.Intn(len(o)):]), randBytes(rng, l)...)
		default:
			b = randBytes(rng, l)
		}
		b = bytes.Map(func(r rune) rune {
			if r == '\n' || r == '\r' {
				return 'x'
			}
			return r
		}, b)
		if len(b) > 0 && len(b) <= 256 && !bytes.ContainsAny(b, "\r\n") {
			terms = append(terms, string(b))
		}
	}
	return terms
}

// stepPaths runs f once for each way the CPU can do the prefilter's
// steps: AVX2 (where there is no assembly, none: findTeddy's Go loop alone)
// and AVX-512 VBMI where the CPU has it.
func stepPaths(t *testing.T, f func(t *testing.T, wide bool)) {
	t.Helper()
	saved := teddyWide
	defer func() { teddyWide = saved }()
	for _, wide := range []bool{false, true} {
		name := map[bool]string{false: "avx2", true: "avx512vbmi"}[wide]
		t.Run(name, func(t *testing.T) {
			if wide && !saved {
				t.Skip("this CPU lacks AVX-512 VBMI: its steps were not run (the AVX2 ones were)")
			}
			teddyWide = wide
			f(t, wide)
		})
	}
}

// stepTables is what the step of a path looks up for position i of buf.
func stepTables(td *teddy, wide bool, buf []byte, i int) byte {
	bb := byte(0xff)
	for j := range teddyLen {
		c := buf[i+j]
		if wide {
			bb &= td.low7[j][c&0x7f]
		} else {
			bb &= td.masks[2*j][c&15] & td.masks[2*j+1][c>>4]
		}
	}
	return bb
}

// TestTeddyStepsAgree: each step of teddyBlocks (the assembly on amd64)
// reports exactly the candidate positions and buckets its tables give one
// position at a time, at every offset and length of buffer, and those
// admit every bucket the whole-byte tables do.
func TestTeddyStepsAgree(t *testing.T) {
	stepPaths(t, func(t *testing.T, wide bool) {
		rng := rand.New(rand.NewSource(3))
		for iter := range 3000 {
			text := randBytes(rng, rng.Intn(300))
			m := teddyMatcher(t, randTerms(rng, text), rng.Intn(2) == 0)
			td := m.td
			var out [64]byte
			for i := 0; i < len(text); {
				k, step, lanes := teddyBlocks(td, text[i:], &out)
				if runtime.GOARCH != "amd64" {
					if k != 0 || lanes != 0 {
						t.Fatalf("no assembly here, yet a step reported %d, %#x", k, lanes)
					}
					return
				}
				if want := map[bool]int{false: 32, true: 64}[wide]; step != want {
					t.Fatalf("steps of %d positions, want %d", step, want)
				}
				// No candidate in the steps skipped.
				for j := i; j < i+k; j++ {
					if bb := stepTables(td, wide, text, j); bb != 0 {
						t.Fatalf("iter %d: step from %d skipped position %d (buckets %#x) to %d", iter, i, j, bb, i+k)
					}
				}
				if lanes == 0 {
					if rest := len(text) - (i + k); rest >= step+teddyLen-1 || k%step != 0 {
						t.Fatalf("iter %d: steps from %d stopped at %d with %d bytes left", iter, i, i+k, rest)
					}
					break
				}
				for l := range step {
					bb := stepTables(td, wide, text, i+k+l)
					if got := lanes>>l&1 == 1; got != (bb != 0) || got && out[l] != bb {
						t.Fatalf("iter %d: position %d: step says %v %#x, tables say %#x", iter, i+k+l, got, out[l], bb)
					}
					if exact := td.at(text, i+k+l); bb&exact != exact {
						t.Fatalf("iter %d: position %d: step tables %#x miss buckets of %#x", iter, i+k+l, bb, exact)
					}
				}
				if lanes>>step != 0 {
					t.Fatalf("lanes %#x past a step of %d", lanes, step)
				}
				i += k + 1 + rng.Intn(80)
			}
		}
	})
}

// TestTeddyFind: findTeddy returns the earliest term start from every
// offset of buffers of 0..100 bytes (and some longer), terms of 1..256
// bytes, folded or not.
func TestTeddyFind(t *testing.T) {
	stepPaths(t, func(t *testing.T, _ bool) {
		rng := rand.New(rand.NewSource(5))
		for iter := range 4000 {
			n := rng.Intn(101)
			if iter%10 == 0 {
				n = rng.Intn(2000)
			}
			text := randBytes(rng, n)
			terms := randTerms(rng, text)
			fold := rng.Intn(2) == 0
			checkTeddyFind(t, text, terms, fold)
		}
	})
}

// windowSets are windows to check a prefilter with, besides those tuned
// from the text: the static choice, every term's first and last window,
// and the two alternating, so that terms' starts and windows come in
// different orders.
func windowSets(m *Matcher) [][]int {
	sets := [][]int{staticWindows(m.terms, m.fold)}
	for k := range 3 {
		off := make([]int, len(m.terms))
		for i, t := range m.terms {
			if last := max(len(t.b)-teddyLen, 0); k == 1 || k == 2 && i%2 == 0 {
				off[i] = last
			}
		}
		sets = append(sets, off)
	}
	return sets
}

func checkTeddyFind(t *testing.T, text []byte, terms []string, fold bool) {
	t.Helper()
	m := teddyMatcher(t, terms, fold)
	want := refNext(text, terms, fold)
	for _, off := range windowSets(m) {
		s := NewScanner(m)
		s.td = newTeddy(m.terms, fold, off)
		for from := 0; from <= len(text); from++ {
			s.work, s.reached, s.linear = 0, 1<<40, false // no switch
			if got := s.findTeddy(text, from); got != want[from] {
				t.Fatalf("terms %q fold %v windows %v in %q from %d: findTeddy %d, want %d", terms, fold, off, text, from, got, want[from])
			}
		}
	}
}

// TestTeddyScan: whole scans with the prefilter, in regions of many sizes
// and budgets, report what the naive reference does and resume exactly,
// and the same as the anchor search.
func TestTeddyScan(t *testing.T) {
	stepPaths(t, func(t *testing.T, _ bool) {
		rng := rand.New(rand.NewSource(11))
		for iter := range 300 {
			var text []byte
			if iter%2 == 0 {
				text = randText(rng, rng.Intn(3000))
			} else {
				text = randBytes(rng, rng.Intn(3000))
			}
			terms := randTerms(rng, text)
			fold := rng.Intn(2) == 0
			checkTeddyScan(t, text, terms, fold, []int{1, 5, 33, 64, readChunk}, []int64{1, 7, 100, 1 << 40})
		}
	})
}

func checkTeddyScan(t *testing.T, text []byte, terms []string, fold bool, chunks []int, budgets []int64) {
	t.Helper()
	want := reference(text, terms, fold)
	m := teddyMatcher(t, terms, fold)
	sets := windowSets(m)
	for k, chunk := range chunks {
		for _, b := range budgets {
			s := NewScanner(m)
			s.chunk = chunk
			checkMatches(t, scanAll(t, s, text, b), want) // windows tuned
			s.tuned = true
			s.td = newTeddy(m.terms, fold, sets[k%len(sets)])
			checkMatches(t, scanAll(t, s, text, b), want)
			s.noTeddy = true
			checkMatches(t, scanAll(t, s, text, b), want)
		}
	}
}

func FuzzTeddy(f *testing.F) {
	f.Add([]byte("foo\nbar\r\nFOO baz\n"), "foo|baz|ba", true, uint16(3))
	f.Add([]byte("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab\naab"), "aab|b|aaaa", false, uint16(7))
	f.Add([]byte(strings.Repeat("xé", 40)+"\nx"), "é|xé|\xc3", false, uint16(0))
	f.Add([]byte(strings.Repeat("Q", 70)+"qz"), "qz|QQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQZ|zz", true, uint16(33))
	f.Fuzz(func(t *testing.T, text []byte, spec string, fold bool, budget uint16) {
		var terms []string
		for _, tm := range strings.Split(spec, "|") {
			if tm != "" && len(tm) <= 256 && !strings.ContainsAny(tm, "\r\n") && len(terms) < MaxTerms {
				terms = append(terms, tm)
			}
		}
		if len(terms) == 0 {
			return
		}
		stepPaths(t, func(t *testing.T, _ bool) {
			checkTeddyFind(t, text, terms, fold)
			checkTeddyScan(t, text, terms, fold, []int{7, readChunk}, []int64{int64(budget), 1 << 40})
		})
	})
}
