//go:build linux

package e2e

// BenchmarkRead12MBRawClient is BenchmarkRead12MB with the go-sdk client
// replaced by the least a client must do: write each request line to the
// real fsmcp-worker's stdin, read the response line, decode the page's
// structuredContent (items and next_cursor) and join the chunks. The
// difference between the two is the go-sdk client's own decoding (it
// decodes every result twice: content and structuredContent, the latter
// into map[string]any), so this figure is what serving the file costs.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func BenchmarkRead12MBRawClient(b *testing.B) {
	size := 12 << 20
	if testing.Short() {
		size = 1 << 20
	}
	for _, tc := range []struct {
		name string
		body []byte
	}{
		{"mixed", benchUTF8Text(size)},
		{"ascii", benchASCIIText(size)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			root := b.TempDir()
			benchWriteFile(b, filepath.Join(root, "big.txt"), tc.body)
			s := startRawWorker(b, "--root", root, "--include", "**")
			text, pages := s.readWhole(b, "big.txt")
			if text != string(tc.body) {
				b.Fatalf("joined chunks (%d bytes) differ from the file (%d bytes)", len(text), len(tc.body))
			}
			b.SetBytes(int64(len(tc.body)))
			b.ResetTimer()
			for range b.N {
				if _, p := s.readWhole(b, "big.txt"); p != pages {
					b.Fatalf("%d pages, first read took %d", p, pages)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(pages), "pages")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(pages), "ns/page")
		})
	}
}

// BenchmarkSearchText200MBRawClient is SearchText200MB/default with the
// go-sdk client replaced by rawWorker: on two cores the go-sdk client's
// decoding of each of the 50 pages (twice: content and structuredContent)
// runs beside the worker, so this is the worker's own figure against
// `rg -F`, taking turns with it on the same tree as there. Both are
// reported in docs/performance.md.
func BenchmarkSearchText200MBRawClient(b *testing.B) {
	if testing.Short() {
		b.Skip("-short: no 200 MB tree; BenchmarkSearchText covers the path")
	}
	t := benchTree(b, benchBigFiles, benchBigMean)
	w := startRawWorker(b, append([]string{"--root", t.root, "--include", "**"}, benchFlags(benchTreeLimits())...)...)
	pages := w.searchNeedle(b)
	rg := benchRequireRipgrep(b, t)
	var workerCPU, clientCPU, rgCPU time.Duration
	var c benchClock
	b.SetBytes(t.bytes)
	b.ResetTimer()
	for range b.N {
		before, clientBefore := procRunTime(b, w.pid), procRunTime(b, os.Getpid())
		c.measure(func() { w.searchNeedle(b) })
		clientCPU += procRunTime(b, os.Getpid()) - clientBefore
		workerCPU += procRunTime(b, w.pid) - before
		c.reference(b, "rg", func() { rgCPU += benchChildrenCPU(func() { benchRipgrep(b, rg, benchNeedle, t.root) }) })
	}
	c.report(b)
	c.perOp(b, pages, "ns/page")
	b.ReportMetric(float64(workerCPU)/float64(rgCPU), "cpu-x-rg")
	b.ReportMetric(float64(workerCPU.Nanoseconds())/float64(b.N), "worker-cpu-ns/op")
	b.ReportMetric(float64(clientCPU.Nanoseconds())/float64(b.N), "client-cpu-ns/op")
	c.reportFloor(b, workerCPU+clientCPU, "rg")
}

// BenchmarkSearchText200MBPageSize: the search of
// BenchmarkSearchText200MBRawClient with --max-scan-bytes from 1 MiB to
// the whole tree in one page, each against rg -F taking turns with it.
// What the figures show: how much of a search's time goes to its page
// boundaries (a page answered, the next asked for) rather than to
// scanning; the default is 4 MiB (docs/reference.md, "Limits").
func BenchmarkSearchText200MBPageSize(b *testing.B) {
	if testing.Short() {
		b.Skip("-short: no 200 MB tree")
	}
	t := benchTree(b, benchBigFiles, benchBigMean)
	rg := benchRequireRipgrep(b, t)
	for _, tc := range []struct {
		name string
		scan int64
	}{{"1MiB", 1 << 20}, {"4MiB", 4 << 20}, {"16MiB", 16 << 20}, {"64MiB", 64 << 20}, {"whole", 1 << 30}} {
		b.Run("scan="+tc.name, func(b *testing.B) {
			lim := benchTreeLimits()
			lim.MaxScanBytes = tc.scan
			w := startRawWorker(b, append([]string{"--root", t.root, "--include", "**"}, benchFlags(lim)...)...)
			pages := w.searchNeedle(b)
			var c benchClock
			b.SetBytes(t.bytes)
			b.ResetTimer()
			for i := range b.N {
				c.alternate(b, i, "rg", func() { benchRipgrep(b, rg, benchNeedle, t.root) }, func() { w.searchNeedle(b) })
			}
			c.report(b)
			b.ReportMetric(float64(pages), "pages")
		})
	}
}

