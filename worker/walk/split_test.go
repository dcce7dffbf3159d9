package walk

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fsmcp/fsmcp/internal/limits"
	"github.com/fsmcp/fsmcp/worker/watch"
)

// splitTree is a generated tree for the split walk's tests: the files it
// holds (paths under the root; a path ending in '/' is an empty
// directory), and the scope searched in it.
type splitTree struct {
	name  string
	paths []string
	scope string
}

// splitTrees are trees of varied shapes, each big enough for jobs on both
// goroutines.
func splitTrees() []splitTree {
	var wide, deep, slash, flat, narrow, mixed []string
	for i := range 40 {
		for j := range 25 {
			wide = append(wide, fmt.Sprintf("d%02d/f%02d.txt", i, j))
		}
	}
	for i := range 12 {
		// a chain 12 deep, files and a side branch at each level
		dir := strings.Repeat("c/", i+1)
		for j := range 30 {
			deep = append(deep, fmt.Sprintf("%sf%02d.txt", dir, j))
			deep = append(deep, fmt.Sprintf("%sside%d/g%02d.txt", dir, i, j))
		}
	}
	for i := range 20 {
		// names that sort around a directory's "x/": '-' and '.' before
		// '/', '0' after; a directory sorts as its name and '/'
		for _, n := range []string{"x-1", "x.go", "x0", "x.e", "x/y0", "x/y.go", "x/y-", "x/y/z", "x.d/a", "x-d/a", "x0d/a"} {
			slash = append(slash, fmt.Sprintf("p%02d/%s", i, n))
		}
	}
	for i := range 3000 {
		flat = append(flat, fmt.Sprintf("flat/f%04d.txt", 2999-i))
	}
	for i := range 3 {
		// few directories at the top, many two levels down
		for j := range 10 {
			for k := range 8 {
				narrow = append(narrow, fmt.Sprintf("n%d/m%d/l%d.txt", i, j, k))
				narrow = append(narrow, fmt.Sprintf("n%d/m%d/o/l%d.txt", i, j, k))
			}
			narrow = append(narrow, fmt.Sprintf("n%d/m%d.txt", i, j))
		}
	}
	for i := range 30 {
		// files beside directories, empty directories, excluded ones, a
		// name that is not UTF-8
		mixed = append(mixed, fmt.Sprintf("a%02d.txt", i), fmt.Sprintf("a%02d/b.txt", i),
			fmt.Sprintf("a%02d/empty/", i), fmt.Sprintf("a%02d/node_modules/x.txt", i),
			fmt.Sprintf("a%02d/bad\xff/x.txt", i), fmt.Sprintf("a%02d/c/d/e.txt", i))
		for j := range 40 {
			mixed = append(mixed, fmt.Sprintf("a%02d/c/f%02d.txt", i, j))
		}
	}
	return []splitTree{
		{"wide", wide, ""},
		{"deep", deep, ""},
		{"around-slash", slash, ""},
		{"flat", flat, ""},
		{"narrow", narrow, ""},
		{"mixed", mixed, ""},
		{"mixed-below", mixed, "a07"},
		{"deep-below", deep, "c/c"},
	}
}

// make writes t under a new directory, the files with a line each, and
// returns that directory.
func (tr splitTree) make(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	writeTree(t, dir, "needle\n", tr.paths...)
	return dir
}

// splitResult is what one walk gave: its files, error, the counts it
// charged, its watches, and whether it kept watching.
type splitResult struct {
	files                 []File
	err                   error
	nfiles, dirs, entries int64
	watches               int
	watching, started     bool
}

// walkOnce opens scope in r and inventories it, split (forced onto two
// goroutines from the first job on) or sequentially (eachFile), with a
// watch set of budget watches.
func walkOnce(t *testing.T, r *Tree, scope string, split bool, budget int) splitResult {
	t.Helper()
	w := r.Walk(context.Background())
	sc, err := w.OpenScope(scope, false)
	if err != nil {
		return splitResult{err: err}
	}
	if sc.D == nil {
		t.Fatalf("scope %q opened as nothing", scope)
	}
	defer sc.Close()
	set := watch.NewIn(watch.NewBudget(budget))
	defer set.Close()
	w.watch = set
	var res splitResult
	if split {
		res.files, res.started, res.err = w.split(sc.D, sc.Dir, walkSplit{force: true})
	} else {
		res.err = w.eachFile(sc.D, sc.Dir, w.inventoryFile(&res.files))
	}
	res.nfiles, res.dirs, res.entries = w.n.files.Load(), w.n.dirs.Load(), w.n.entries.Load()
	res.watches, res.watching = set.Len(), w.watch != nil
	return res
}

