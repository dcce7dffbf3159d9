// Package heapfloor lets a process with a small live heap collect garbage
// less often, without raising the peak of one with a large heap.
//
// GOGC=100 starts a collection each time the heap has grown by as much as
// was live after the last one. A worker's live heap is a few megabytes
// between calls, so a search that allocates a few kilobytes per file it
// scans (and the SDK some more per request) collects every few megabytes:
// several times a second, each collection waking threads and stopping the
// world, which costs more than the marking on a machine where wake-ups are
// slow. After each collection, Start's watcher sets the GOGC percentage
// so that the next one comes after at least headroom bytes of growth, or
// after as much as is live (the percentage set before Start, at least),
// whichever is more: a small heap may grow by headroom, a large one grows
// as it would have, so the peak of a search holding a big inventory is
// what it was.
//
// The runtime never aims below its minimum heap, which is 4 MiB at
// GOGC=100 and scales with the percentage. The percentage that lets a
// heap of 1 MiB live grow by 4 MiB (400) would raise that minimum to
// 16 MiB, so the percentage is capped where the minimum reaches live +
// headroom. Without the cap the heap grew by 3 to 4 times headroom, by
// more the less was live, so the goal swung with every collection and
// the runtime gave the difference back to the kernel each time, only to
// fault it in again.
package heapfloor

import (
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// The heap the last collection found live, and the GOGC percentage.
const (
	liveMetric    = "/gc/heap/live:bytes"
	percentMetric = "/gc/gogc:percent"
)

var once sync.Once

// Start sets the GOGC percentage after every collection from now on, as
// above, with base the percentage in effect when it is called (leaving it
// alone if collection is off). Only the first call has an effect.
func Start(headroom uint64) {
	once.Do(func() {
		s := []metrics.Sample{{Name: percentMetric}}
		metrics.Read(s)
		v := s[0].Value.Uint64() // GOGC=off reads as -1, wrapped
		if v == 0 || v > math.MaxInt32 {
			return
		}
		base := int(v)
		w := &watcher{base: base, headroom: headroom, sample: []metrics.Sample{{Name: liveMetric}}}
		w.arm()
	})
}

// watcher adjusts the percentage; only its finalizer goroutine uses it
// once Start returns.
type watcher struct {
	base, set int
	headroom  uint64
	sample    []metrics.Sample
}

// sentinel is an object nothing refers to: its finalizer runs after the
// collection that finds it unreachable, then arms the next one. It is
// larger than the allocator's tiny objects, whose finalizers may never run.
type sentinel struct {
	w *watcher
	_ [16]byte
}

func (w *watcher) arm() {
	s := &sentinel{w: w}
	runtime.SetFinalizer(s, func(s *sentinel) {
		s.w.adjust()
		s.w.arm()
	})
}

// adjust sets the percentage for the heap live now.
func (w *watcher) adjust() {
	metrics.Read(w.sample)
	if w.sample[0].Value.Kind() != metrics.KindUint64 || w.sample[0].Value.Uint64() == 0 {
		return // no collection yet
	}
	p := Percent(w.sample[0].Value.Uint64(), w.headroom, w.base)
	if p != w.set {
		debug.SetGCPercent(p)
		w.set = p
	}
}

// Percent is the GOGC percentage that lets a heap of live bytes grow by
// headroom bytes, or by base percent where that is more, rounded up to a
// multiple of 10 so that small changes of the live heap change nothing.
// It is at most the percentage at which the runtime's minimum heap is
// live + headroom (see the package comment).
func Percent(live, headroom uint64, base int) int {
	live = max(live, 1)
	p := int((headroom*100 + live - 1) / live)
	p = min(p, int((live+headroom)*100/minHeap))
	p = (p + 9) / 10 * 10
	return max(p, base)
}

// minHeap is the runtime's minimum heap at GOGC=100.
const minHeap = 4 << 20
