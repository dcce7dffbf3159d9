//go:build linux

package e2e

// The measurement harness of the benchmarks in bench_worker_test.go,
// bench_inproc_test.go and supervisor_bench_test.go: trees generated once
// per run and cached, the reference measurements (filepath.WalkDir, find,
// ripgrep, os.ReadFile, a worker alone) and a clock that keeps the fsmcp
// side and each reference apart. Every reference runs in this process, in
// the same benchmark loop and on the same tree as the fsmcp side it is
// compared with, alternating with it, so a ratio is measured side by side
// under the same machine load.
//
// The figures of record (docs/performance.md) come from
//
//	cd e2e && go test -run '^$' -bench . -benchtime 3x -count 5 -timeout 60m .
//
// and the CI smoke run is the same with -benchtime 1x -short, under which
// every scaling benchmark runs on the 2,000-file tree only and nothing
// generates the 200 MB tree.

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fsmcp/fsmcp/internal/limits"
	fsworker "github.com/fsmcp/fsmcp/worker"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// benchClock accumulates the fsmcp side of a benchmark, during which the
// benchmark timer runs (so ns/op and MB/s are the fsmcp side alone), and
// each named reference, during which it is stopped.
type benchClock struct {
	fsmcp time.Duration
	refs  []benchRef
}

type benchRef struct {
	name string
	d    time.Duration
}

// measure runs fn on the fsmcp side.
func (c *benchClock) measure(fn func()) {
	start := time.Now()
	fn()
	c.fsmcp += time.Since(start)
}

// reference runs fn with the benchmark timer stopped and adds its duration
// to the reference called name.
func (c *benchClock) reference(b *testing.B, name string, fn func()) {
	b.StopTimer()
	start := time.Now()
	fn()
	d := time.Since(start)
	b.StartTimer()
	c.add(name, d)
}

// add adds d to the reference called name.
func (c *benchClock) add(name string, d time.Duration) {
	if r := c.find(name); r != nil {
		r.d += d
		return
	}
	c.refs = append(c.refs, benchRef{name, d})
}

// find is the reference called name, nil before it first ran.
func (c *benchClock) find(name string) *benchRef {
	for i := range c.refs {
		if c.refs[i].name == name {
			return &c.refs[i]
		}
	}
	return nil
}

// alternate is operation i of a benchmark that takes turns with a
// reference: fn on the fsmcp side, with the reference ref (called name)
// before it when i is even and after it when i is odd, so that neither
// side always runs first (on a warmer cache, or after the other's
// garbage).
func (c *benchClock) alternate(b *testing.B, i int, name string, ref, fn func()) {
	turns(i, func() { c.reference(b, name, ref) }, func() { c.measure(fn) })
}

// pairs runs fn and ref n times each, a call of one right after a call of
// the other (ref first every other time), and times each call: fn's on the
// fsmcp side, ref's as the reference called name. Unlike batches of each,
// neither side runs after a run of the other's calls, whose garbage (or
// its absence) the next run would pay for. The benchmark timer runs
// throughout: ns/op counts both sides.
func (c *benchClock) pairs(b *testing.B, n int, name string, ref, fn func()) {
	var fsmcp, other time.Duration
	timed := func(sum *time.Duration, f func()) func() {
		return func() {
			start := time.Now()
			f()
			*sum += time.Since(start)
		}
	}
	for i := range n {
		turns(i, timed(&fsmcp, fn), timed(&other, ref))
	}
	c.fsmcp += fsmcp
	c.add(name, other)
}

// turns is operation i of a benchmark with several sides (the fsmcp side
// and references, each a closure that runs it through measure or
// reference): all of them, the one first whose turn it is.
func turns(i int, sides ...func()) {
	for k := range sides {
		sides[(i+k)%len(sides)]()
	}
}

// report stops the timer and reports, for each reference, its time per
// operation as <name>-ns/op and the ratio of the fsmcp side to it as
// x-<name>.
func (c *benchClock) report(b *testing.B) {
	b.StopTimer()
	n := float64(b.N)
	for _, r := range c.refs {
		b.ReportMetric(float64(r.d.Nanoseconds())/n, r.name+"-ns/op")
		if r.d > 0 {
			b.ReportMetric(float64(c.fsmcp)/float64(r.d), "x-"+r.name)
		}
	}
}

