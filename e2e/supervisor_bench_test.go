//go:build linux

package e2e

// Supervisor benchmarks, each against the worker alone in the same loop:
//
//	BenchmarkSupervisorHop              1-chunk read_text_file calls via the supervisor  x-worker, x-bare-relay, x-c-relay
//	BenchmarkSupervisorStartup/roots=N  spawn to tools/list answered, N roots            x-worker
//	BenchmarkSupervisorSearchText/T     whole-tree search_text via the supervisor        x-worker, x-rg, x-bare-relay, x-c-relay
//
// N is 1, 2, 8 and 32 (1, 2 and 8 under -short).

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

// BenchmarkSupervisorHop: one-chunk read_text_file round trips through the
// supervisor, benchRoundTrips per operation (ns/call is one), against the
// same worker binary serving the same root on stdio alone, in batches as
// many, alternating which batch goes first. A third batch goes to the
// worker behind barerelay, a process that only copies bytes both ways: its
// cost over the worker alone (bare-relay-x-worker) is what any process in
// the path written in Go costs on the machine, the floor of the
// supervisor's hop, and x-bare-relay is the supervisor against that floor.
// A fourth goes through testdata/copyrelay.c, the same relay in C, built
// with cc: c-relay-x-worker is the floor of any process in the path.
func BenchmarkSupervisorHop(b *testing.B) {
	bins := buildSupervisorBins(b)
	file, dir := exampleManifest(b, "reader-writer.yaml", "workspace", "outbox")
	writeFile(b, filepath.Join(dir, "workspace", "page.txt"), strings.Repeat("one chunk of text\n", 40))
	sup := startSupervisor(b, file, bins.worker)
	workerArgs := []string{"--root", filepath.Join(dir, "workspace"), "--include", "**", "--tools", "read", "--name", "reader"}
	alone := connectWorkerAlone(b, bins.worker, workerArgs...)
	relayed := append([]string{bins.worker}, workerArgs...) // the relays' arguments
	bare := connectWorkerAlone(b, bins.bareRelay, relayed...)
	cRelay := connectWorkerAlone(b, copyRelayBin(b), relayed...)
	args := map[string]any{"path": "page.txt"}
	n := benchRoundTrips()
	viaSupervisor := benchRepeat(n, func() { benchCall(b, sup.session, "reader_read_text_file", args) })
	workerAlone := benchRepeat(n, func() { benchCall(b, alone, "read_text_file", args) })
	viaBareRelay := benchRepeat(n, func() { benchCall(b, bare, "read_text_file", args) })
	viaCRelay := benchRepeat(n, func() { benchCall(b, cRelay, "read_text_file", args) })
	workerAlone()
	viaBareRelay()
	viaCRelay()
	viaSupervisor()
	// The supervisor's CPU time (all its threads) in the calls through it.
	var c benchClock
	var supCPU time.Duration
	measured := func() {
		before := procRunTime(b, sup.cmd.Process.Pid)
		c.measure(viaSupervisor)
		supCPU += procRunTime(b, sup.cmd.Process.Pid) - before
	}
	b.ResetTimer()
	for i := range b.N {
		turns(i, func() { c.reference(b, "worker", workerAlone) },
			measured,
			func() { c.reference(b, "bare-relay", viaBareRelay) },
			func() { c.reference(b, "c-relay", viaCRelay) })
	}
	c.report(b)
	c.perOp(b, n, "ns/call")
	c.reportRatio(b, "bare-relay", "worker")
	c.reportRatio(b, "c-relay", "worker")
	b.ReportMetric(float64(supCPU.Nanoseconds())/float64(b.N)/float64(n), "supervisor-cpu-ns/call")
}

// BenchmarkSupervisorStartup: the time from spawning the supervisor on an
// N-root manifest (half the roots read, half all tools) to its tools/list
// answer, through the MCP initialize handshake; reference: the same for
// one worker alone on one root. Shutdown is not timed.
func BenchmarkSupervisorStartup(b *testing.B) {
	counts := []int{1, 2, 8, 32}
	if testing.Short() {
		counts = counts[:3]
	}
	for _, n := range counts {
		b.Run(fmt.Sprintf("roots=%d", n), func(b *testing.B) { benchSupervisorStartup(b, n) })
	}
}

