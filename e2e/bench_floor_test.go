//go:build linux

package e2e

import (
	"os"
	"runtime"
	"testing"
	"time"
)

// BenchmarkSearchFloor: the whole 206 MB search (search206MB of
// BenchmarkWholeJobs) against its floor, all in turns with rg -F on the
// same tree (the supervisor's floor, the worker behind a relay that only
// copies bytes, is BenchmarkSupervisorSearchText's bare-relay-x-rg):
//
//	x-rg                  the worker, paging search_text to the end
//	simple-x-rg           e2e/internal/floorsearch: the simplest go-sdk server that pages the same
//	                      files by the same 4 MiB budget, reading each page on every core
//	calls-x-rg            floorsearch -no-scan: the same pages, no file read: what the calls cost
//
// All sides are driven by the go-sdk client in this process. The CPU
// figures bound what any implementation can reach: job-floor-x-rg is the
// ratio a server would come to that scanned with rg's CPU time
// (rg-cpu-ns/op) and paid only the calls' (calls-cpu-ns/op: floorsearch
// -no-scan's and the client's), were both spread over every core with
// none idle; floor-x-rg is the same for the worker's and the client's CPU
// time (worker+client-cpu-ns/op). A goal below job-floor-x-rg is out of
// reach of any server paging the job to a go-sdk client on the same cores.
func BenchmarkSearchFloor(b *testing.B) {
	bins := buildSupervisorBins(b)
	rg := benchTool(b, "rg")
	if rg == "" {
		b.Fatal("no rg on $PATH: apt-get install ripgrep")
	}
	files, mean := benchBigFiles, benchBigMean
	if testing.Short() {
		files, mean = 2000, benchScaleMean
	}
	tree := benchTree(b, files, mean)
	needle := map[string]any{"query": benchNeedle}
	fsmcp := benchBuilds(b)[0]
	search := benchSearchJob(b, fsmcp.worker(b, tree.root), "search_text", needle)
	floor := connect(b, []string{}, bins.floor, tree.root)
	_, pages := benchFollow(b, floor, "search_text", needle)
	calls := connect(b, []string{}, bins.floor, "-no-scan", tree.root)
	callsPID, workerPID := benchChildPID(b, os.Getpid(), bins.floor), benchChildPID(b, os.Getpid(), workerBin)
	var callsCPU, rgCPU, workerCPU time.Duration
	// cpu adds to sum the CPU time fn takes in this process (the client's)
	// and in process pid.
	cpu := func(sum *time.Duration, pid int, fn func()) func() {
		return func() {
			before := procRunTime(b, pid) + procRunTime(b, os.Getpid())
			fn()
			*sum += procRunTime(b, pid) + procRunTime(b, os.Getpid()) - before
		}
	}
	sides := []struct {
		name string
		run  func()
	}{
		{"simple", benchSearchJob(b, floor, "search_text", needle)},
		{"calls", cpu(&callsCPU, callsPID, func() {
			if _, n := benchFollow(b, calls, "search_text", needle); n != pages {
				b.Fatalf("floorsearch -no-scan paged the tree in %d pages, the search in %d", n, pages)
			}
		})},
		{"rg", func() {
			rgCPU += benchChildrenCPU(func() {
				if n := benchRipgrep(b, rg, benchNeedle, tree.root); n != benchNeedleFiles {
					b.Fatalf("rg counted %d, want %d", n, benchNeedleFiles)
				}
			})
		}},
	}
	var c benchClock
	measured := cpu(&workerCPU, workerPID, search)
	turnsOf := []func(){func() { c.measure(measured) }}
	search() // warm: the page cache, the worker's first walk
	for _, s := range sides {
		s.run()
		turnsOf = append(turnsOf, func() { c.reference(b, s.name, s.run) })
	}
	callsCPU, rgCPU, workerCPU = 0, 0, 0
	b.ResetTimer()
	for i := range b.N {
		turns(i, turnsOf...)
	}
	c.report(b)
	for _, s := range sides[:len(sides)-1] {
		c.reportRatio(b, s.name, "rg")
	}
	n := float64(b.N)
	b.ReportMetric(float64(callsCPU.Nanoseconds())/n, "calls-cpu-ns/op")
	b.ReportMetric(float64(rgCPU.Nanoseconds())/n, "rg-cpu-ns/op")
	b.ReportMetric(float64(workerCPU.Nanoseconds())/n, "worker+client-cpu-ns/op")
	c.reportFloor(b, workerCPU, "rg")
	if r := c.find("rg"); r != nil && r.d > 0 {
		b.ReportMetric(float64(rgCPU+callsCPU)/float64(runtime.NumCPU())/float64(r.d), "job-floor-x-rg")
	}
}