// reportRatio reports reference name's time over reference of's as
// "<name>-x-<of>", e.g. what the worker behind barerelay costs against the
// worker alone; nothing while either has not run.
func (c *benchClock) reportRatio(b *testing.B, name, of string) {
	r, o := c.find(name), c.find(of)
	if r != nil && o != nil && o.d > 0 {
		b.ReportMetric(float64(r.d)/float64(o.d), name+"-x-"+of)
	}
}

// reportFloor reports, as floor-x-<ref>, the ratio to reference ref the
// fsmcp side would come to were cpu, the CPU time its processes used in
// all operations (the server's and the client's), spread over every core
// with none left idle: the part of the measured ratio x-<ref> above it is
// time the cores waited, and no scheduling takes the ratio below it.
func (c *benchClock) reportFloor(b *testing.B, cpu time.Duration, ref string) {
	if r := c.find(ref); r != nil && r.d > 0 {
		b.ReportMetric(float64(cpu)/float64(runtime.NumCPU())/float64(r.d), "floor-x-"+ref)
	}
}

// perOp reports total/(b.N*per) under unit, e.g. the time of one call.
func (c *benchClock) perOp(b *testing.B, per int, unit string) {
	if per > 0 {
		b.ReportMetric(float64(c.fsmcp.Nanoseconds())/float64(b.N)/float64(per), unit)
	}
}

// benchRoundTrips is how many calls one operation of a round-trip
// benchmark makes on each side, one batch per side, so that -benchtime 3x
// still times hundreds of calls (a few under -short) while the batches of
// the two sides alternate within a fraction of a second.
func benchRoundTrips() int {
	if testing.Short() {
		return 10
	}
	return 100
}

// benchRepeat is fn n times over.
func benchRepeat(n int, fn func()) func() {
	return func() {
		for range n {
			fn()
		}
	}
}

// benchServer opens a session on a root: over stdio to the built
// fsmcp-worker (the figures of record) or in this process (for profiling).
// refs says whether the benchmark also runs its references.
type benchServer struct {
	refs bool
	open func(b *testing.B, root string, lim fsworker.Limits) *mcp.ClientSession
}

var benchStdio = benchServer{refs: true, open: func(b *testing.B, root string, lim fsworker.Limits) *mcp.ClientSession {
	return worker(b, root, append([]string{"--include", "**"}, benchFlags(lim)...)...)
}}

// benchFlags renders the limits that differ from the defaults as worker
// options.
func benchFlags(l fsworker.Limits) []string {
	var out []string
	for _, e := range limits.Table {
		if v := e.Get(l); v != e.Get(limits.Default) {
			out = append(out, e.Flag(), strconv.FormatInt(v, 10))
		}
	}
	return out
}

// benchTreeLimits are the default limits with the traversal ceilings
// (--max-files, --max-directories, 50,000 each) raised to fit the 100k
// tree; every budget (scan, read, result bytes) stays at its default. The
// ceilings are counters, so raising them costs nothing; the same limits
// serve every size so the sizes compare.
func benchTreeLimits() fsworker.Limits {
	l := fsworker.DefaultLimits
	l.MaxFiles, l.MaxDirectories = 1<<20, 1<<20
	return l
}

// The generated trees all have one shape: 40 files per leaf directory, 10
// leaves per middle directory and 5 middles per top directory
// (tNNN/mN/lN/fNNNNNN.go, so 2,000 files per top directory, depth 3), of
// code-like text whose sizes spread uniformly over [mean/4, 7*mean/4].
// One path in benchWidgetEvery is named widget_NNNNNN.go (search_files'
// query), and benchNeedleFiles files, spread evenly through the tree, hold
// one line with benchNeedle (search_text's query).
const (
	benchWidgetEvery = 200
	benchNeedle      = "fsmcpRareNeedle_83afq"
	benchNeedleFiles = 12
	benchPerLeaf     = 40
	benchLeavesPerM  = 10
	benchMidsPerTop  = 5
)

// The scaling trees: 2k, 20k and 100k files of ~1 KiB (2, 20 and 100 MB),
// the same shape and size distribution, so cost can be compared across
// sizes; and the ripgrep tree, 2,000 files of ~100 KiB (~200 MB).
const (
	benchScaleMean = 1 << 10
	benchBigMean   = 100 << 10
	benchBigFiles  = 2000
)

type benchScale struct {
	name  string
	files int
}

