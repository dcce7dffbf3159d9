//go:build linux

package e2e

// Worker benchmarks: the real fsmcp-worker binary over stdio with the go-sdk
// client, on generated trees (bench_harness_test.go), each fsmcp figure next
// to references measured in the same loop on the same tree. ns/op (and
// MB/s) is the fsmcp side only; each reference is reported as
// <name>-ns/op and the quotient as x-<name>:
//
//	BenchmarkListDirectory/files=N  every directory via list_directory   x-walkdir, x-find
//	BenchmarkSearchFiles/files=N    whole-tree search_files              x-walkdir, x-find
//	BenchmarkSearchText/files=N     whole-tree search_text, rare literal x-rg, x-rg-j1
//	BenchmarkSearchText200MB/...    the same over ~200 MB in 2,000 files x-rg, x-rg-j1
//	BenchmarkSearchText200MBPageSize/scan=S  the same, raw client, pages of S x-rg (bench_rawclient_test.go)
//	BenchmarkRead12MB/...           read_text_file to the end, MB/s      x-readfile
//	BenchmarkReadRoundTrip          1-chunk read_text_file calls         x-discover, x-readfile
//	BenchmarkCallDuringScanAhead    a call while the next page is scanned x-warm (bench_scanahead_test.go)
//
// N is 2k, 20k and 100k (only 2k under -short). The search and walk
// references get the same answer as the fsmcp side, checked before timing.

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	fsworker "github.com/fsmcp/fsmcp/worker"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkListDirectory: walk the whole tree through list_directory, one
// call per directory (and per page), breadth first, the way a client
// enumerates a root. References: filepath.WalkDir and find -mindepth 1 of
// the same tree. ns/call is the cost of one listing.
func BenchmarkListDirectory(b *testing.B) {
	benchEachScale(b, func(b *testing.B, t *benchTreeInfo) { benchListWalk(b, benchStdio, t) })
}

func benchListWalk(b *testing.B, srv benchServer, t *benchTreeInfo) {
	cs := srv.open(b, t.root, benchTreeLimits())
	crawl := func() (calls int) {
		files, dirs := 0, 0
		for queue := []string{""}; len(queue) > 0; queue = queue[1:] {
			es, pages := benchFollow(b, cs, "list_directory", map[string]any{"path": queue[0]})
			calls += pages
			for _, e := range es {
				if benchField(e, "kind") == "directory" {
					dirs++
					queue = append(queue, benchField(e, "path"))
				} else {
					files++
				}
			}
		}
		if files != t.files || dirs != t.dirs {
			b.Fatalf("list_directory walk: %d files, %d directories; the tree has %d, %d", files, dirs, t.files, t.dirs)
		}
		return calls
	}
	calls := crawl()
	c := benchAgainstWalk(b, srv, t, func() { crawl() }, nil, t.files+t.dirs, t.root, "-mindepth", "1")
	c.perOp(b, calls, "ns/call")
	b.ReportMetric(float64(calls), "calls")
}

// benchAgainstWalk times fsmcp, which checks its own answer, against
// filepath.WalkDir counting the paths match accepts and against find with
// findArgs; both must count want. It reports the ratios and returns the
// clock for further figures.
func benchAgainstWalk(b *testing.B, srv benchServer, t *benchTreeInfo, fsmcp func(), match func(rel string) bool, want int, findArgs ...string) *benchClock {
	find := ""
	if srv.refs {
		if n := benchWalkDir(b, t.root, match); n != want {
			b.Fatalf("WalkDir counted %d paths, want %d", n, want)
		}
		if find = benchTool(b, "find"); find != "" {
			if n := benchFind(b, find, findArgs...); n != want {
				b.Fatalf("find printed %d paths, want %d", n, want)
			}
		}
	}
	var c benchClock
	b.ResetTimer()
	for range b.N {
		c.measure(fsmcp)
		if srv.refs {
			c.reference(b, "walkdir", func() { benchWalkDir(b, t.root, match) })
		}
		if find != "" {
			c.reference(b, "find", func() { benchFind(b, find, findArgs...) })
		}
	}
	c.report(b)
	return &c
}

// BenchmarkSearchFiles: search_files for "widget_", held by one path in
// 200, over the whole tree, following cursors to the end. References:
// filepath.WalkDir with the same substring test on root-relative paths, and
// find -type f -path '*widget_*'.
func BenchmarkSearchFiles(b *testing.B) {
	benchEachScale(b, func(b *testing.B, t *benchTreeInfo) { benchSearchFiles(b, benchStdio, t) })
}