func paths(fs []File) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.Path
	}
	return out
}

// TestSplitWalk: on trees of every shape, the split walk gives the files
// of the sequential walk in the same order with the same identities,
// charges the same counts, adds the same watches (a file with a second
// link its own), and the second goroutine took part; and the order is
// the path order a walk promises.
func TestSplitWalk(t *testing.T) {
	for _, tr := range splitTrees() {
		t.Run(tr.name, func(t *testing.T) {
			dir := tr.make(t)
			if err := os.Link(filepath.Join(dir, tr.paths[len(tr.paths)/2]), filepath.Join(t.TempDir(), "link")); err != nil {
				t.Fatal(err)
			}
			r := openTree(t, dir, limits.Default)
			seq := walkOnce(t, r, tr.scope, false, 1<<20)
			if seq.err != nil {
				t.Fatal(seq.err)
			}
			if len(seq.files) < 40 {
				t.Fatalf("only %d files in the tree", len(seq.files))
			}
			if !slices.IsSorted(paths(seq.files)) {
				t.Fatal("the sequential walk is not in path order")
			}
			for range 5 {
				got := walkOnce(t, r, tr.scope, true, 1<<20)
				if got.err != nil {
					t.Fatal(got.err)
				}
				if !got.started {
					t.Fatal("the split walk ran on one goroutine")
				}
				if !slices.Equal(got.files, seq.files) {
					t.Fatalf("split walk:\n%v\nsequential:\n%v", paths(got.files), paths(seq.files))
				}
				if got.nfiles != seq.nfiles || got.dirs != seq.dirs || got.entries != seq.entries {
					t.Fatalf("split walk charged %d files, %d dirs, %d entries; sequential %d, %d, %d",
						got.nfiles, got.dirs, got.entries, seq.nfiles, seq.dirs, seq.entries)
				}
				if got.watching != canWatch || got.watches != seq.watches {
					t.Fatalf("split walk: %d watches (watching %v); sequential %d", got.watches, got.watching, seq.watches)
				}
			}
		})
	}
}

// TestJoinJobs: joinJobs's concatenation is the jobs' files in order,
// whether it copies on one goroutine or two, however the jobs' sizes fall.
func TestJoinJobs(t *testing.T) {
	jobs := func(sizes ...int) [][]File {
		out := make([][]File, len(sizes))
		k := 0
		for j, n := range sizes {
			for range n {
				out[j] = append(out[j], File{Path: fmt.Sprint(k)})
				k++
			}
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		sizes []int
	}{
		{"no jobs", nil},
		{"empty jobs", []int{0, 0, 0}},
		{"small", []int{3, 0, 5}},
		{"even", []int{joinSplitAt / 4, joinSplitAt / 4, joinSplitAt / 4, joinSplitAt / 4}},
		{"one big job first", []int{joinSplitAt * 2, 1, 1}},
		{"one big job last", []int{1, 1, joinSplitAt * 2}},
		{"one job", []int{joinSplitAt + 7}},
		{"empty jobs around", []int{0, joinSplitAt, 0, joinSplitAt, 0}},
	} {
		for _, two := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/two=%v", tc.name, two), func(t *testing.T) {
				got := joinJobs(jobs(tc.sizes...), two)
				want := 0
				for _, n := range tc.sizes {
					want += n
				}
				if len(got) != want {
					t.Fatalf("joinJobs gave %d files, want %d", len(got), want)
				}
				for i, sf := range got {
					if sf.Path != fmt.Sprint(i) {
						t.Fatalf("file %d is %q", i, sf.Path)
					}
				}
			})
		}
	}
}