// benchRequireRipgrep returns rg's path, having checked that it finds the
// needle files of t; a benchmark whose reference it is fails without it.
func benchRequireRipgrep(b *testing.B, t *benchTreeInfo) string {
	b.Helper()
	rg := benchTool(b, "rg")
	if rg == "" {
		b.Fatal("this benchmark's reference is ripgrep: apt-get install ripgrep")
	}
	if n := benchRipgrep(b, rg, benchNeedle, t.root); n != benchNeedleFiles {
		b.Fatalf("rg counted %d, want %d", n, benchNeedleFiles)
	}
	return rg
}

// searchNeedle follows search_text for benchNeedle through every page,
// checks that it found the needle files, and returns how many pages it
// took.
func (w *rawWorker) searchNeedle(b *testing.B) int {
	b.Helper()
	args := map[string]any{"query": benchNeedle}
	matches := 0
	for pages := 1; ; pages++ {
		p := w.call(b, "search_text", args)
		for _, it := range p.Result.StructuredContent.Items {
			if !strings.Contains(it.Text, benchNeedle) {
				b.Fatalf("match %q lacks the literal", it.Text)
			}
			matches++
		}
		next := p.Result.StructuredContent.NextCursor
		if next == nil {
			if matches != benchNeedleFiles {
				b.Fatalf("search_text found %d matches, want %d", matches, benchNeedleFiles)
			}
			return pages
		}
		args = map[string]any{"query": benchNeedle, "cursor": *next}
	}
}

// rawWorker is a worker process spoken to in JSON-RPC lines.
type rawWorker struct {
	in  io.WriteCloser
	out *bufio.Reader
	id  int
	pid int
}

func startRawWorker(b *testing.B, args ...string) *rawWorker {
	b.Helper()
	cmd := exec.Command(workerBin, args...)
	cmd.Env = []string{}
	cmd.Stderr = &testWriter{t: b}
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { in.Close(); cmd.Wait() })
	return &rawWorker{in: in, out: bufio.NewReaderSize(out, 1<<20), pid: cmd.Process.Pid}
}

// procRunTime is the CPU time process pid's threads have run, to the
// nanosecond (the first field of each /proc/<pid>/task/<tid>/schedstat).
// A thread that ended meanwhile is not counted.
func procRunTime(t testing.TB, pid int) time.Duration {
	t.Helper()
	var sum time.Duration
	for _, b := range taskFiles(t, pid, "schedstat") {
		f := strings.Fields(string(b))
		if len(f) == 0 {
			continue
		}
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			t.Fatalf("schedstat of a thread of process %d: %q", pid, b)
		}
		sum += time.Duration(ns)
	}
	return sum
}

// taskFiles returns the contents of /proc/<pid>/task/<tid>/<name> for each
// thread of process pid that is still there when it is read.
func taskFiles(t testing.TB, pid int, name string) [][]byte {
	t.Helper()
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var files [][]byte
	for _, task := range tasks {
		b, err := os.ReadFile(filepath.Join(dir, task.Name(), name))
		if err != nil {
			continue // the thread ended
		}
		files = append(files, b)
	}
	return files
}

type rawPage struct {
	Result struct {
		IsError           bool `json:"isError"`
		StructuredContent struct {
			Items      []chunkItem `json:"items"`
			NextCursor *string     `json:"next_cursor"`
		} `json:"structuredContent"`
	} `json:"result"`
	Error json.RawMessage `json:"error"`
}

// call sends one tools/call and decodes the page it answers.
func (w *rawWorker) call(b *testing.B, tool string, args map[string]any) *rawPage {
	b.Helper()
	w.id++
	argb, err := json.Marshal(args)
	if err != nil {
		b.Fatal(err)
	}
	fmt.Fprintf(w.in, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{%s,"name":%q,"arguments":%s}}`+"\n", w.id, newMeta, tool, argb)
	line, err := w.out.ReadBytes('\n')
	if err != nil {
		b.Fatalf("reading the response: %v", err)
	}
	var p rawPage
	if err := json.Unmarshal(line, &p); err != nil || p.Error != nil || p.Result.IsError {
		b.Fatalf("%s failed: %v %.300s", tool, err, line)
	}
	return &p
}

// request sends a request with no parameters but the per-request _meta
// and returns its result object.
func (w *rawWorker) request(b *testing.B, method string) map[string]any {
	b.Helper()
	w.id++
	fmt.Fprintf(w.in, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":{%s}}`+"\n", w.id, method, newMeta)
	line, err := w.out.ReadBytes('\n')
	if err != nil {
		b.Fatalf("reading the response: %v", err)
	}
	var m struct {
		Result map[string]any  `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(line, &m); err != nil || m.Error != nil || m.Result == nil {
		b.Fatalf("%s failed: %v %.300s", method, err, line)
	}
	return m.Result
}

func (w *rawWorker) readWhole(b *testing.B, path string) (string, int) {
	var sb strings.Builder
	args := map[string]any{"path": path}
	for pages := 1; ; pages++ {
		p := w.call(b, "read_text_file", args)
		for _, c := range p.Result.StructuredContent.Items {
			sb.WriteString(c.Text)
		}
		next := p.Result.StructuredContent.NextCursor
		if next == nil {
			return sb.String(), pages
		}
		args = map[string]any{"path": path, "cursor": *next}
	}
}