// benchScales are the sizes of the scaling benchmarks; under -short only
// the smallest.
func benchScales() []benchScale {
	all := []benchScale{{"files=2k", 2000}, {"files=20k", 20000}, {"files=100k", 100000}}
	if testing.Short() {
		return all[:1]
	}
	return all
}

// benchEachScale runs fn as one sub-benchmark per scaling tree.
func benchEachScale(b *testing.B, fn func(b *testing.B, t *benchTreeInfo)) {
	for _, s := range benchScales() {
		b.Run(s.name, func(b *testing.B) { fn(b, benchTree(b, s.files, benchScaleMean)) })
	}
}

// benchTreeInfo describes a generated tree.
type benchTreeInfo struct {
	root        string
	files, dirs int // below root
	widgets     int // files whose path holds "widget_"
	bytes       int64
	generated   time.Duration
}

var benchTreeCache struct {
	sync.Mutex
	m map[[2]int]*benchTreeInfo
}

// benchTree returns the tree of files files of about mean bytes, generating
// it on first use. Trees live beside the binaries TestMain built, in the
// directory it removes when the run ends, so one run (all benchmarks, every
// -count) generates each tree once.
func benchTree(b *testing.B, files, mean int) *benchTreeInfo {
	b.Helper()
	benchTreeCache.Lock()
	defer benchTreeCache.Unlock()
	key := [2]int{files, mean}
	if t := benchTreeCache.m[key]; t != nil {
		return t
	}
	root := filepath.Join(filepath.Dir(workerBin), "trees", fmt.Sprintf("%d-%d", files, mean))
	t, err := benchGenerate(root, files, mean)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("generated %d files in %d directories, %d bytes, in %v", t.files, t.dirs, t.bytes, t.generated.Round(time.Millisecond))
	if benchTreeCache.m == nil {
		benchTreeCache.m = map[[2]int]*benchTreeInfo{}
	}
	benchTreeCache.m[key] = t
	return t
}

// benchTreePath is file i's path in the tree shape above.
func benchTreePath(i int) (path string, widget bool) {
	leaf := i / benchPerLeaf
	mid := leaf / benchLeavesPerM
	name := "f"
	if widget = i%benchWidgetEvery == benchWidgetEvery/2; widget {
		name = "widget_"
	}
	return fmt.Sprintf("t%03d/m%d/l%d/%s%06d.go", mid/benchMidsPerTop, mid%benchMidsPerTop, leaf%benchLeavesPerM, name, i), widget
}

// benchGenerate writes the tree with a few goroutines, one leaf directory
// at a time.
func benchGenerate(root string, files, mean int) (*benchTreeInfo, error) {
	start := time.Now()
	needles := make(map[int]bool, benchNeedleFiles)
	for k := range benchNeedleFiles {
		needles[(2*k+1)*files/(2*benchNeedleFiles)] = true
	}
	leaves := (files + benchPerLeaf - 1) / benchPerLeaf
	mids := (leaves + benchLeavesPerM - 1) / benchLeavesPerM
	tops := (mids + benchMidsPerTop - 1) / benchMidsPerTop
	t := &benchTreeInfo{root: root, files: files, dirs: leaves + mids + tops}
	var total atomic.Int64
	var widgets atomic.Int64
	var errOnce sync.Once
	var firstErr error
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 0, 2*mean+4096)
			for leaf := range jobs {
				for i := leaf * benchPerLeaf; i < min(files, (leaf+1)*benchPerLeaf); i++ {
					rel, widget := benchTreePath(i)
					full := filepath.Join(root, filepath.FromSlash(rel))
					if i == leaf*benchPerLeaf {
						if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
							errOnce.Do(func() { firstErr = err })
							break
						}
					}
					buf = benchCodeFile(buf[:0], i, mean, needles[i])
					if err := os.WriteFile(full, buf, 0o644); err != nil {
						errOnce.Do(func() { firstErr = err })
						break
					}
					total.Add(int64(len(buf)))
					if widget {
						widgets.Add(1)
					}
				}
			}
		}()
	}
	for leaf := range leaves {
		jobs <- leaf
	}
	close(jobs)
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	// Written back now, not by the kernel during the timed runs that
	// follow (200 MB of dirty pages took seconds of disk and kworker time
	// in the first runs of the 206 MB tree).
	if err := syncTree(root); err != nil {
		return nil, err
	}
	t.bytes, t.widgets, t.generated = total.Load(), int(widgets.Load()), time.Since(start)
	return t, nil
}

