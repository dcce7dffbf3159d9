//go:build linux

package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkSearchTextScaling: the whole-tree rare-literal search_text of
// BenchmarkSearchText at default budgets, at 10k, 100k and 500k files of
// ~1 KiB (only 10k under -short), split into what a page after the first
// costs and what a whole search costs, against rg -F in the same loop:
//
//	ns/op          a cold search: the root's kept inventory was dropped just
//	               before (a file created and removed in the root); the
//	               first page walks and stats the whole scope
//	x-rg           the cold search divided by rg -F --no-config -c
//	first-ns       the cold search's first page
//	later-ns/page  its other pages, each
//	warm-ns        the same search again at once: its first page walks
//	               again, over directories the cold walk left cached
//	x-rg-warm      that divided by rg -F
//	hwm-MB         the worker's peak resident memory (VmHWM) after the run
//	cores          the worker's CPU time (user and system) in the cold
//	               searches divided by their time: 2 keeps both cores busy
//	warm-cores     the same for the warm searches
//
// The 500k tree takes about 500 MB of disk and some seconds to generate;
// select sizes with -bench 'SearchTextScaling/files=100k'.
func BenchmarkSearchTextScaling(b *testing.B) {
	sizes := []benchScale{{"files=10k", 10000}, {"files=100k", 100000}, {"files=500k", 500000}}
	if testing.Short() {
		sizes = sizes[:1]
	}
	for _, s := range sizes {
		b.Run(s.name, func(b *testing.B) { benchSearchTextScaling(b, benchTree(b, s.files, benchScaleMean)) })
	}
}

func benchSearchTextScaling(b *testing.B, t *benchTreeInfo) {
	cs, cmd := workerProc(b, nil, nil, t.root, append([]string{"--include", "**"}, benchFlags(benchTreeLimits())...)...)
	rg := benchTool(b, "rg")
	if rg == "" {
		b.Fatal("no rg on $PATH: apt-get install ripgrep")
	}
	if n := benchRipgrep(b, rg, benchNeedle, t.root); n != benchNeedleFiles {
		b.Fatalf("rg counted %d, want %d", n, benchNeedleFiles)
	}
	touch := filepath.Join(t.root, ".bench-touch")
	// search follows the cursors to the end and returns the time of the
	// first page, of the others, and their number.
	search := func() (first, later time.Duration, pages int) {
		args := map[string]any{"query": benchNeedle}
		matches := 0
		for {
			start := time.Now()
			items, next := benchCall(b, cs, "search_text", args)
			d := time.Since(start)
			if pages == 0 {
				first = d
			} else {
				later += d
			}
			pages++
			for _, it := range items {
				m, _ := it.(map[string]any)
				if !strings.Contains(benchField(m, "text"), benchNeedle) {
					b.Fatalf("match %v lacks the literal", it)
				}
				matches++
			}
			if next == "" {
				break
			}
			args = map[string]any{"query": benchNeedle, "cursor": next}
		}
		if matches != benchNeedleFiles {
			b.Fatalf("search_text found %d matches, want %d", matches, benchNeedleFiles)
		}
		return first, later, pages
	}
	// drop makes the root's kept inventory stale: the next search walks.
	drop := func() {
		if err := os.WriteFile(touch, nil, 0o644); err != nil {
			b.Fatal(err)
		}
		if err := os.Remove(touch); err != nil {
			b.Fatal(err)
		}
	}
	drop()
	search()
	var c benchClock
	var first, later, warm, cpu, warmCPU time.Duration
	pages := 0
	b.SetBytes(t.bytes)
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		drop()
		b.StartTimer()
		var f, l time.Duration
		used := procCPU(b, cmd.Process.Pid)
		c.measure(func() { f, l, pages = search() })
		cpu += procCPU(b, cmd.Process.Pid) - used
		first, later = first+f, later+l
		c.reference(b, "rg", func() { benchRipgrep(b, rg, benchNeedle, t.root) })
		b.StopTimer()
		used = procCPU(b, cmd.Process.Pid)
		start := time.Now()
		search()
		warm += time.Since(start)
		warmCPU += procCPU(b, cmd.Process.Pid) - used
		b.StartTimer()
	}
	c.report(b)
	n := float64(b.N)
	b.ReportMetric(float64(first.Nanoseconds())/n, "first-ns")
	if pages > 1 {
		b.ReportMetric(float64(later.Nanoseconds())/n/float64(pages-1), "later-ns/page")
	}
	b.ReportMetric(float64(warm.Nanoseconds())/n, "warm-ns")
	for _, r := range c.refs {
		if r.name == "rg" && r.d > 0 {
			b.ReportMetric(float64(warm)/float64(r.d), "x-rg-warm")
		}
	}
	b.ReportMetric(float64(pages), "pages")
	if cold := first + later; cold > 0 {
		b.ReportMetric(float64(cpu)/float64(cold), "cores")
	}
	if warm > 0 {
		b.ReportMetric(float64(warmCPU)/float64(warm), "warm-cores")
	}
	b.ReportMetric(float64(procHWM(b, cmd.Process.Pid))/(1<<20), "hwm-MB")
}

// procHWM is the peak resident memory (VmHWM) of process pid, in bytes.
func procHWM(t testing.TB, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("/proc/%d/status: %q", pid, l)
			}
			return kb << 10
		}
	}
	t.Fatalf("/proc/%d/status has no VmHWM", pid)
	return 0
}