func benchSearchFiles(b *testing.B, srv benchServer, t *benchTreeInfo) {
	cs := srv.open(b, t.root, benchTreeLimits())
	args := map[string]any{"query": "widget_"}
	search := func() int {
		got, pages := benchFollow(b, cs, "search_files", args)
		if len(got) != t.widgets {
			b.Fatalf("search_files found %d paths, want %d", len(got), t.widgets)
		}
		return pages
	}
	pages := search()
	match := func(rel string) bool { return strings.Contains(rel, "widget_") }
	benchAgainstWalk(b, srv, t, func() { search() }, match, t.widgets, t.root, "-type", "f", "-path", "*widget_*")
	b.ReportMetric(float64(pages), "pages")
}

// BenchmarkSearchText: a whole-tree search_text for a literal held by 12
// files, at the default budgets (--max-scan-bytes 4 MiB a page), following
// cursors to the end. References: rg -F --no-config -c on the same tree,
// and the same with -j1 (rg searches with a thread per core; the worker
// scans one file at a time). MB/s is of the tree's bytes.
func BenchmarkSearchText(b *testing.B) {
	benchEachScale(b, func(b *testing.B, t *benchTreeInfo) { benchSearchText(b, benchStdio, t, benchTreeLimits()) })
}

// BenchmarkSearchText200MB: the same over ~200 MB in 2,000 files of
// ~100 KiB, at the default budgets and at --max-scan-bytes 64 MiB. Not
// under -short.
func BenchmarkSearchText200MB(b *testing.B) {
	if testing.Short() {
		b.Skip("-short: no 200 MB tree; BenchmarkSearchText covers the path")
	}
	big := benchTreeLimits()
	big.MaxScanBytes = 64 << 20
	for _, v := range []struct {
		name string
		lim  fsworker.Limits
	}{{"default", benchTreeLimits()}, {"scan64MiB", big}} {
		b.Run(v.name, func(b *testing.B) { benchSearchText(b, benchStdio, benchTree(b, benchBigFiles, benchBigMean), v.lim) })
	}
}

func benchSearchText(b *testing.B, srv benchServer, t *benchTreeInfo, lim fsworker.Limits) {
	cs := srv.open(b, t.root, lim)
	args := map[string]any{"query": benchNeedle}
	search := func() int {
		matches, pages := benchFollow(b, cs, "search_text", args)
		if len(matches) != benchNeedleFiles {
			b.Fatalf("search_text found %d matches, want %d", len(matches), benchNeedleFiles)
		}
		for _, m := range matches {
			if !strings.Contains(benchField(m, "text"), benchNeedle) {
				b.Fatalf("match %v lacks the literal", m)
			}
		}
		return pages
	}
	pages := search()
	rg := ""
	if srv.refs {
		if rg = benchTool(b, "rg"); rg != "" {
			if n := benchRipgrep(b, rg, benchNeedle, t.root); n != benchNeedleFiles {
				b.Fatalf("rg counted %d, want %d", n, benchNeedleFiles)
			}
		}
	}
	// CPU time, which other load on the machine disturbs less than wall
	// time: the worker's (all its threads), this process's (the go-sdk
	// client's, on the same cores) and rg's (its rusage).
	pid := 0
	if srv.refs {
		pid = benchChildPID(b, os.Getpid(), workerBin)
	}
	var workerCPU, clientCPU, rgCPU, rgJ1CPU time.Duration
	b.SetBytes(t.bytes)
	var c benchClock
	b.ResetTimer()
	for range b.N {
		var before, clientBefore time.Duration
		if pid != 0 {
			before, clientBefore = procRunTime(b, pid), procRunTime(b, os.Getpid())
		}
		c.measure(func() { search() })
		if pid != 0 {
			clientCPU += procRunTime(b, os.Getpid()) - clientBefore
			workerCPU += procRunTime(b, pid) - before
		}
		if rg != "" {
			c.reference(b, "rg", func() { rgCPU += benchChildrenCPU(func() { benchRipgrep(b, rg, benchNeedle, t.root) }) })
			c.reference(b, "rg-j1", func() { rgJ1CPU += benchChildrenCPU(func() { benchRipgrep(b, rg, benchNeedle, t.root, "-j1") }) })
		}
	}
	c.report(b)
	c.perOp(b, pages, "ns/page")
	b.ReportMetric(float64(pages), "pages")
	if workerCPU > 0 && rgCPU > 0 {
		b.ReportMetric(float64(workerCPU.Nanoseconds())/float64(b.N), "worker-cpu-ns/op")
		b.ReportMetric(float64(clientCPU.Nanoseconds())/float64(b.N), "client-cpu-ns/op")
		b.ReportMetric(float64(workerCPU)/float64(rgCPU), "cpu-x-rg")
		b.ReportMetric(float64(workerCPU)/float64(rgJ1CPU), "cpu-x-rg-j1")
		c.reportFloor(b, workerCPU+clientCPU, "rg")
	}
}

