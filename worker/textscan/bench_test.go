package textscan

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	benchOnce sync.Once
	benchText []byte
)

// benchCorpus is ~64 MiB of generated source-like text with a rare literal
// ("zqxjNeedle") on a handful of lines.
func benchCorpus() []byte {
	benchOnce.Do(func() {
		rng := rand.New(rand.NewSource(42))
		words := []string{"func", "return", "if", "err", "nil", "the", "value", "for", "range",
			"string", "int", "package", "import", "struct", "type", "var", "const", "else",
			"Config", "Handler", "ctx", "x", "i", "len", "make", "append", "error", "true", "false",
			"(", ")", "{", "}", "=", ":=", ",", ".", "//", "über", "naïve"}
		const size = 64 << 20
		b := make([]byte, 0, size+256)
		for len(b) < size {
			n := 3 + rng.Intn(12)
			b = append(b, "\t"[:rng.Intn(2)]...)
			for i := 0; i < n; i++ {
				b = append(b, words[rng.Intn(len(words))]...)
				b = append(b, ' ')
			}
			if rng.Intn(1<<17) == 0 {
				b = append(b, "zqxjNeedle"...)
			}
			b = append(b, '\n')
		}
		benchText = b
	})
	return benchText
}

func benchScan(b *testing.B, terms []string, fold bool) {
	text := benchCorpus()
	m, err := NewMatcher(terms, fold)
	if err != nil {
		b.Fatal(err)
	}
	s := NewScanner(m)
	r := bytes.NewReader(text)
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for b.Loop() {
		n := 0
		pos := Position{}
		for {
			next, _, done, _, err := s.Scan(r, int64(len(text)), pos, 1<<40, func(Match) bool { n++; return true })
			if err != nil {
				b.Fatal(err)
			}
			if done {
				break
			}
			pos = next
		}
		if n == 0 && terms[0] == "zqxjNeedle" {
			b.Fatal("no match")
		}
	}
}

func BenchmarkScanRare(b *testing.B)     { benchScan(b, []string{"zqxjNeedle"}, false) }
func BenchmarkScanRareFold(b *testing.B) { benchScan(b, []string{"ZQXJneedle"}, true) }
func BenchmarkScanRare4(b *testing.B) {
	benchScan(b, []string{"zqxjNeedle", "Frobnicate", "qwertyuiop", "#pragma"}, false)
}
func BenchmarkScanRare4Fold(b *testing.B) {
	benchScan(b, []string{"zqxjNeedle", "Frobnicate", "qwertyuiop", "#pragma"}, true)
}

// BenchmarkScanPaged scans the corpus in 1 MiB budgets, as a paging caller
// would.
func BenchmarkScanPaged(b *testing.B) {
	text := benchCorpus()
	m, _ := NewMatcher([]string{"zqxjNeedle"}, true)
	s := NewScanner(m)
	r := bytes.NewReader(text)
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for b.Loop() {
		pos := Position{}
		for {
			next, _, done, _, err := s.Scan(r, int64(len(text)), pos, 1<<20, func(Match) bool { return true })
			if err != nil {
				b.Fatal(err)
			}
			if done {
				break
			}
			pos = next
		}
	}
}

// BenchmarkScanCommon reports many lines (a common word), exercising line
// location and evidence.
func BenchmarkScanCommon(b *testing.B) { benchScan(b, []string{"Handler"}, false) }

// BenchmarkScanRareCommonFirst: a rare term whose first byte is common in
// code (bytes.Index anchors on the first byte; the scanner on the rarest).
func BenchmarkScanRareCommonFirst(b *testing.B) {
	benchScan(b, []string{"fsmcpRareNeedle_83afq"}, false)
}

// BenchmarkScanAdversarial scans a 4 MiB page of each adversarial input
// (see automaton_test.go) and, alternating with it, the case-sensitive
// search for the first term alone over the same bytes; x-one-term is the
// ratio of the two.
func BenchmarkScanAdversarial(b *testing.B) {
	for _, tc := range adversarial {
		b.Run(tc.name, func(b *testing.B) {
			text := tc.text(4 << 20)
			scan := func(terms []string, fold bool) time.Duration {
				m, err := NewMatcher(terms, fold)
				if err != nil {
					b.Fatal(err)
				}
				s := NewScanner(m)
				start := time.Now()
				_, _, done, _, err := s.Scan(bytes.NewReader(text), int64(len(text)), Position{}, 1<<40, func(Match) bool { return true })
				if err != nil || !done {
					b.Fatal(done, err)
				}
				return time.Since(start)
			}
			var ours, ref time.Duration
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				ours += scan(tc.terms, tc.fold)
				ref += scan(tc.terms[:1], false)
			}
			b.ReportMetric(float64(ours)/float64(ref), "x-one-term")
		})
	}
}

