package textscan

import (
	"bytes"
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"testing"
)

// recordingReader records the ReadAt calls made on a file's bytes: where
// each started and how many bytes it asked for.
type recordingReader struct {
	r     *bytes.Reader
	reads [][2]int64
}

func (c *recordingReader) ReadAt(p []byte, off int64) (int, error) {
	c.reads = append(c.reads, [2]int64{off, int64(len(p))})
	return c.r.ReadAt(p, off)
}

// scanCall is what one Scan call returned, its matches included.
type scanCall struct {
	Next          Position
	Scanned       int64
	Done, Stopped bool
	Matches       []Match
}

// scanPages scans text page by page with budget from the start, as a
// search does: the first call from offset 0, after IsBinary when check is
// set (a binary file ends there), each next call from where the last
// stopped. emit refuses the first match of every page when refuse is set.
// It returns the calls, whether IsBinary judged the file binary, and how
// many reads of r had been made when the first Scan call returned.
func scanPages(t *testing.T, s *Scanner, r *recordingReader, size, budget int64, check, refuse bool) (calls []scanCall, bin bool, firstReads int) {
	t.Helper()
	if check {
		bin, err := s.IsBinary(r, size, budget)
		if err != nil {
			t.Fatal(err)
		}
		if bin {
			return nil, true, len(r.reads)
		}
	}
	pos := Position{}
	for range 1000 {
		var c scanCall
		refused := false
		var err error
		c.Next, c.Scanned, c.Done, c.Stopped, err = s.Scan(r, size, pos, budget, func(m Match) bool {
			if refuse && !refused {
				refused = true
				return false
			}
			c.Matches = append(c.Matches, m)
			return true
		})
		if err != nil {
			t.Fatal(err)
		}
		if calls = append(calls, c); len(calls) == 1 {
			firstReads = len(r.reads)
		}
		if c.Done {
			return calls, false, firstReads
		}
		if c.Stopped {
			refuse = false // the refused match is taken by the next call
		} else {
			refuse = refuse || len(c.Matches) > 0
		}
		pos = c.Next
	}
	t.Fatal("no end after 1000 calls")
	return nil, false, 0
}

// headText is size bytes of lines of ASCII text, with "needle" written at
// each of at (which must leave it inside the text) and raw bytes written
// over it at each key of raw.
func headText(size int, at []int, raw map[int]string) []byte {
	line := []byte("func scan(buf []byte) { return len(buf) }\n")
	text := bytes.Repeat(line, size/len(line)+1)[:size]
	for _, a := range at {
		copy(text[a:], "needle")
	}
	for a, b := range raw {
		copy(text[a:], b)
	}
	return text
}

