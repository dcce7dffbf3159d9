package e2e

// Worker benchmarks: the real fsmcp-worker binary over stdio with the go-sdk
// client, on trees each benchmark generates, every figure reported next to
// a reference measured in the same process (os.ReadDir, os.ReadFile,
// filepath.WalkDir, ripgrep). ns/op is the fsmcp side only; the reference
// runs with the benchmark timer stopped and is reported as ref-ns/op, the
// quotient as x-<reference>.
//
// The CI smoke run is
//
//	go test -run '^$' -bench . -benchtime 1x -short ./e2e
//
// under which BenchmarkSearchTextVsRipgrep uses a ~2 MB tree instead of
// generating ~200 MB.

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// benchClock accumulates the two sides of a benchmark.
type benchClock struct {
	fsmcp, ref time.Duration
}

// reference runs fn with the benchmark timer stopped and adds its duration
// to the reference side.
func (c *benchClock) reference(b *testing.B, fn func()) {
	b.StopTimer()
	start := time.Now()
	fn()
	c.ref += time.Since(start)
	b.StartTimer()
}

// measure runs fn timed on the fsmcp side (the benchmark timer stays on).
func (c *benchClock) measure(fn func()) {
	start := time.Now()
	fn()
	c.fsmcp += time.Since(start)
}

func (c *benchClock) report(b *testing.B, refName string) {
	n := float64(b.N)
	b.ReportMetric(float64(c.fsmcp.Nanoseconds())/n, "fsmcp-ns/op")
	if c.ref > 0 {
		b.ReportMetric(float64(c.ref.Nanoseconds())/n, "ref-ns/op")
		b.ReportMetric(float64(c.fsmcp)/float64(c.ref), "x-"+refName)
	}
}

func benchWriteFile(b *testing.B, path string, body []byte) {
	b.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(path, body, 0o644); err != nil {
		b.Fatal(err)
	}
}

// benchReadWhole pages a file to the end and returns its text and pages.
func benchReadWhole(b *testing.B, cs *mcp.ClientSession, path string) (string, int) {
	b.Helper()
	var sb strings.Builder
	args := map[string]any{"path": path}
	for pages := 1; ; pages++ {
		r := ok(b, cs, "read_text_file", args)
		for _, c := range items[chunkItem](b, r) {
			sb.WriteString(c.Text)
		}
		if r.page.NextCursor == nil {
			return sb.String(), pages
		}
		args = map[string]any{"path": path, "cursor": *r.page.NextCursor}
	}
}

// benchFollow calls a paginated tool to the end and returns the items of
// every page and the number of pages.
func benchFollow[T any](b *testing.B, cs *mcp.ClientSession, tool string, args map[string]any) ([]T, int) {
	b.Helper()
	var all []T
	for pages := 1; ; pages++ {
		r := ok(b, cs, tool, args)
		all = append(all, items[T](b, r)...)
		if r.page.NextCursor == nil {
			return all, pages
		}
		next := make(map[string]any, len(args)+1)
		for k, v := range args {
			next[k] = v
		}
		next["cursor"] = *r.page.NextCursor
		args = next
	}
}

type benchPath struct {
	Path string `json:"path"`
	Type string `json:"type"`
}

type benchMatch struct {
	Path string `json:"path"`
	Line int    `json:"line"`
	Text string `json:"text"`
}

// BenchmarkReadRoundTrip: one read_text_file call answering a ~1 KiB file
// in one chunk. References: os.ReadFile of the same file, and an MCP ping
// (the transport floor of a round trip).
func BenchmarkReadRoundTrip(b *testing.B) {
	body := strings.Repeat("0123456789abcdef fsmcp one-chunk page line\n", 24)[:1000] + "\n"
	root := tree(b, map[string]string{"page.txt": body})
	cs := worker(b, root, "--include", "**")
	args := map[string]any{"path": "page.txt"}
	check := func() {
		r := ok(b, cs, "read_text_file", args)
		if r.page.NextCursor != nil || len(r.page.Items) != 1 {
			b.Fatalf("want one chunk and no cursor, got %d items, cursor %v", len(r.page.Items), r.page.NextCursor != nil)
		}
	}
	for range 20 {
		check()
	}
	var ping time.Duration
	ctx := context.Background()
	var c benchClock
	b.ResetTimer()
	for range b.N {
		c.measure(check)
		c.reference(b, func() {
			if _, err := os.ReadFile(filepath.Join(root, "page.txt")); err != nil {
				b.Fatal(err)
			}
		})
		b.StopTimer()
		start := time.Now()
		if err := cs.Ping(ctx, nil); err != nil {
			b.Fatal(err)
		}
		ping += time.Since(start)
		b.StartTimer()
	}
	b.StopTimer()
	c.report(b, "readfile")
	b.ReportMetric(float64(ping.Nanoseconds())/float64(b.N), "ping-ns/op")
	b.ReportMetric(float64(c.fsmcp)/float64(ping), "x-ping")
}