// benchChildPID is the process id of the newest child of process parent
// running bin (a worker on stdio the benchmark started, or one the
// supervisor started).
func benchChildPID(b *testing.B, parent int, bin string) int {
	b.Helper()
	procs, err := os.ReadDir("/proc")
	if err != nil {
		b.Fatal(err)
	}
	comm := filepath.Base(bin)
	pid, newest := 0, int64(-1)
	for _, p := range procs {
		id, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + p.Name() + "/stat")
		if err != nil {
			continue // it ended
		}
		// pid (comm) state ppid ... starttime (the 22nd field)
		open, end := bytes.IndexByte(stat, '('), bytes.LastIndexByte(stat, ')')
		if open < 0 || end < open {
			continue
		}
		f := strings.Fields(string(stat[end+1:]))
		if string(stat[open+1:end]) != comm || len(f) < 20 || f[1] != strconv.Itoa(parent) {
			continue
		}
		if start, err := strconv.ParseInt(f[19], 10, 64); err == nil && start > newest {
			pid, newest = id, start
		}
	}
	if pid == 0 {
		b.Fatalf("no child process %s of process %d in /proc", comm, parent)
	}
	return pid
}

// benchChildrenCPU runs fn and returns the CPU time (user and system) of
// the child processes that ended and were waited for meanwhile.
func benchChildrenCPU(fn func()) time.Duration {
	var before, after syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &before)
	fn()
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &after)
	cpu := func(r *syscall.Rusage) time.Duration {
		return time.Duration(r.Utime.Nano() + r.Stime.Nano())
	}
	return cpu(&after) - cpu(&before)
}

// BenchmarkRead12MB: read a 12 MB file whole through read_text_file,
// following next_cursor; escape-heavy UTF-8 and source-like ASCII at the
// default budgets, and the large-page setting for a client with a
// 1,000,000-byte limit. Reference: os.ReadFile. MB/s is of the file's
// bytes. Under -short the file is 1 MB.
func BenchmarkRead12MB(b *testing.B) {
	size := 12 << 20
	if testing.Short() {
		size = 1 << 20
	}
	large := fsworker.DefaultLimits
	large.MaxReadBytes, large.MaxResultBytes = 500000, 1000000
	for _, v := range []struct {
		name string
		body func(int) []byte
		lim  fsworker.Limits
	}{
		{"mixed", benchUTF8Text, fsworker.DefaultLimits},
		{"ascii", benchASCIIText, fsworker.DefaultLimits},
		{"mixed-large-pages", benchUTF8Text, large},
	} {
		b.Run(v.name, func(b *testing.B) { benchRead(b, benchStdio, v.body(size), v.lim) })
	}
}

func benchRead(b *testing.B, srv benchServer, body []byte, lim fsworker.Limits) {
	root := b.TempDir()
	path := filepath.Join(root, "big.txt")
	benchWriteFile(b, path, body)
	cs := srv.open(b, root, lim)
	got, pages := benchReadWhole(b, cs, "big.txt")
	if got != string(body) {
		b.Fatalf("concatenated text (%d bytes) differs from the file (%d bytes)", len(got), len(body))
	}
	b.SetBytes(int64(len(body)))
	var c benchClock
	b.ResetTimer()
	for range b.N {
		c.measure(func() {
			if _, p := benchReadWhole(b, cs, "big.txt"); p != pages {
				b.Fatalf("%d pages, first read took %d", p, pages)
			}
		})
		if srv.refs {
			c.reference(b, "readfile", func() {
				if _, err := os.ReadFile(path); err != nil {
					b.Fatal(err)
				}
			})
		}
	}
	c.report(b)
	c.perOp(b, pages, "ns/page")
	b.ReportMetric(float64(pages), "pages")
}

// benchReadWhole pages a file to the end and returns its text and pages.
func benchReadWhole(b *testing.B, cs *mcp.ClientSession, path string) (string, int) {
	chunks, pages := benchFollow(b, cs, "read_text_file", map[string]any{"path": path})
	var sb strings.Builder
	for _, c := range chunks {
		sb.WriteString(benchField(c, "text"))
	}
	return sb.String(), pages
}