// benchTerms16 are the rare literal and 15 identifiers the corpus does not
// hold, of varied letters (e2e's BenchmarkSearchTextTermCost uses the same
// 15).
var benchTerms16 = []string{"zqxjNeedle", "unmarshalJSONValue", "QuotaExceeded", "mutex.Unlock", "http.StatusNotFound",
	"yamlDecoder", "zipArchive", "Vector3D", "kafkaTopic", "grpcServerOpts", "bcrypt.Compare",
	"xmlAttr", "jwtClaims", "Prometheus", "sqlTx.Commit", "WebSocketUpgrade"}

// BenchmarkScanRare16 is BenchmarkScanRare with 15 more terms over the same
// bytes: compare their ns/op.
func BenchmarkScanRare16(b *testing.B) { benchScan(b, benchTerms16, false) }

// BenchmarkScanPrefilter scans the corpus for term sets with and without
// the prefilter (whether useTeddy would choose it or not), alternating in
// one loop, with each kind of step the CPU has; x-anchors is the
// prefilter's time over the anchor search's (one pass per term) over the
// same bytes.
func BenchmarkScanPrefilter(b *testing.B) {
	if !haveTeddy {
		b.Fatal("the prefilter needs AVX2, which this CPU lacks")
	}
	saved := teddyWide
	defer func() { teddyWide = saved }()
	for _, wide := range []bool{false, true} {
		if wide && !saved {
			continue // this CPU lacks AVX-512 VBMI
		}
		path := map[bool]string{false: "avx2", true: "avx512vbmi"}[wide]
		for _, tc := range []struct {
			name  string
			terms []string
			fold  bool
			text  []byte // nil: the corpus
		}{
			{"rare1-folded", benchTerms16[:1], true, nil},
			{"rare2", benchTerms16[:2], false, nil},
			{"rare4", benchTerms16[:4], false, nil},
			{"rare16", benchTerms16, false, nil},
			{"rare16-folded", benchTerms16, true, nil},
			// Terms whose opening bytes are common words of the corpus.
			{"common-prefix4", []string{"return zqx", "func Qj", "string]", "the_end"}, false, nil},
			// Terms of one and two bytes the corpus is full of.
			{"short3", []string{"x", ":=", "if"}, false, nil},
			// A match on every 2-byte line, and a term whose window is
			// 250 bytes into it: each hit looks on to the line's end.
			{"late-window-every-line", []string{strings.Repeat("a", 250) + "qzj", "x"}, false,
				bytes.Repeat([]byte("x\n"), 4<<20)},
		} {
			b.Run(path+"/"+tc.name, func(b *testing.B) {
				teddyWide = wide
				benchPrefilter(b, tc.terms, tc.fold, tc.text)
			})
		}
	}
}

func benchPrefilter(b *testing.B, terms []string, fold bool, text []byte) {
	if text == nil {
		text = benchCorpus()
	}
	m, err := NewMatcher(terms, fold)
	if err != nil {
		b.Fatal(err)
	}
	if m.td == nil { // useTeddy prefers the anchors: show why
		m.td = newTeddy(m.terms, m.fold, staticWindows(m.terms, m.fold))
	}
	r := bytes.NewReader(text)
	scan := func(noTeddy bool) time.Duration {
		s := NewScanner(m)
		s.noTeddy = noTeddy
		start := time.Now()
		_, _, done, _, err := s.Scan(r, int64(len(text)), Position{}, 1<<40, func(Match) bool { return true })
		if err != nil || !done {
			b.Fatal(done, err)
		}
		return time.Since(start)
	}
	b.SetBytes(int64(len(text)))
	ours, ref := takeTurns(b, func() time.Duration { return scan(false) }, func() time.Duration { return scan(true) })
	b.ReportMetric(float64(ours)/float64(ref), "x-anchors")
}

// BenchmarkHeadRead: IsBinary, then a Scan of a text file, over 200 files
// on disk, with IsBinary reading up to headReadMax (a file that fits read
// by one pread) and, taking turns in the same loop, only HeadBytes (then
// the Scan reads the rest). x-8KiB-head is the first's time
// over the second's. text: files of 25-175 KiB (the sizes of e2e's 206 MB
// benchmark); binary: 1 MiB files whose first line holds a NUL and an
// invalid byte, one after the other (IsBinary reads HeadBytes after a
// binary file); binary-after-text: the same, each as if it came right after
// a text file, so the larger read is the cost.
func BenchmarkHeadRead(b *testing.B) {
	b.Run("text", func(b *testing.B) { benchHeadRead(b, false, false) })
	b.Run("binary", func(b *testing.B) { benchHeadRead(b, true, false) })
	b.Run("binary-after-text", func(b *testing.B) { benchHeadRead(b, true, true) })
}