func benchSupervisorStartup(b *testing.B, roots int) {
	bins := buildSupervisorBins(b)
	dir, file, wantTools := benchRootsManifest(b, roots)
	workerArgs := []string{"--root", filepath.Join(dir, "r0"), "--include", "**", "--tools", "read", "--name", "r0"}
	ready := func() *supervisorProc {
		p := startSupervisor(b, file, bins.worker)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		res, err := p.session.ListTools(ctx, nil)
		if err != nil || len(res.Tools) != wantTools {
			b.Fatalf("tools/list: %v (%d tools, want %d)\nstderr:\n%s", err, len(res.Tools), wantTools, p.stderr)
		}
		return p
	}
	stop := func(p *supervisorProc) {
		_ = p.session.Close()
		p.session = nil
		_ = p.stdin.Close()
		p.wait(b, 10*time.Second)
	}
	// Warm the page cache with both binaries.
	stop(ready())
	if cs, _, _ := benchWorkerReady(b, workerArgs...); cs != nil {
		_ = cs.Close()
	}
	var c benchClock
	var supCPU, workerCPU time.Duration
	b.ResetTimer()
	for range b.N {
		var p *supervisorProc
		c.measure(func() { p = ready() })
		b.StopTimer()
		stop(p)
		supCPU += benchCPU(p.cmd)
		b.StartTimer()
		var cs *mcp.ClientSession
		var cmd *exec.Cmd
		c.reference(b, "worker", func() {
			var n int
			if cs, cmd, n = benchWorkerReady(b, workerArgs...); n != 4 {
				b.Fatalf("the worker alone lists %d tools, want 4", n)
			}
		})
		b.StopTimer()
		_ = cs.Close()
		workerCPU += benchCPU(cmd)
		b.StartTimer()
	}
	c.report(b)
	c.perOp(b, roots, "ns/root")
	// CPU time of the supervisor with its workers, and of the worker alone
	// (start-up, serving, shutdown), per start.
	b.ReportMetric(float64(supCPU.Nanoseconds())/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(workerCPU.Nanoseconds())/float64(b.N), "worker-cpu-ns/op")
}

// benchRootsManifest writes a manifest of n roots r0..r(n-1) in a new
// directory, each holding a.txt, the even ones with the read tools and the
// odd ones with all; it returns the directory, the manifest's path and the
// number of tools the supervisor lists for it.
func benchRootsManifest(b *testing.B, n int) (dir, file string, tools int) {
	dir = b.TempDir()
	var m strings.Builder
	m.WriteString("version: 1\nroots:\n")
	for i := range n {
		name := fmt.Sprintf("r%d", i)
		writeFile(b, filepath.Join(dir, name, "a.txt"), "a\n")
		mask, k := "read", 4
		if i%2 == 1 {
			mask, k = "all", 5
		}
		tools += k
		fmt.Fprintf(&m, "  - name: %s\n    path: %s\n    include: [\"**\"]\n    tools: %s\n", name, name, mask)
	}
	file = filepath.Join(dir, "manifest.yaml")
	writeFile(b, file, m.String())
	return dir, file, tools
}

// BenchmarkSupervisorSearchText: the whole-tree rare-literal search_text of
// BenchmarkSearchText at default budgets, following cursors to the end,
// through the supervisor (its worker runs in plugin mode, GOMAXPROCS=1)
// against the same worker binary on stdio alone on the same tree in the
// same loop (x-worker), against the worker behind barerelay (x-bare-relay;
// bare-relay-x-rg is what a process in the path that only copies bytes
// comes to) and behind testdata/copyrelay.c (x-c-relay, c-relay-x-rg: the
// same in C), the four taking turns at going first, and against rg -F
// (x-rg). The workers keep their inventories between searches. Trees:
// 10k files of ~1 KiB, and (not under -short) the 206 MB tree of
// BenchmarkSearchText200MB.
func BenchmarkSupervisorSearchText(b *testing.B) {
	trees := []struct {
		name        string
		files, mean int
	}{{"files=10k", 10000, benchScaleMean}, {"206MB", benchBigFiles, benchBigMean}}
	if testing.Short() {
		trees = trees[:1]
	}
	for _, tr := range trees {
		b.Run(tr.name, func(b *testing.B) { benchSupervisorSearchText(b, benchTree(b, tr.files, tr.mean)) })
	}
}

