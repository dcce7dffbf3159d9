//go:build linux

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkWholeJobs: the jobs by which fsmcp's speed is judged
// (docs/performance.md), each against its reference in the same loop,
// taking turns at going first:
//
//	search100k       search_text of a rare literal over 100k files of ~1 KiB, every page   x-rg
//	search206MB      the same over 206 MB in 2,000 files of ~100 KiB                        x-rg
//	supervisor206MB  search206MB through the supervisor                                     x-rg
//	anyOf16          search206MB with any_of of the literal and 15 absent ones              x-one-term
//	folded           search206MB with the literal upper-cased, case_insensitive             x-case-sensitive
//	reads1000        1,000 one-chunk read_text_file calls through the supervisor, in turn   x-worker
//
// where rg is rg -F --no-config -c, one-term and case-sensitive are the
// plain search206MB through the same worker, and worker is the same
// calls to the worker alone. Under -short the trees are 2,000 files of
// ~1 KiB and there are 10 reads.
//
// FSMCP_BENCH_VARIANTS names other builds to run the same jobs through in
// the same turns, as name=dir[,name=dir...], each dir holding the
// fsmcp-worker and fsmcp-supervisor of that build. For each, the job
// reports <name>-x-fsmcp: that build's time over this one's. A build that
// lacks one mechanism so tells what removing it costs
// (e2e/testdata/mechanisms.sh builds such variants and prints the table).
func BenchmarkWholeJobs(b *testing.B) {
	builds := benchBuilds(b)
	small, big, reads := 100000, benchBigFiles, 1000
	smallMean, bigMean := benchScaleMean, benchBigMean
	if testing.Short() {
		small, big, bigMean, reads = 2000, 2000, benchScaleMean, 10
	}
	rg := benchTool(b, "rg")
	if rg == "" {
		b.Fatal("no rg on $PATH: apt-get install ripgrep")
	}
	needle := map[string]any{"query": benchNeedle}
	rgSide := func(t *benchTreeInfo) func() {
		return func() {
			if n := benchRipgrep(b, rg, benchNeedle, t.root); n != benchNeedleFiles {
				b.Fatalf("rg counted %d, want %d", n, benchNeedleFiles)
			}
		}
	}
	jobs := []benchJob{
		{name: "search100k", ref: "rg",
			side: func(b *testing.B, bb benchBuild) func() {
				return benchSearchJob(b, bb.worker(b, benchTree(b, small, smallMean).root), "search_text", needle)
			},
			refSide: func(b *testing.B) func() { return rgSide(benchTree(b, small, smallMean)) }},
		{name: "search206MB", ref: "rg",
			side: func(b *testing.B, bb benchBuild) func() {
				return benchSearchJob(b, bb.worker(b, benchTree(b, big, bigMean).root), "search_text", needle)
			},
			refSide: func(b *testing.B) func() { return rgSide(benchTree(b, big, bigMean)) }},
		{name: "supervisor206MB", ref: "rg",
			side: func(b *testing.B, bb benchBuild) func() {
				return benchSearchJob(b, bb.supervise(b, benchTree(b, big, bigMean).root), "tree_search_text", needle)
			},
			refSide: func(b *testing.B) func() { return rgSide(benchTree(b, big, bigMean)) }},
		{name: "anyOf16", ref: "one-term",
			side: func(b *testing.B, bb benchBuild) func() {
				return benchSearchJob(b, bb.worker(b, benchTree(b, big, bigMean).root), "search_text", map[string]any{"any_of": benchAbsentTerms()})
			},
			refSide: func(b *testing.B) func() {
				return benchSearchJob(b, builds[0].worker(b, benchTree(b, big, bigMean).root), "search_text", needle)
			}},
		{name: "folded", ref: "case-sensitive",
			side: func(b *testing.B, bb benchBuild) func() {
				return benchSearchJob(b, bb.worker(b, benchTree(b, big, bigMean).root), "search_text",
					map[string]any{"query": strings.ToUpper(benchNeedle), "case_insensitive": true})
			},
			refSide: func(b *testing.B) func() {
				return benchSearchJob(b, builds[0].worker(b, benchTree(b, big, bigMean).root), "search_text", needle)
			}},
		{name: "reads1000", ref: "worker",
			side: func(b *testing.B, bb benchBuild) func() {
				return benchReadsJob(b, bb.supervise(b, benchReadRoot(b)), "tree_read_text_file", reads)
			},
			refSide: func(b *testing.B) func() {
				return benchReadsJob(b, builds[0].worker(b, benchReadRoot(b)), "read_text_file", reads)
			}},
	}
	for _, j := range jobs {
		b.Run(j.name, func(b *testing.B) { j.bench(b, builds) })
	}
}

// benchJob is one whole job: side runs it through a build, refSide runs
// its reference. Each returns the job's run, its sessions set up.
type benchJob struct {
	name, ref string
	side      func(b *testing.B, bb benchBuild) func()
	refSide   func(b *testing.B) func()
}