// syncTree writes back the filesystem that holds root (syncfs(2)).
func syncTree(root string) error {
	f, err := os.Open(root)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := unix.Syncfs(int(f.Fd())); err != nil {
		return fmt.Errorf("syncfs %s: %w", root, err)
	}
	return nil
}

// benchCodePool is a pool of code-like lines the generated files are
// drawn from.
var benchCodePool = sync.OnceValue(func() []string {
	rng := rand.New(rand.NewPCG(56, 78))
	idents := []string{"ctx", "err", "req", "resp", "buf", "cfg", "root", "walk", "entry", "cursor", "page", "limit", "scope", "state", "digest", "path", "name", "items", "result", "handler", "server", "client", "session", "reader", "writer", "offset", "budget", "match", "line", "text", "files", "dirs", "depth", "count", "total", "index", "key", "value", "opts", "conf"}
	types := []string{"string", "int", "int64", "[]byte", "error", "bool", "*Root", "Scope", "*Walk", "map[string]any", "[]string", "context.Context", "*os.File", "io.Reader"}
	id := func() string { return idents[rng.IntN(len(idents))] }
	ty := func() string { return types[rng.IntN(len(types))] }
	camel := func() string {
		a, c := id(), id()
		return strings.ToUpper(a[:1]) + a[1:] + strings.ToUpper(c[:1]) + c[1:]
	}
	templates := []func() string{
		func() string {
			return fmt.Sprintf("func (%s *%s) %s(%s %s, %s %s) (%s, error) {", id()[:1], camel(), camel(), id(), ty(), id(), ty(), ty())
		},
		func() string {
			return fmt.Sprintf("\tif err := %s.%s(ctx, %s); err != nil {", id(), camel(), id())
		},
		func() string { return fmt.Sprintf("\t\treturn nil, fmt.Errorf(\"%s %s: %%w\", err)", id(), id()) },
		func() string { return "\t}" },
		func() string { return "}" },
		func() string { return "" },
		func() string { return fmt.Sprintf("\t%s := make([]%s, 0, %d)", id(), ty(), rng.IntN(512)) },
		func() string {
			return fmt.Sprintf("\t%s, %s := %s.%s(%s[%d:])", id(), id(), id(), camel(), id(), rng.IntN(64))
		},
		func() string {
			return fmt.Sprintf("// %s %s the %s of %s, bounded by %s.", camel(), id(), id(), id(), id())
		},
		func() string { return fmt.Sprintf("\tfor _, %s := range %s.%s {", id(), id(), id()) },
		func() string { return fmt.Sprintf("\t\t%s += len(%s.%s) // %s", id(), id(), camel(), id()) },
		func() string { return fmt.Sprintf("\tvar %s %s = %q", id(), ty(), id()+"-"+id()) },
	}
	pool := make([]string, 1<<15)
	for i := range pool {
		pool[i] = templates[rng.IntN(len(templates))]() + "\n"
	}
	return pool
})

// benchCodeFile appends file i's body to buf: lines from the pool up to its
// size, and with needle one line holding benchNeedle somewhere in it.
func benchCodeFile(buf []byte, i, mean int, needle bool) []byte {
	pool := benchCodePool()
	rng := rand.New(rand.NewPCG(0x5eed, uint64(i)))
	size := mean/4 + rng.IntN(3*mean/2+1)
	buf = append(buf, "package pkg\n\n"...)
	needleLine := -1
	if needle {
		needleLine = rng.IntN(size/40 + 1)
	}
	for ln := 0; len(buf) < size; ln++ {
		if ln == needleLine {
			buf = append(buf, "\tlog.Printf(\""+benchNeedle+" %d\", n)\n"...)
		}
		buf = append(buf, pool[rng.IntN(len(pool))]...)
		if ln == needleLine {
			needleLine = -1
		}
	}
	if needleLine >= 0 { // the lines ran out before the needle's
		buf = append(buf, "\tlog.Printf(\""+benchNeedle+" %d\", n)\n"...)
	}
	return buf
}