// TestSplitWalkLimits: with each ceiling set at points the walk crosses
// early, midway and last, the split walk fails where the sequential one
// does (never a short answer), and inventory returns exactly the
// sequential walk's answer or error text.
func TestSplitWalkLimits(t *testing.T) {
	for _, tr := range splitTrees() {
		t.Run(tr.name, func(t *testing.T) {
			dir := tr.make(t)
			open := func(lim limits.Limits) *Tree { return openTree(t, dir, lim) }
			full := walkOnce(t, open(limits.Default), tr.scope, false, 1<<20)
			if full.err != nil {
				t.Fatal(full.err)
			}
			depth := int64(0)
			for _, f := range full.files {
				depth = max(depth, int64(strings.Count(f.Path, "/")))
			}
			for _, tc := range []struct {
				name  string
				total int64
				set   func(*limits.Limits, int64)
			}{
				{"files", full.nfiles, func(l *limits.Limits, n int64) { l.MaxFiles = n }},
				{"dirs", full.dirs, func(l *limits.Limits, n int64) { l.MaxDirectories = n }},
				{"entries", full.entries, func(l *limits.Limits, n int64) { l.MaxEntries = n }},
				{"depth", depth, func(l *limits.Limits, n int64) { l.MaxDepth = n }},
			} {
				for _, at := range []int64{1, tc.total / 2, tc.total - 1, tc.total} {
					if at < 1 && tc.name != "depth" {
						continue // not a valid ceiling
					}
					lim := limits.Default
					tc.set(&lim, at)
					r := open(lim)
					seq := walkOnce(t, r, tr.scope, false, 1<<20)
					if (seq.err == nil) != (at >= tc.total) {
						t.Fatalf("%s at %d of %d: sequential walk %v", tc.name, at, tc.total, seq.err)
					}
					got := walkOnce(t, r, tr.scope, true, 1<<20)
					if (got.err == nil) != (seq.err == nil) {
						t.Fatalf("%s at %d of %d: split walk %v, sequential %v", tc.name, at, tc.total, got.err, seq.err)
					}
					if got.err == nil && !slices.Equal(got.files, seq.files) {
						t.Fatalf("%s at %d: split walk answered otherwise", tc.name, at)
					}
					w := r.Walk(context.Background())
					sc, err := w.OpenScope(tr.scope, false)
					if err != nil {
						if seq.err == nil || err.Error() != seq.err.Error() {
							t.Fatalf("%s at %d: scope: %v, sequential walk %v", tc.name, at, err, seq.err)
						}
						continue
					}
					files, err := w.inventory(sc.D, sc.Dir, walkSplit{force: true})
					sc.Close()
					if fmt.Sprint(err) != fmt.Sprint(seq.err) || !slices.Equal(files, seq.files) {
						t.Fatalf("%s at %d: inventory %d files, %v; sequential %d files, %v",
							tc.name, at, len(files), err, len(seq.files), seq.err)
					}
				}
			}
		})
	}
}

// TestSplitWalkWatchRefused: with a watch budget the scope outgrows at
// various points, the split walk stops watching, for both goroutines, and
// answers as the sequential walk does; with enough, it watches all (where
// the backend can watch at all).
func TestSplitWalkWatchRefused(t *testing.T) {
	tr := splitTrees()[0] // wide: 41 directories
	dir := tr.make(t)
	r := openTree(t, dir, limits.Default)
	for _, budget := range []int{0, 1, 5, 20, 40, 41} {
		seq := walkOnce(t, r, "", false, budget)
		got := walkOnce(t, r, "", true, budget)
		if seq.err != nil || got.err != nil {
			t.Fatal(seq.err, got.err)
		}
		if want := canWatch && budget >= 41; seq.watching != want || got.watching != want {
			t.Fatalf("budget %d: still watching after the walk: split %v, sequential %v, want %v", budget, got.watching, seq.watching, want)
		}
		if !slices.Equal(got.files, seq.files) {
			t.Fatalf("budget %d: split walk answered otherwise", budget)
		}
	}
}