// BenchmarkListFolder: list_directory of a folder holding 100 files and 20
// subdirectories inside a 2,000-file tree; reference os.ReadDir of it.
func BenchmarkListFolder(b *testing.B) {
	root := b.TempDir()
	files := 0
	for i := range 100 {
		benchWriteFile(b, filepath.Join(root, "big", fmt.Sprintf("file%03d.go", i)), []byte("package big\n"))
		files++
	}
	for i := range 20 {
		for j := range 5 {
			benchWriteFile(b, filepath.Join(root, "big", fmt.Sprintf("sub%02d", i), "deep", fmt.Sprintf("f%d.txt", j)), []byte("x\n"))
			files++
		}
	}
	for i := 0; files < 2000; i++ {
		benchWriteFile(b, filepath.Join(root, "other", fmt.Sprintf("d%02d", i/30), fmt.Sprintf("f%02d.txt", i%30)), []byte("y\n"))
		files++
	}
	cs := worker(b, root, "--include", "**")
	args := map[string]any{"path": "big"}
	check := func() {
		r := ok(b, cs, "list_directory", args)
		if len(r.page.Items) != 120 || r.page.NextCursor != nil {
			b.Fatalf("list_directory big: %d entries, cursor %v; want 120 on one page", len(r.page.Items), r.page.NextCursor != nil)
		}
	}
	dir := filepath.Join(root, "big")
	for range 10 {
		check()
	}
	var c benchClock
	b.ResetTimer()
	for range b.N {
		c.measure(check)
		c.reference(b, func() {
			es, err := os.ReadDir(dir)
			if err != nil || len(es) != 120 {
				b.Fatalf("ReadDir: %d, %v", len(es), err)
			}
		})
	}
	b.StopTimer()
	c.report(b, "readdir")
}

// benchUTF8Text is n bytes of line-structured UTF-8 with multi-byte runes
// (2-, 3- and 4-byte) spread through it; it never splits a rune.
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
	out := buf.Bytes()
	// Trim at a line end at or before n.
	if i := bytes.LastIndexByte(out[:n], '\n'); i > 0 {
		out = out[:i+1]
	}
	return out
}

// BenchmarkRead12MB: read a 12 MB UTF-8 file whole, following next_cursor
// at the default budgets. Reference: os.ReadFile. MB/s is of source bytes.
func BenchmarkRead12MB(b *testing.B) {
	b.Run("mixed", func(b *testing.B) { benchRead12MB(b, benchUTF8Text(12<<20)) })
	b.Run("ascii", func(b *testing.B) { benchRead12MB(b, benchASCIIText(12<<20)) })
	// The spec's large-page setting for a client with a 1,000,000-byte limit.
	b.Run("mixed-large-pages", func(b *testing.B) {
		benchRead12MB(b, benchUTF8Text(12<<20), "--max-read-bytes", "500000", "--max-result-bytes", "1000000")
	})
}

// benchASCIIText is source-code-like ASCII: few characters need escaping.
func benchASCIIText(n int) []byte {
	var buf bytes.Buffer
	for line := 1; buf.Len() < n; line++ {
		fmt.Fprintf(&buf, "\tif err := process(ctx, item%d, opts); err != nil { return fmt.Errorf(\"step %d: %%w\", err) }\n", line, line)
	}
	out := buf.Bytes()
	if i := bytes.LastIndexByte(out[:n], '\n'); i > 0 {
		out = out[:i+1]
	}
	return out
}

func benchRead12MB(b *testing.B, body []byte, flags ...string) {
	root := b.TempDir()
	benchWriteFile(b, filepath.Join(root, "big.txt"), body)
	cs := worker(b, root, append([]string{"--include", "**"}, flags...)...)
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
		c.reference(b, func() {
			if _, err := os.ReadFile(filepath.Join(root, "big.txt")); err != nil {
				b.Fatal(err)
			}
		})
	}
	b.StopTimer()
	c.report(b, "readfile")
	b.ReportMetric(float64(pages), "pages")
	b.ReportMetric(float64(c.fsmcp.Nanoseconds())/float64(b.N)/float64(pages), "ns/page")
}

// The rare literal of the search benchmarks, and how many files hold it.
const (
	benchNeedle      = "fsmcpRareNeedle_83afq"
	benchNeedleFiles = 12
)

// benchCodeTree writes files files of about size bytes each of code-like
// text under root (src/modNN/pkgM/file_NNNN.go); benchNeedleFiles of them
// get one line holding benchNeedle. It returns the total bytes written.
func benchCodeTree(b *testing.B, root string, files, size int) int64 {
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
	needleAt := make(map[int]bool, benchNeedleFiles)
	for i := 0; len(needleAt) < benchNeedleFiles; i++ {
		needleAt[rng.IntN(files)] = true
	}
	var total int64
	buf := make([]byte, 0, size+4096)
	for f := range files {
		buf = buf[:0]
		buf = append(buf, "package pkg\n\n"...)
		needleLine := -1
		if needleAt[f] {
			needleLine = rng.IntN(size / 40)
		}
		for ln := 0; len(buf) < size; ln++ {
			if ln == needleLine {
				buf = append(buf, "\tlog.Printf(\""+benchNeedle+" %d\", n)\n"...)
			}
			buf = append(buf, pool[rng.IntN(len(pool))]...)
		}
		p := filepath.Join(root, "src", fmt.Sprintf("mod%02d", f/100), fmt.Sprintf("pkg%d", f%100/20), fmt.Sprintf("file_%04d.go", f))
		benchWriteFile(b, p, buf)
		total += int64(len(buf))
	}
	return total
}

