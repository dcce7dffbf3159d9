//go:build linux

package e2e

import (
	"testing"
	"time"
)

// BenchmarkCallDuringScanAhead: a server/discover sent right after a
// search_text page answered, while the worker scans the next page ahead on
// its own goroutines, against the same call sent right after another one
// (x-warm), the page's scanning over. The tree is the 206 MB one (the
// 10k-file one under -short), where a next page is about 40 files of 100
// KiB, all scanned before the page is asked for, and the page after it
// too. The figure shows what a call waits for behind the scanning ahead:
// the worker's reader waits for a request on the runtime's network poller,
// which a P polls only when it has nothing else to run, so while every P
// scans, the request is read when the scans run out of files
// (docs/design.md, "A request while pages scan ahead").
func BenchmarkCallDuringScanAhead(b *testing.B) {
	t := benchTree(b, benchBigFiles, benchBigMean)
	if testing.Short() {
		t = benchTree(b, 10000, benchScaleMean)
	}
	w := startRawWorker(b, append([]string{"--root", t.root, "--include", "**"}, benchFlags(benchTreeLimits())...)...)
	search := map[string]any{"query": benchNeedle}
	page := func() {
		if p := w.call(b, "search_text", search); p.Result.StructuredContent.NextCursor == nil {
			b.Fatal("the first page handed out no cursor: nothing is scanned ahead")
		}
	}
	discover := func() {
		if m := w.request(b, "server/discover"); m["resultType"] != "complete" {
			b.Fatalf("server/discover answered %v", m)
		}
	}
	page() // the walk, and the inventory kept
	discover()
	const rounds = 10
	// Each call is timed on its own (ns/op also holds the pages and the
	// pauses): stopping the benchmark's timer between the two calls of the
	// warm side, as benchClock.reference does, would leave the worker idle
	// between them.
	var c benchClock
	b.ResetTimer()
	for i := range b.N {
		turns(i, func() {
			for range rounds {
				page()
				c.measure(discover)
			}
		}, func() {
			for range rounds {
				page()
				time.Sleep(50 * time.Millisecond) // the next pages scanned
				discover()
				start := time.Now()
				discover()
				c.add("warm", time.Since(start))
			}
		})
	}
	c.report(b)
	c.perOp(b, rounds, "ns/call")
}
