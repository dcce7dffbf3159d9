//go:build linux

package e2e

import (
	"os/exec"
	"strings"
	"testing"
	"time"
)

// BenchmarkSearchTextKept: what keeping a scope's inventory between a
// search's pages saves. The whole-tree rare-literal search_text of
// BenchmarkSearchText at default budgets, paged to the end, by the worker
// as it runs (which walks on the first page and keeps the inventory for
// the others) and by the same worker in a user namespace whose inotify
// watch limit (8) leaves it no watch to keep one with, so every page walks
// the scope, as on a network or FUSE filesystem; alternating which goes
// first. On the 100k tree of ~1 KiB files and the 206 MB tree of 2,000
// files (the 10k tree alone under -short):
//
//	ns/op          the search with the inventory kept
//	walked-ns/op   the search walking on every page
//	x-walked       the first divided by the second
//	cpu-x-walked   the same for the worker's CPU time
func BenchmarkSearchTextKept(b *testing.B) {
	type size struct {
		name        string
		files, mean int
	}
	trees := []size{{"files=100k", 100000, benchScaleMean}, {"206MB", benchBigFiles, benchBigMean}}
	if testing.Short() {
		trees = []size{{"files=10k", 10000, benchScaleMean}}
	}
	for _, tr := range trees {
		b.Run(tr.name, func(b *testing.B) { benchSearchTextKept(b, benchTree(b, tr.files, tr.mean)) })
	}
}

// noWatches runs a command in a user namespace (mapped to root) whose
// inotify watch limit is 8: a worker there holds at most one watch for its
// inventories (an eighth), so it keeps none.
var noWatches = []string{"unshare", "--user", "--map-root-user", "sh", "-c",
	`echo 8 > /proc/sys/user/max_inotify_watches && exec "$@"`, "sh"}

func benchSearchTextKept(b *testing.B, t *benchTreeInfo) {
	if out, err := exec.Command(noWatches[0], append(noWatches[1:], "cat", "/proc/sys/user/max_inotify_watches")...).CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "8" {
		b.Fatalf("cannot run a command in a user namespace with its own inotify watch limit (%v: %s); this needs unshare(1) from util-linux (apt-get install util-linux) and a kernel with user namespaces (sysctl -w user.max_user_namespaces=15000)", err, out)
	}
	args := append([]string{"--include", "**"}, benchFlags(benchTreeLimits())...)
	kept, keptCmd := workerProc(b, nil, nil, t.root, args...)
	walked, walkedCmd := workerProc(b, nil, noWatches, t.root, args...)
	search := func(cs func() []map[string]any) func() {
		return func() {
			if hits := cs(); len(hits) != benchNeedleFiles {
				b.Fatalf("search_text found %d matches, want %d", len(hits), benchNeedleFiles)
			}
		}
	}
	q := map[string]any{"query": benchNeedle}
	keptSearch := search(func() []map[string]any { h, _ := benchFollow(b, kept, "search_text", q); return h })
	walkedSearch := search(func() []map[string]any { h, _ := benchFollow(b, walked, "search_text", q); return h })
	keptSearch()
	walkedSearch()
	var c benchClock
	var keptCPU, walkedCPU time.Duration
	cpu := func(pid int, sum *time.Duration, fn func()) func() {
		return func() {
			used := procCPU(b, pid)
			fn()
			*sum += procCPU(b, pid) - used
		}
	}
	b.ResetTimer()
	for i := range b.N {
		c.alternate(b, i, "walked", cpu(walkedCmd.Process.Pid, &walkedCPU, walkedSearch), cpu(keptCmd.Process.Pid, &keptCPU, keptSearch))
	}
	c.report(b)
	if walkedCPU > 0 {
		b.ReportMetric(float64(keptCPU)/float64(walkedCPU), "cpu-x-walked")
	}
}