// benchRipgrep runs rg -F --no-config -c needle dir and returns the sum of
// its per-file counts.
func benchRipgrep(b *testing.B, rg, needle, dir string) int {
	out, err := exec.Command(rg, "-F", "--no-config", "-c", needle, dir).Output()
	if err != nil {
		b.Fatalf("rg: %v", err)
	}
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(out))
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

// BenchmarkSearchTextVsRipgrep: a whole-tree search_text for a rare literal
// over ~200 MB in ~2,000 code-like files, following cursors to the end at
// the default budgets and at --max-scan-bytes 67108864. Reference:
// rg -F --no-config -c on the same tree. Under -short the tree is ~2 MB.
func BenchmarkSearchTextVsRipgrep(b *testing.B) {
	files, size := 2000, 100<<10
	if testing.Short() {
		files, size = 200, 10<<10
		b.Logf("-short: %d files of %d bytes instead of ~200 MB", files, size)
	}
	root := b.TempDir() // the parent body runs once; sub-benchmarks share it
	start := time.Now()
	total := benchCodeTree(b, root, files, size)
	b.Logf("generated %d files, %d bytes, in %v", files, total, time.Since(start))
	rg, rgErr := exec.LookPath("rg")
	for _, v := range []struct {
		name  string
		flags []string
	}{
		{"default", nil},
		{"scan64MiB", []string{"--max-scan-bytes", "67108864"}},
	} {
		b.Run(v.name, func(b *testing.B) {
			cs := worker(b, root, append([]string{"--include", "**"}, v.flags...)...)
			args := map[string]any{"query": benchNeedle}
			matches, pages := benchFollow[benchMatch](b, cs, "search_text", args)
			if len(matches) != benchNeedleFiles {
				b.Fatalf("search_text found %d matches, want %d", len(matches), benchNeedleFiles)
			}
			for _, m := range matches {
				if !strings.Contains(m.Text, benchNeedle) {
					b.Fatalf("match %s:%d %q lacks the literal", m.Path, m.Line, m.Text)
				}
			}
			if rgErr == nil {
				if n := benchRipgrep(b, rg, benchNeedle, root); n != benchNeedleFiles {
					b.Fatalf("rg counted %d, want %d", n, benchNeedleFiles)
				}
			}
			b.SetBytes(total)
			var c benchClock
			b.ResetTimer()
			for range b.N {
				c.measure(func() {
					if m, p := benchFollow[benchMatch](b, cs, "search_text", args); len(m) != benchNeedleFiles || p != pages {
						b.Fatalf("%d matches over %d pages", len(m), p)
					}
				})
				if rgErr == nil {
					c.reference(b, func() { benchRipgrep(b, rg, benchNeedle, root) })
				}
			}
			b.StopTimer()
			c.report(b, "rg")
			b.ReportMetric(float64(pages), "pages")
		})
	}
	if rgErr != nil {
		b.Run("ripgrep", func(b *testing.B) {
			b.Skipf("rg not on PATH (%v): the fsmcp figures above are reported without the x-rg ratio; install ripgrep for the reference", rgErr)
		})
	}
}

// BenchmarkSearchFilesVsWalk: search_files for a substring held by 100 of
// 20,000 paths, following cursors to the end; reference filepath.WalkDir of
// the same tree with the same substring test.
func BenchmarkSearchFilesVsWalk(b *testing.B) {
	root := b.TempDir()
	const nfiles = 20000
	want := 0
	for i := range nfiles {
		name := fmt.Sprintf("file%05d.txt", i)
		if i%200 == 0 {
			name = fmt.Sprintf("widget_%05d.txt", i)
			want++
		}
		benchWriteFile(b, filepath.Join(root, fmt.Sprintf("d%02d", i/200), fmt.Sprintf("s%d", i%200/20), name), []byte("z\n"))
	}
	cs := worker(b, root, "--include", "**")
	args := map[string]any{"query": "widget_"}
	got, pages := benchFollow[benchPath](b, cs, "search_files", args)
	if len(got) != want {
		b.Fatalf("search_files found %d, want %d", len(got), want)
	}
	walk := func() int {
		n := 0
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && strings.Contains(p[len(root):], "widget_") {
				n++
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		return n
	}
	var c benchClock
	b.ResetTimer()
	for range b.N {
		c.measure(func() {
			if m, _ := benchFollow[benchPath](b, cs, "search_files", args); len(m) != want {
				b.Fatalf("%d paths", len(m))
			}
		})
		c.reference(b, func() {
			if n := walk(); n != want {
				b.Fatalf("walk found %d", n)
			}
		})
	}
	b.StopTimer()
	c.report(b, "walkdir")
	b.ReportMetric(float64(pages), "pages")
}