func benchHeadRead(b *testing.B, binary, afterText bool) {
	text := benchCorpus()
	dir := b.TempDir()
	rng := rand.New(rand.NewSource(7))
	type file struct {
		f    *os.File
		size int64
	}
	var files []file
	var total int64
	for i := range 200 {
		size := 25<<10 + rng.Intn(150<<10)
		if binary {
			size = 1 << 20
		}
		off := rng.Intn(len(text) - size)
		body := text[off : off+size]
		if binary {
			body = append([]byte("\x00\xff\n"), body[3:]...)
		}
		p := filepath.Join(dir, fmt.Sprintf("f%03d.go", i))
		if err := os.WriteFile(p, body, 0o644); err != nil {
			b.Fatal(err)
		}
		f, err := os.Open(p)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { f.Close() })
		files = append(files, file{f, int64(size)})
		total += int64(size)
	}
	m, err := NewMatcher([]string{"zqxjNeedle"}, false)
	if err != nil {
		b.Fatal(err)
	}
	s := NewScanner(m)
	now := headReadMax
	defer func() { headReadMax = now }()
	scan := func(head int64) time.Duration {
		headReadMax = head
		start := time.Now()
		for _, f := range files {
			if afterText {
				s.lastBinary = false
			}
			bin, err := s.IsBinary(f.f, f.size, 1<<40)
			if err != nil || bin != binary {
				b.Fatal(err, bin)
			}
			if bin {
				continue
			}
			if _, _, done, _, err := s.Scan(f.f, f.size, Position{}, 1<<40, func(Match) bool { return true }); err != nil || !done {
				b.Fatal(err, done)
			}
		}
		return time.Since(start)
	}
	after, before := takeTurns(b, func() time.Duration { return scan(now) }, func() time.Duration { return scan(HeadBytes) })
	b.ReportMetric(float64(after.Nanoseconds())/float64(b.N*len(files)), "ns/file")
	b.ReportMetric(float64(before.Nanoseconds())/float64(b.N*len(files)), "8KiB-head-ns/file")
	b.ReportMetric(float64(after)/float64(before), "x-8KiB-head")
}

// BenchmarkScanFileEnds: whole Scans of 200 files of 25-175 KiB in memory
// with one match each near their start, counting no lines after a file's
// last match (nothing resumes from its end) and, taking turns in the same
// loop, counting them (countToEnd). x-count-to-end is the first's time
// over the second's.
func BenchmarkScanFileEnds(b *testing.B) {
	text := benchCorpus()
	rng := rand.New(rand.NewSource(7))
	var files [][]byte
	var total int64
	for range 200 {
		size := 25<<10 + rng.Intn(150<<10)
		off := rng.Intn(len(text) - size)
		f := append([]byte("zqxjNeedle\n"), text[off:off+size]...)
		files = append(files, f)
		total += int64(len(f))
	}
	m, err := NewMatcher([]string{"zqxjNeedle"}, false)
	if err != nil {
		b.Fatal(err)
	}
	s := NewScanner(m)
	scan := func(countToEnd bool) time.Duration {
		s.countToEnd = countToEnd
		start := time.Now()
		for _, f := range files {
			n := 0
			_, _, done, _, err := s.Scan(bytes.NewReader(f), int64(len(f)), Position{}, 1<<40, func(Match) bool { n++; return true })
			if err != nil || !done || n == 0 {
				b.Fatal(err, done, n)
			}
		}
		return time.Since(start)
	}
	b.SetBytes(2 * total) // each op scans the files both ways
	after, before := takeTurns(b, func() time.Duration { return scan(false) }, func() time.Duration { return scan(true) })
	b.ReportMetric(float64(after.Nanoseconds())/float64(b.N*len(files)), "ns/file")
	b.ReportMetric(float64(before.Nanoseconds())/float64(b.N*len(files)), "count-to-end-ns/file")
	b.ReportMetric(float64(after)/float64(before), "x-count-to-end")
}

// takeTurns runs a and z once each every b.Loop, a first on even rounds
// and z first on odd ones, so that both see the same machine, and returns
// the time each took in all.
func takeTurns(b *testing.B, a, z func() time.Duration) (ta, tz time.Duration) {
	for i := 0; b.Loop(); i++ {
		if i%2 == 0 {
			ta += a()
			tz += z()
		} else {
			tz += z()
			ta += a()
		}
	}
	return ta, tz
}