// TestIsBinaryHeadReuse: a Scan from offset 0 right after IsBinary reads
// from the bytes IsBinary read instead of reading them again, and returns
// what a Scan without IsBinary returns (positions, bytes scanned, matches,
// done and stopped, on every page after too), for files around the head's
// and the head read's sizes, terms across those boundaries, binary bytes
// past the head, and budgets ending inside the head. A file that fits in
// the head read is read by one ReadAt in all. Right after a binary file
// the head read is HeadBytes, and the results are the same.
func TestIsBinaryHeadReuse(t *testing.T) {
	const H = HeadBytes
	R := int(headReadMax)
	first := readChunk + len("needle") - 1 // a Scan's first round
	cases := []struct {
		name string
		text []byte
		bin  bool // LooksBinary of its opening
	}{
		{"empty", nil, false},
		{"one byte", []byte("n"), false},
		{"a match", []byte("needle"), false},
		{"head-1", headText(H-1, []int{H - 7}, nil), false},
		{"head", headText(H, []int{H - 6}, nil), false},
		{"head+1", headText(H+1, []int{H - 5}, nil), false},
		{"term across the head's end", headText(2*H, []int{H - 3, 10}, nil), false},
		{"term just past the head", headText(2*H, []int{H}, nil), false},
		{"binary within the head", headText(3*H, []int{100}, map[int]string{H - 10: "\x00\xff"}), true},
		{"binary in the head's last bytes", headText(3*H, []int{H + 40}, map[int]string{H - 2: "\x00\xff"}), true},
		{"binary bytes past the head", headText(3*H, []int{100, H + 100}, map[int]string{H + 2: "\x00\xff"}), false},
		{"binary bytes across the head's end", headText(3*H, []int{H + 40}, map[int]string{H - 1: "\x00\xff"}), false},
		{"head read max-1", headText(R-1, []int{R - 7, H - 2}, nil), false},
		{"head read max", headText(R, []int{R - 6}, nil), false},
		{"head read max+1", headText(R+1, []int{R - 3}, nil), false},
		{"term across the head read's end", headText(2*R, []int{R - 2, 3 * H}, nil), false},
		{"first round", headText(first, []int{first - 6}, nil), false},
		{"first round+1", headText(first+1, []int{readChunk - 2}, nil), false},
		{"three rounds", headText(3*readChunk, []int{5, readChunk - 3, 2*readChunk - 1}, nil), false},
	}
	budgets := []int64{6, 100, H - 1, H, H + 1, 3 * H, headReadMax, 1 << 40}
	for _, tc := range cases {
		size := int64(len(tc.text))
		if got := LooksBinary(tc.text[:min(len(tc.text), H)]); got != tc.bin {
			t.Fatalf("%s: LooksBinary = %v, the case says %v", tc.name, got, tc.bin)
		}
		for _, chunk := range []int{readChunk, 64} {
			for _, budget := range budgets {
				if size/budget > 300 {
					continue // pages enough from the larger budgets
				}
				for _, v := range []struct{ refuse, afterBinary bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
					refuse := v.refuse
					name := fmt.Sprintf("%s/chunk=%d/budget=%d/refuse=%v/after-binary=%v", tc.name, chunk, budget, refuse, v.afterBinary)
					t.Run(name, func(t *testing.T) {
						fresh := &recordingReader{r: bytes.NewReader(tc.text)}
						want, _, _ := scanPages(t, newTestScanner(t, []string{"needle"}, false, chunk), fresh, size, budget, false, refuse)
						reused := &recordingReader{r: bytes.NewReader(tc.text)}
						s := newTestScanner(t, []string{"needle"}, false, chunk)
						if v.afterBinary {
							// The Scanner has just judged another file binary.
							bin := []byte("\x00\xff\n" + strings.Repeat("x", 2*H))
							if b, err := s.IsBinary(bytes.NewReader(bin), int64(len(bin)), budget); err != nil || !b {
								t.Fatalf("IsBinary of a binary file = %v, %v", b, err)
							}
						}
						got, bin, firstReads := scanPages(t, s, reused, size, budget, true, refuse)
						if bin != tc.bin {
							t.Fatalf("IsBinary = %v, want %v", bin, tc.bin)
						}
						// IsBinary reads the head once: the Scan's first
						// round, at least HeadBytes, at most headReadMax;
						// HeadBytes only right after a binary file.
						head := min(size, max(H, min(budget, int64(s.chunk+s.m.maxLen-1), headReadMax)))
						if v.afterBinary {
							head = min(size, H)
						}
						if size > 0 && (len(reused.reads) == 0 || reused.reads[0] != [2]int64{0, head}) {
							t.Fatalf("IsBinary's read: %v, want [0 %d]", reused.reads[:min(1, len(reused.reads))], head)
						}
						if bin {
							if len(reused.reads) != 1 {
								t.Fatalf("a binary file read %d times, want once", len(reused.reads))
							}
							return
						}
						if !reflect.DeepEqual(got, want) {
							t.Fatalf("after IsBinary:\n got %+v\nwant %+v", got, want)
						}
						// The first Scan reads none of the head again (with
						// small rounds it reads a match's evidence, the
						// line's start, from the file, as a Scan alone
						// does), and the reads are those of a Scan alone,
						// one more only where the head read less than the
						// Scan's first round (the rest of that round).
						if size == 0 {
							return
						}
						for _, rd := range reused.reads[1:firstReads] {
							if rd[0] < head && chunk == readChunk {
								t.Fatalf("the first Scan read %d bytes at %d, inside the head (%d bytes)", rd[1], rd[0], head)
							}
						}
						round := min(size, budget, int64(s.chunk+s.m.maxLen-1))
						extra := 0
						if head < round {
							extra = 1
						}
						if len(reused.reads) > len(fresh.reads)+extra {
							t.Fatalf("%d reads, a Scan alone %d (head %d, first round %d)", len(reused.reads), len(fresh.reads), head, round)
						}
						if size <= head && len(got) == 1 && len(reused.reads) != 1 {
							t.Fatalf("a file within the head read was read %d times: %v", len(reused.reads), reused.reads[:min(4, len(reused.reads))])
						}
					})
				}
			}
		}
	}
}

