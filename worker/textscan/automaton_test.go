package textscan

import (
	"bytes"
	"context"
	"errors"
	"math/rand"
	"strings"
	"testing"
)

// zeroLines is n bytes of lines of 255 '0's: a 256-byte term of '0's
// almost matches at every byte and never matches.
func zeroLines(n int) []byte {
	line := append(bytes.Repeat([]byte("0"), 255), '\n')
	return bytes.Repeat(line, n/len(line))
}

// ababLines is n bytes of lines of 4095 bytes of "abab...".
func ababLines(n int) []byte {
	line := append(bytes.Repeat([]byte("ab"), 2047), 'a', '\n')
	return bytes.Repeat(line, n/len(line))
}

// craftedTerms are 16 terms of 256 bytes of "abab..." each with one byte
// changed near its end, so each agrees with the text for ~250 bytes at
// every other offset and never matches; every byte of each is common.
func craftedTerms() []string {
	var terms []string
	for i := range MaxTerms {
		b := bytes.Repeat([]byte("ab"), 128)
		k := len(b) - 1 - i
		b[k] = "ba"[k%2] // 'a' where 'b' was, or the reverse
		terms = append(terms, string(b))
	}
	return terms
}

// adversarial are the inputs that make an anchor search compare a term's
// length at every byte, or make many terms each pass over the text on its
// own; the guard must switch them to the automaton. (Two case-sensitive
// terms over "abab..." stay on bytes.Index: two linear passes.)
var adversarial = []struct {
	name  string
	text  func(int) []byte
	terms []string
	fold  bool
}{
	{"zeros-folded", zeroLines, []string{strings.Repeat("0", 256)}, true},
	{"abab-16-terms", ababLines, craftedTerms(), false},
	{"abab-16-terms-folded", ababLines, craftedTerms(), true},
	{"abab-4-terms", ababLines, craftedTerms()[:4], false},
}

func TestAdversarialSwitchesToAutomaton(t *testing.T) {
	for _, tc := range adversarial {
		t.Run(tc.name, func(t *testing.T) {
			text := tc.text(1 << 20)
			// One line that does match, at the end, so the answer is not
			// only "nothing".
			hit := tc.terms[len(tc.terms)-1]
			text = append(text, "x"+hit+"x\n"...)
			s := newTestScanner(t, tc.terms, tc.fold, 0)
			got := scanAll(t, s, text, 1<<40)
			checkMatches(t, got, reference(text, tc.terms, tc.fold))
			if len(got) != 1 {
				t.Fatalf("%d matches, want 1", len(got))
			}
			if !s.linear {
				t.Fatalf("the scan did not switch to the automaton (work %d, reached %d)", s.work, s.reached)
			}
			if s.work > 2*s.reached+workSlack+256 {
				t.Fatalf("comparison work %d over the guard's bound for %d bytes", s.work, s.reached)
			}
		})
	}
}

// TestOrdinaryTextStaysOnAnchors: on the benchmark corpus, one and several
// terms, folded or not, never switch.
func TestOrdinaryTextStaysOnAnchors(t *testing.T) {
	text := benchCorpus()[:8<<20]
	for _, tc := range []struct {
		terms []string
		fold  bool
	}{
		{[]string{"zqxjNeedle"}, false},
		{[]string{"zqxjneedle"}, true},
		{[]string{"zqxjNeedle", "Handler(", "naïve value"}, true},
		{[]string{"zqxjNeedle", "Configx", "ctx ctx ctx", "return nil nil", "über über"}, false},
	} {
		s := newTestScanner(t, tc.terms, tc.fold, 0)
		scanAll(t, s, text, 1<<40)
		if s.linear {
			t.Errorf("%q fold %v: switched to the automaton on ordinary text (work %d, reached %d)", tc.terms, tc.fold, s.work, s.reached)
		}
	}
}

func TestMatchStringAgreesWithReference(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	for range 2000 {
		text := randText(rng, rng.Intn(200))
		terms := termSets[rng.Intn(len(termSets))]
		fold := rng.Intn(2) == 0
		m, err := NewMatcher(terms, fold)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := m.MatchString(string(text)), refContains(text, terms, fold); got != want {
			t.Fatalf("MatchString(%q) terms %q fold %v = %v, want %v", text, terms, fold, got, want)
		}
	}
}

// TestAutomatonOverlaps: a term that is a suffix or a part of another, and
// occurrences that overlap.
func TestAutomatonOverlaps(t *testing.T) {
	for _, tc := range []struct {
		terms []string
		text  string
		fold  bool
		want  int // start found by find, -1 for none
	}{
		{[]string{"abcd", "bc"}, "xabcd", false, 2},
		{[]string{"abcd", "bcd"}, "xabcd", false, 1},
		{[]string{"she", "he", "hers"}, "ushers", false, 1},
		{[]string{"aab"}, "aaab", false, 1},
		{[]string{"AB"}, "xaB", true, 1},
		{[]string{"AB"}, "xaB", false, -1},
		{[]string{"é"}, "É", true, -1}, // only ASCII folds
	} {
		m, err := NewMatcher(tc.terms, tc.fold)
		if err != nil {
			t.Fatal(err)
		}
		if got := find(m.auto(), tc.text, 0); got != tc.want {
			t.Errorf("terms %q in %q: find = %d, want %d", tc.terms, tc.text, got, tc.want)
		}
	}
}

// TestScanCancelled: a Scan whose context is done stops within a region
// with the context's error, and scans nothing more.
func TestScanCancelled(t *testing.T) {
	text := zeroLines(8 << 20)
	s := newTestScanner(t, []string{strings.Repeat("0", 256)}, true, 0)
	ctx, cancel := context.WithCancel(context.Background())
	s.SetContext(ctx)
	regions := 0
	r := &countingReader{r: bytes.NewReader(text), after: func() {
		if regions++; regions == 3 {
			cancel()
		}
	}}
	_, scanned, done, _, err := s.Scan(r, int64(len(text)), Position{}, 1<<40, func(Match) bool { return true })
	if !errors.Is(err, context.Canceled) || done {
		t.Fatalf("Scan = done %v, err %v; want context.Canceled", done, err)
	}
	if scanned > 4*readChunk {
		t.Fatalf("scanned %d bytes after the cancellation (regions of %d)", scanned, readChunk)
	}
}

type countingReader struct {
	r     *bytes.Reader
	after func()
}

func (c *countingReader) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.after()
	return n, err
}