// TestSplitWalkCancelled: a split walk whose context ends midway (after
// the calling goroutine's first, second or fourth job, the other goroutine
// walking too) returns the context's error, and so does inventory; each
// goroutine stops at its next file; no goroutine is left behind.
func TestSplitWalkCancelled(t *testing.T) {
	wide := splitTrees()[0] // a job is a directory of 25 files
	dir, total := wide.make(t), int64(len(wide.paths))
	r := openTree(t, dir, limits.Default)
	before := runtime.NumGoroutine()
	// once cancels a walk after the calling goroutine's jobs-th job and
	// reports whether the cancellation had anything left to stop (on a
	// loaded machine the other goroutine may take every job first, or
	// every file may be charged by the time it comes; then the walk is
	// tried again).
	once := func(jobs int, whole bool) bool {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		w := r.Walk(ctx)
		sc, err := w.OpenScope("", false)
		if err != nil {
			t.Fatal(err)
		}
		defer sc.Close()
		done, charged := 0, int64(0)
		sp := walkSplit{force: true, done: func() {
			if done++; done == jobs {
				cancel() // then count: the other goroutine goes on until it looks
				charged = w.n.files.Load()
			}
		}}
		var files []File
		if whole {
			files, err = w.inventory(sc.D, sc.Dir, sp)
		} else {
			var started bool
			files, started, err = w.split(sc.D, sc.Dir, sp)
			if !started {
				t.Fatal("the split walk ran on one goroutine")
			}
			// past the cancellation, the other goroutine charges at most
			// the file it was at and one more before its next look
			if n := w.n.files.Load(); done >= jobs && n > charged+2 {
				t.Fatalf("%d files charged after the cancellation", n-charged)
			}
		}
		if done < jobs {
			return false
		}
		// Each file is charged before its context check, so a walk that
		// passed every check had charged every file before the
		// cancellation: it may end whole, and nothing else may.
		if err == nil && charged == total && int64(len(files)) == total {
			return false
		}
		if !errors.Is(err, context.Canceled) || files != nil {
			t.Fatalf("cancelled after %d jobs (inventory %v): %d files, %v", jobs, whole, len(files), err)
		}
		return true
	}
	for _, jobs := range []int{1, 2, 4} {
		for _, whole := range []bool{false, true} {
			tries := 1
			for ; !once(jobs, whole); tries++ {
				if tries == 20 {
					t.Fatalf("in 20 walks the cancellation after the calling goroutine's job %d of 40 never had anything left to stop: the other goroutine took or charged the rest first", jobs)
				}
			}
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines after the walks, %d before", runtime.NumGoroutine(), before)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// BenchmarkSplitWalk: the cold inventory of a whole tree of 100,000 empty
// files shaped like e2e's BenchmarkSearchTextScaling (tNNN/mN/lN, 40 files
// a leaf), each directory watched as a kept inventory's are, two ways
// taking turns in one loop:
//
//	split-ns      as Take takes it (inventory): split onto two
//	              goroutines
//	seq-ns        on one goroutine (eachFile): what inventory's
//	              sequential redo does
//	x-seq         split-ns divided by seq-ns: what the split gains
//
// ns/op is the two together. The page cache holds the tree (it is walked
// once before timing).
func BenchmarkSplitWalk(b *testing.B) {
	const files = 100000
	dir := b.TempDir()
	for i := range files {
		leaf := i / 40
		p := filepath.Join(dir, fmt.Sprintf("t%03d/m%d/l%d/f%06d.go", leaf/50, leaf/10%5, leaf%10, i))
		if i%40 == 0 {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				b.Fatal(err)
			}
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	lim := limits.Default
	lim.MaxFiles, lim.MaxDirectories = 1<<20, 1<<20
	r := openTree(b, dir, lim)
	const split, seq = 0, 1
	once := func(how int) time.Duration {
		start := time.Now()
		w := r.Walk(context.Background())
		sc, err := w.OpenScope("", false)
		if err != nil {
			b.Fatal(err)
		}
		set := watch.NewIn(watch.NewBudget(1 << 15))
		w.watch = set
		var got []File
		switch how {
		case split:
			got, err = w.inventory(sc.D, sc.Dir, walkSplit{after: splitAfter})
		case seq:
			err = w.eachFile(sc.D, sc.Dir, w.inventoryFile(&got))
		}
		sc.Close()
		set.Close()
		if err != nil || len(got) != files || w.watch == nil {
			b.Fatalf("%d files, %v, watching %v", len(got), err, w.watch != nil)
		}
		return time.Since(start)
	}
	once(seq)
	var took [2]time.Duration
	b.ResetTimer()
	for i := range b.N {
		for k := range 2 {
			how := (i + k) % 2 // each way goes first in turn
			took[how] += once(how)
		}
	}
	per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(b.N) }
	b.ReportMetric(per(took[split]), "split-ns")
	b.ReportMetric(per(took[seq]), "seq-ns")
	b.ReportMetric(float64(took[split])/float64(took[seq]), "x-seq")
}