// TestIsBinaryReadSizes: IsBinary reads up to headReadMax of a file, but
// only HeadBytes of the one after a file it found binary, and the full
// read again after a text file.
func TestIsBinaryReadSizes(t *testing.T) {
	text := headText(3*HeadBytes, nil, nil)
	bin := append([]byte("\x00\xff\n"), text[3:]...)
	s := newTestScanner(t, []string{"needle"}, false, 0)
	for i, f := range []struct {
		body []byte
		bin  bool
		read int64
	}{
		{text, false, 3 * HeadBytes},
		{bin, true, 3 * HeadBytes},
		{bin, true, HeadBytes},
		{text, false, HeadBytes},
		{text, false, 3 * HeadBytes},
		{bin, true, 3 * HeadBytes},
	} {
		r := &recordingReader{r: bytes.NewReader(f.body)}
		got, err := s.IsBinary(r, int64(len(f.body)), 1<<40)
		if err != nil || got != f.bin || len(r.reads) != 1 || r.reads[0] != [2]int64{0, f.read} {
			t.Fatalf("file %d: IsBinary = %v, %v after reads %v, want %v after reading [0 %d]", i, got, err, r.reads, f.bin, f.read)
		}
	}
}

// TestScanFileEndUncounted: not counting the lines after a file's last
// match changes nothing a search uses: the matches, bytes scanned, done,
// stopped and the position of every call that is not done are those of a
// Scan that counts to the end, and a done call ends at the file's size.
func TestScanFileEndUncounted(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	for iter := range 80 {
		text := randText(rng, 1+rng.Intn(4000))
		terms := termSets[rng.Intn(len(termSets))]
		fold := rng.Intn(2) == 0
		for _, chunk := range []int{5, 64, readChunk} {
			for _, budget := range []int64{20, 300, 1 << 40} {
				for _, refuse := range []bool{false, true} {
					var runs [2][]scanCall
					for k, countToEnd := range []bool{true, false} {
						s := newTestScanner(t, terms, fold, chunk)
						s.countToEnd = countToEnd
						runs[k], _, _ = scanPages(t, s, &recordingReader{r: bytes.NewReader(text)}, int64(len(text)), max(budget, int64(s.m.MaxTermLen())), false, refuse)
					}
					want, got := runs[0], runs[1]
					if len(got) != len(want) {
						t.Fatalf("iter %d: %d calls, counting to the end %d", iter, len(got), len(want))
					}
					for i := range got {
						g, w := got[i], want[i]
						if g.Done {
							if g.Next.Offset != int64(len(text)) {
								t.Fatalf("iter %d call %d: done at %d of %d", iter, i, g.Next.Offset, len(text))
							}
							g.Next, w.Next = Position{}, Position{}
						}
						if !reflect.DeepEqual(g, w) {
							t.Fatalf("iter %d terms %q fold %v chunk %d budget %d call %d:\n got %+v\nwant %+v", iter, terms, fold, chunk, budget, i, g, w)
						}
					}
				}
			}
		}
	}
}