// benchWalkDir walks root with filepath.WalkDir and counts the files and
// directories below it or, with match, the files whose root-relative path
// it accepts.
func benchWalkDir(b *testing.B, root string, match func(rel string) bool) int {
	n := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != root && (match == nil || !d.IsDir() && match(p[len(root)+1:])) {
			n++
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// benchTool is the path of an external reference tool, or "" when it is
// not installed (the benchmark then reports no ratio against it).
func benchTool(b *testing.B, name string) string {
	p, err := exec.LookPath(name)
	if err != nil {
		b.Logf("%s not on PATH: no x-%s ratio (%v)", name, name, err)
		return ""
	}
	return p
}

// benchLines runs a reference command and returns the lines it printed.
func benchLines(b *testing.B, bin string, args ...string) []byte {
	out, err := exec.Command(bin, args...).Output()
	if err != nil {
		b.Fatalf("%s %s: %v", filepath.Base(bin), strings.Join(args, " "), err)
	}
	return out
}

// benchFind runs find with args and counts the lines it printed.
func benchFind(b *testing.B, find string, args ...string) int {
	return bytes.Count(benchLines(b, find, args...), []byte{'\n'})
}

// benchRipgrep runs rg -F --no-config -c [flags] needle dir and returns the
// sum of its per-file counts.
func benchRipgrep(b *testing.B, rg, needle, dir string, flags ...string) int {
	n := 0
	args := append(append([]string{"-F", "--no-config", "-c"}, flags...), needle, dir)
	sc := bufio.NewScanner(bytes.NewReader(benchLines(b, rg, args...)))
	for sc.Scan() {
		l := sc.Text()
		k, err := strconv.Atoi(l[strings.LastIndexByte(l, ':')+1:])
		if err != nil {
			b.Fatalf("rg output line %q", l)
		}
		n += k
	}
	return n
}

// benchWorkerReady starts the worker alone with args, connects (the MCP
// initialize handshake) and waits for its tools/list answer; it returns the
// session, which the caller closes, its process and the number of tools.
func benchWorkerReady(b *testing.B, args ...string) (*mcp.ClientSession, *exec.Cmd, int) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.Command(workerBin, args...)
	cmd.Env = []string{}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "fsmcp-bench", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		b.Fatalf("connect to the worker: %v", err)
	}
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		b.Fatalf("worker tools/list: %v", err)
	}
	return cs, cmd, len(res.Tools)
}

// benchCPU is the CPU time an exited process and the children it waited
// for used.
func benchCPU(cmd *exec.Cmd) time.Duration {
	if cmd.ProcessState == nil {
		return 0
	}
	return cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}

// benchWriteFile writes body to path, creating its directory.
func benchWriteFile(b *testing.B, path string, body []byte) {
	b.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(path, body, 0o644); err != nil {
		b.Fatal(err)
	}
}

// benchCall calls tool, which must succeed, and returns its page as the
// SDK decoded it: the items and the next cursor ("" after the last page).
// It reads the SDK's decoded structuredContent in place, so the fsmcp side
// carries no decoding beyond what any go-sdk client pays.
func benchCall(b *testing.B, cs *mcp.ClientSession, tool string, args map[string]any) ([]any, string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		b.Fatalf("%s(%v): %v", tool, args, err)
	}
	if res.IsError {
		b.Fatalf("%s(%v) failed: %s", tool, args, resultText(res))
	}
	page, ok := res.StructuredContent.(map[string]any)
	if !ok {
		b.Fatalf("%s: structuredContent is a %T", tool, res.StructuredContent)
	}
	items, _ := page["items"].([]any)
	next, _ := page["next_cursor"].(string)
	return items, next
}

// benchFollow calls a paginated tool to the end and returns the items of
// every page and the number of pages.
func benchFollow(b *testing.B, cs *mcp.ClientSession, tool string, args map[string]any) ([]map[string]any, int) {
	var all []map[string]any
	for pages := 1; ; pages++ {
		items, next := benchCall(b, cs, tool, args)
		for _, it := range items {
			m, ok := it.(map[string]any)
			if !ok {
				b.Fatalf("%s: item is a %T", tool, it)
			}
			all = append(all, m)
		}
		if next == "" {
			return all, pages
		}
		more := make(map[string]any, len(args)+1)
		for k, v := range args {
			more[k] = v
		}
		more["cursor"] = next
		args = more
	}
}

// benchField is an item's string field.
func benchField(item map[string]any, name string) string {
	s, _ := item[name].(string)
	return s
}

// benchNamed reports whether the -bench pattern names sub, so that
// profiling aids run only when asked for.
func benchNamed(sub string) bool {
	f := flag.Lookup("test.bench")
	return f != nil && strings.Contains(f.Value.String(), sub)
}