// bench times the job through builds[0] (this one) on the fsmcp side, its
// reference and the job through every other build, all taking turns.
func (j benchJob) bench(b *testing.B, builds []benchBuild) {
	var c benchClock
	sides := []func(){}
	runs := make([]func(), len(builds))
	for k, bb := range builds {
		runs[k] = j.side(b, bb)
		runs[k]() // warm: the page cache, the worker's first walk
		if k == 0 {
			sides = append(sides, func() { c.measure(runs[0]) })
			continue
		}
		sides = append(sides, func() { c.reference(b, bb.name, runs[k]) })
	}
	ref := j.refSide(b)
	ref()
	sides = append(sides, func() { c.reference(b, j.ref, ref) })
	b.ResetTimer()
	for i := range b.N {
		turns(i, sides...)
	}
	c.report(b)
	for _, bb := range builds[1:] {
		if r := c.find(bb.name); r != nil && c.fsmcp > 0 {
			b.ReportMetric(float64(r.d)/float64(c.fsmcp), bb.name+"-x-fsmcp")
		}
		c.reportRatio(b, bb.name, j.ref)
	}
}

// benchBuild is a build of both binaries: this one ("fsmcp"), or a
// variant named in FSMCP_BENCH_VARIANTS.
type benchBuild struct {
	name              string
	workerBin, supBin string
}

// benchBuilds is this build, then the variants FSMCP_BENCH_VARIANTS names.
func benchBuilds(b *testing.B) []benchBuild {
	builds := []benchBuild{{name: "fsmcp", workerBin: workerBin, supBin: buildSupervisorBins(b).supervisor}}
	spec := os.Getenv("FSMCP_BENCH_VARIANTS")
	if spec == "" {
		return builds
	}
	for _, v := range strings.Split(spec, ",") {
		name, dir, ok := strings.Cut(v, "=")
		if !ok || name == "" || name == "fsmcp" {
			b.Fatalf("FSMCP_BENCH_VARIANTS=%q: want name=dir[,name=dir...], names other than fsmcp (e2e/testdata/mechanisms.sh sets it)", spec)
		}
		bb := benchBuild{name: name, workerBin: filepath.Join(dir, "fsmcp-worker"), supBin: filepath.Join(dir, "fsmcp-supervisor")}
		for _, bin := range []string{bb.workerBin, bb.supBin} {
			if _, err := os.Stat(bin); err != nil {
				b.Fatalf("variant %s: %v (build it with go build -o %s/ ./cmd/...)", name, err, dir)
			}
		}
		builds = append(builds, bb)
	}
	return builds
}

// worker starts this build's worker on root (every file served, the tree
// ceilings raised) and returns its session, closed with the benchmark.
func (bb benchBuild) worker(b *testing.B, root string) *mcp.ClientSession {
	args := append([]string{"--root", root, "--include", "**", "--name", "tree"}, benchFlags(benchTreeLimits())...)
	return connect(b, []string{}, bb.workerBin, args...)
}

// supervise starts this build's supervisor on a manifest of the one root
// "tree" at root (read tools, the tree ceilings raised) and returns its
// session, closed with the benchmark.
func (bb benchBuild) supervise(b *testing.B, root string) *mcp.ClientSession {
	lim := benchTreeLimits()
	manifest := filepath.Join(b.TempDir(), "tree.yaml")
	writeFile(b, manifest, fmt.Sprintf("version: 1\nroots:\n  - name: tree\n    path: %q\n    include: [\"**\"]\n    tools: read\n    limits: {max_files: %d, max_directories: %d}\n",
		root, lim.MaxFiles, lim.MaxDirectories))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.Command(bb.supBin, "--manifest", manifest, "--worker", bb.workerBin)
	cmd.Stderr = &testWriter{t: b}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "fsmcp-bench", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		b.Fatalf("connect to the %s supervisor: %v", bb.name, err)
	}
	b.Cleanup(func() { _ = cs.Close() })
	return cs
}

// benchSearchJob is a whole search through cs: tool with args, following
// the cursors to the end, every match of the tree found.
func benchSearchJob(b *testing.B, cs *mcp.ClientSession, tool string, args map[string]any) func() {
	return func() {
		if hits, _ := benchFollow(b, cs, tool, args); len(hits) != benchNeedleFiles {
			b.Fatalf("%s %v found %d matches, want %d", tool, args, len(hits), benchNeedleFiles)
		}
	}
}

// benchReadsJob is n one-chunk reads of page.txt through cs, one at a time.
func benchReadsJob(b *testing.B, cs *mcp.ClientSession, tool string, n int) func() {
	args := map[string]any{"path": "page.txt"}
	return func() {
		for range n {
			if items, next := benchCall(b, cs, tool, args); len(items) != 1 || next != "" {
				b.Fatalf("%s: %d items, next cursor %q; want one chunk", tool, len(items), next)
			}
		}
	}
}

// benchReadRoot is a root holding page.txt, a file of one chunk.
func benchReadRoot(b *testing.B) string {
	dir := filepath.Join(filepath.Dir(workerBin), "trees", "read")
	if _, err := os.Stat(filepath.Join(dir, "page.txt")); err != nil {
		writeFile(b, filepath.Join(dir, "page.txt"), strings.Repeat("one chunk of text\n", 40))
	}
	return dir
}

// benchAbsentTerms is the rare literal and 15 identifiers the generated
// trees do not hold, of varied letters, so that their rarest bytes differ
// as real queries' do.
func benchAbsentTerms() []any {
	terms := []any{benchNeedle}
	for _, t := range []string{"unmarshalJSONValue", "QuotaExceeded", "mutex.Unlock", "http.StatusNotFound",
		"yamlDecoder", "zipArchive", "Vector3D", "kafkaTopic", "grpcServerOpts", "bcrypt.Compare",
		"xmlAttr", "jwtClaims", "Prometheus", "sqlTx.Commit", "WebSocketUpgrade"} {
		terms = append(terms, t)
	}
	return terms
}