// benchUTF8Text is n bytes of line-structured UTF-8 with multi-byte runes
// (2-, 3- and 4-byte) and characters JSON escapes spread through it.
func benchUTF8Text(n int) []byte {
	rng := rand.New(rand.NewPCG(12, 34))
	words := []string{"fsmcp", "chunk", "café", "naïve", "Straße", "日本語", "文字列", "🙂", "emoji🚀", "ASCII", "line", "cursor", "page", "\"quoted\"", "tab\tsep", "back\\slash", "<tag>", "a&b"}
	var buf bytes.Buffer
	buf.Grow(n + 256)
	for line := 1; buf.Len() < n; line++ {
		buf.WriteString(strconv.Itoa(line))
		for k := 5 + rng.IntN(10); k > 0; k-- {
			buf.WriteByte(' ')
			buf.WriteString(words[rng.IntN(len(words))])
		}
		buf.WriteByte('\n')
	}
	return benchTrimLine(buf.Bytes(), n)
}

// benchASCIIText is source-code-like ASCII: few characters need escaping.
func benchASCIIText(n int) []byte {
	var buf bytes.Buffer
	for line := 1; buf.Len() < n; line++ {
		fmt.Fprintf(&buf, "\tif err := process(ctx, item%d, opts); err != nil { return fmt.Errorf(\"step %d: %%w\", err) }\n", line, line)
	}
	return benchTrimLine(buf.Bytes(), n)
}

// benchTrimLine cuts text at the last line end at or before n.
func benchTrimLine(text []byte, n int) []byte {
	if i := bytes.LastIndexByte(text[:n], '\n'); i > 0 {
		return text[:i+1]
	}
	return text
}

// BenchmarkReadRoundTrip: read_text_file calls answering a ~1 KiB file in
// one chunk, benchRoundTrips of them per operation; ns/call is one call.
// The calls go over one raw JSON-RPC connection (rawWorker: write the
// line, read the answer, decode the page), so the figure is the worker's,
// not the go-sdk client's decoding. The reference, on the same connection:
// server/discover (a complete answer the worker builds without touching
// the root: the floor of a round trip in this protocol, which has no
// ping).
//
// batches: the reads, then as many discovers, then as many os.ReadFile of
// the file, taking turns; cpu-x-discover is the ratio of the worker's own
// CPU time (all its threads, from schedstat) over the read batches to that
// over the discover batches. pairs: each read followed by a discover (the
// discover first every other time), each call timed. In batches, each side
// runs after a hundred calls of the other, and pays for what they left:
// the SDK's decoding allocates about 160 KB a discover, and pages the
// runtime gave back to the kernel meanwhile fault in again (about 10 us
// each here); pairs leave both sides the same process.
func BenchmarkReadRoundTrip(b *testing.B) {
	body := strings.Repeat("0123456789abcdef fsmcp one-chunk page line\n", 24)[:1000] + "\n"
	root := tree(b, map[string]string{"page.txt": body})
	w := startRawWorker(b, "--root", root, "--include", "**")
	args := map[string]any{"path": "page.txt"}
	read := func(b *testing.B) func() {
		return func() {
			p := w.call(b, "read_text_file", args)
			if items := p.Result.StructuredContent.Items; len(items) != 1 || items[0].Text != body || p.Result.StructuredContent.NextCursor != nil {
				b.Fatalf("want the file in one chunk and no cursor, got %d items", len(items))
			}
		}
	}
	discover := func(b *testing.B) func() {
		return func() {
			if m := w.request(b, "server/discover"); m["resultType"] != "complete" {
				b.Fatalf("server/discover answered %v", m)
			}
		}
	}
	n := benchRoundTrips()
	b.Run("batches", func(b *testing.B) {
		readFile := func() {
			if _, err := os.ReadFile(filepath.Join(root, "page.txt")); err != nil {
				b.Fatal(err)
			}
		}
		benchRepeat(20, func() { read(b)(); discover(b)() })()
		var c benchClock
		// The worker's CPU time in each batch, which other load on the
		// machine disturbs less than the wall time.
		var readCPU, discoverCPU time.Duration
		cpu := func(sum *time.Duration, fn func()) func() {
			return func() {
				start := procRunTime(b, w.pid)
				fn()
				*sum += procRunTime(b, w.pid) - start
			}
		}
		b.ResetTimer()
		for range b.N {
			c.measure(cpu(&readCPU, benchRepeat(n, read(b))))
			c.reference(b, "discover", cpu(&discoverCPU, benchRepeat(n, discover(b))))
			c.reference(b, "readfile", benchRepeat(n, readFile))
		}
		c.report(b)
		c.perOp(b, n, "ns/call")
		if discoverCPU > 0 {
			b.ReportMetric(float64(readCPU)/float64(discoverCPU), "cpu-x-discover")
		}
	})
	b.Run("pairs", func(b *testing.B) {
		benchRepeat(20, func() { read(b)(); discover(b)() })()
		var c benchClock
		b.ResetTimer()
		for range b.N {
			c.pairs(b, n, "discover", discover(b), read(b))
		}
		c.report(b)
		c.perOp(b, n, "ns/call")
	})
}
