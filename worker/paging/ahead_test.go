package paging

import (
	"context"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/fsmcp/fsmcp/worker/textscan"
	"github.com/fsmcp/fsmcp/worker/walk"
)

// The page's goroutine waits for each slot in turn while scanners mark
// them ready in any order: no wake-up is lost (a lost one hangs the test)
// and each outcome is seen as its scanner wrote it.
func TestWaitReady(t *testing.T) {
	for _, tc := range []struct {
		name  string
		order func(n int) []int
	}{
		{"in order", func(n int) []int {
			k := make([]int, n)
			for i := range k {
				k[i] = i
			}
			return k
		}},
		{"reversed", func(n int) []int {
			k := make([]int, n)
			for i := range k {
				k[i] = n - 1 - i
			}
			return k
		}},
		{"interleaved", func(n int) []int {
			var k []int
			for i := 1; i < n; i += 2 {
				k = append(k, i)
			}
			for i := 0; i < n; i += 2 {
				k = append(k, i)
			}
			return k
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const n = 2000
			a := &scanAhead{ctx: context.Background(), slots: make([]aheadSlot, n), wake: make(chan struct{}, 1)}
			order := tc.order(n)
			// Two scanners, each marking every other slot of the order.
			for w := range 2 {
				go func() {
					for i := w; i < n; i += 2 {
						k := order[i]
						a.slots[k].res.scanned = int64(k) + 1
						if k%7 == 0 {
							runtime.Gosched()
						}
						a.markReady(&a.slots[k])
					}
				}()
			}
			for k := range n {
				if !a.waitReady(&a.slots[k]) {
					t.Fatalf("slot %d: not ready", k)
				}
				if got := a.slots[k].res.scanned; got != int64(k)+1 {
					t.Fatalf("slot %d: outcome %d, want %d", k, got, k+1)
				}
			}
		})
	}
}

// TestWaitReadyEnds: a wait for a slot no goroutine scans ends when the
// scan's context does, and reports that the slot is not ready.
func TestWaitReadyEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	a := &scanAhead{ctx: ctx, slots: make([]aheadSlot, 1), wake: make(chan struct{}, 1)}
	time.AfterFunc(20*time.Millisecond, cancel)
	if a.waitReady(&a.slots[0]) {
		t.Fatal("waitReady reported a slot ready that no one scanned")
	}
}

// aheadBudgetsByAppend is aheadBudgets as it was first written, growing
// its plan file by file: the plan made at once must be the same.
func aheadBudgetsByAppend(files []walk.File, first int, pos textscan.Position, budget int64, maxTermLen int) []int64 {
	if first >= len(files) || budget < int64(maxTermLen) {
		return nil
	}
	from := pos.ReadsFrom(maxTermLen)
	plan := []int64{budget}
	left := budget - min(budget, max(0, files[first].ID.Size-from))
	for _, sf := range files[first+1:] {
		if left < int64(maxTermLen) {
			break
		}
		plan = append(plan, left)
		if left < sf.ID.Size {
			break
		}
		left -= sf.ID.Size
	}
	return plan
}

func TestAheadBudgets(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		name            string
		files           int
		maxSize, budget int64
		maxTermLen      int
	}{
		{"small files, big budget", 200, 2048, 1 << 20, 8},
		{"budget ends inside a file", 50, 100_000, 300_000, 8},
		{"empty files", 40, 1, 4096, 16},
		{"long terms", 100, 5000, 60_000, 4096},
		{"budget below a term", 10, 100, 10, 16},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for range 50 {
				files := make([]walk.File, tc.files)
				for i := range files {
					files[i].ID.Size = rng.Int64N(tc.maxSize)
				}
				first := rng.IntN(tc.files)
				pos := textscan.Position{Offset: rng.Int64N(tc.maxSize), LineStart: rng.Int64N(tc.maxSize), Skip: rng.IntN(2) == 0}
				want := aheadBudgetsByAppend(files, first, pos, tc.budget, tc.maxTermLen)
				got := aheadBudgets(files, first, pos, tc.budget, tc.maxTermLen)
				if !slices.Equal(got, want) {
					i := 0
					for i < min(len(got), len(want)) && got[i] == want[i] {
						i++
					}
					t.Fatalf("first %d, pos %+v: a plan of %d files, want %d; they differ from file %d on", first, pos, len(got), len(want), i)
				}
			}
		})
	}
}