func benchSupervisorSearchText(b *testing.B, t *benchTreeInfo) {
	bins := buildSupervisorBins(b)
	lim := benchTreeLimits()
	manifest := filepath.Join(b.TempDir(), "search.yaml")
	writeFile(b, manifest, fmt.Sprintf("version: 1\nroots:\n  - name: tree\n    path: %q\n    include: [\"**\"]\n    tools: read\n    limits: {max_files: %d, max_directories: %d}\n",
		t.root, lim.MaxFiles, lim.MaxDirectories))
	sup := startSupervisor(b, manifest, bins.worker)
	workerArgs := append([]string{"--root", t.root, "--include", "**", "--tools", "read", "--name", "tree"}, benchFlags(lim)...)
	alone := connectWorkerAlone(b, bins.worker, workerArgs...)
	relayed := append([]string{bins.worker}, workerArgs...) // the relays' arguments
	bare := connectWorkerAlone(b, bins.bareRelay, relayed...)
	cRelay := connectWorkerAlone(b, copyRelayBin(b), relayed...)
	search := func(cs *mcp.ClientSession, tool string) func() {
		return func() {
			matches, _ := benchFollow(b, cs, tool, map[string]any{"query": benchNeedle})
			if len(matches) != benchNeedleFiles {
				b.Fatalf("%s found %d matches, want %d", tool, len(matches), benchNeedleFiles)
			}
		}
	}
	viaSupervisor, workerAlone, viaBareRelay := search(sup.session, "tree_search_text"), search(alone, "search_text"), search(bare, "search_text")
	viaCRelay := search(cRelay, "search_text")
	viaSupervisor()
	workerAlone()
	viaBareRelay()
	viaCRelay()
	rg := benchTool(b, "rg")
	b.SetBytes(t.bytes)
	// The CPU time (all threads) of the supervisor, of the worker it
	// started and of this process (the client) in the searches through it.
	supPID := sup.cmd.Process.Pid
	rootPID := benchChildPID(b, supPID, bins.worker)
	var c benchClock
	var supCPU, workerCPU, clientCPU time.Duration
	measured := func() {
		sup0, worker0, client0 := procRunTime(b, supPID), procRunTime(b, rootPID), procRunTime(b, os.Getpid())
		c.measure(viaSupervisor)
		clientCPU += procRunTime(b, os.Getpid()) - client0
		workerCPU += procRunTime(b, rootPID) - worker0
		supCPU += procRunTime(b, supPID) - sup0
	}
	b.ResetTimer()
	for i := range b.N {
		turns(i, func() { c.reference(b, "worker", workerAlone) },
			measured,
			func() { c.reference(b, "bare-relay", viaBareRelay) },
			func() { c.reference(b, "c-relay", viaCRelay) })
		if rg != "" {
			c.reference(b, "rg", func() { benchRipgrep(b, rg, benchNeedle, t.root) })
		}
	}
	c.report(b)
	c.reportRatio(b, "bare-relay", "rg")
	c.reportRatio(b, "c-relay", "rg")
	n := float64(b.N)
	b.ReportMetric(float64(supCPU.Nanoseconds())/n, "supervisor-cpu-ns/op")
	b.ReportMetric(float64(workerCPU.Nanoseconds())/n, "worker-cpu-ns/op")
	b.ReportMetric(float64(clientCPU.Nanoseconds())/n, "client-cpu-ns/op")
	c.reportFloor(b, supCPU+workerCPU+clientCPU, "rg")
}
