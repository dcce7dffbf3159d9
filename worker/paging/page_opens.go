package paging

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/fsmcp/fsmcp/worker/confine"
	"github.com/fsmcp/fsmcp/worker/walk"
)

// pageOpens opens the files a page scans ahead in groups of
// confine.BatchSize, one confine.OpenReaders batch a group: a few system
// calls for the group instead of four a file. The goroutine that takes a
// group's first file opens the next openAheadGroups groups too, while the
// others scan this one; a goroutine whose file's group another is still
// opening opens a group further on meanwhile instead of waiting idle, so
// the goroutines open as well as scan side by side. Each file's Reader
// goes to the one goroutine that takes it; those no one took when the page
// ends are closed by close, or by the goroutine still opening their group
// then.
type pageOpens struct {
	ctx    context.Context // the page's (or run's): take waits no longer
	dir    *confine.Root
	files  []walk.File // the page's planned files, first to last
	groups []groupOpen
	out    []confine.Opened
	// closer closes the page's files a batch at a time, the last ones
	// when the page ends.
	closer *confine.Closer

	mu      sync.Mutex
	taken   []bool
	opened  []bool // per group
	stopped bool
	// mayOpen reports whether group g may be opened ahead now (nil:
	// always); a run opens only as far as its goroutines may claim.
	mayOpen func(g int) bool
	// askedGen, for a run, tells the page asked for as a group's open
	// starts (openedIn).
	askedGen func() int64
	openGen  []int64 // per group, with askedGen
	// opening, if set (Options.GroupOpen), is called as a group's open begins.
	opening func(g int)
}

// openAheadGroups is how many groups past a file's own take may open.
// One ahead left the goroutines waiting on each other's opens: a group of
// small files opens in about the time the other goroutine scans one
// (docs/design.md, "Opening a page's files in batches (io_uring)").
const openAheadGroups = 2

// errPageEnded is take's answer once the page has ended.
var errPageEnded = errors.New("the page has ended")

// newPageOpens opens files beneath dir for a page whose context is ctx;
// opening, if not nil, is called as each group's open begins.
func newPageOpens(ctx context.Context, dir *confine.Root, files []walk.File, opening func(g int)) *pageOpens {
	n := len(files)
	groups := (n + confine.BatchSize - 1) / confine.BatchSize
	return &pageOpens{
		ctx: ctx, dir: dir, files: files, groups: newGroupOpens(groups), out: make([]confine.Opened, n),
		taken: make([]bool, n), opened: make([]bool, groups), closer: dir.NewCloser(), opening: opening,
	}
}

// openedIn returns the page (askedGen) during whose call file k's group
// was opened: -1 if none, or no run's.
func (o *pageOpens) openedIn(k int) int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.openGen == nil {
		return -1
	}
	return o.openGen[k/confine.BatchSize]
}

// take returns file k's open, opening its group first if no one has; the
// caller owns the Reader. A file taken twice, or after the page ended,
// gets errPageEnded; one whose group another goroutine is still opening
// when the context ends gets the context's error (an open on a filesystem
// that stopped answering must not hold the page past its call).
func (o *pageOpens) take(k int) confine.Opened {
	g := k / confine.BatchSize
	if k%confine.BatchSize == 0 {
		// Whoever starts a group opens the next ones while the other
		// goroutines scan this one, so that none waits on their open.
		o.start(g)
		o.openAhead(g, false)
	} else if !o.start(g) && !o.groups[g].isOpen() {
		// Another goroutine opens the group: open one further on
		// meanwhile, rather than wait idle.
		o.openAhead(g, true)
	}
	select {
	case <-o.groups[g].done:
	case <-o.ctx.Done():
		return confine.Opened{Err: o.ctx.Err()}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.stopped || o.taken[k] {
		return confine.Opened{Err: errPageEnded}
	}
	o.taken[k] = true
	return o.out[k]
}

// openAhead opens the groups after g, up to openAheadGroups on, that no
// one has begun and that may open now (mayOpen); with one, only the first
// of them.
func (o *pageOpens) openAhead(g int, one bool) {
	for n := g + 1; n < min(len(o.groups), g+1+openAheadGroups) && (o.mayOpen == nil || o.mayOpen(n)); n++ {
		if o.start(n) && one {
			return
		}
	}
}

// start opens group g if no one has begun to; true if this call did.
func (o *pageOpens) start(g int) bool {
	if !o.groups[g].begun.CompareAndSwap(false, true) {
		return false
	}
	o.open(g)
	close(o.groups[g].done)
	return true
}

// groupOpen is one group's open: begun by one goroutine, done is closed
// once it has ended.
type groupOpen struct {
	begun atomic.Bool
	done  chan struct{}
}

func newGroupOpens(n int) []groupOpen {
	g := make([]groupOpen, n)
	for i := range g {
		g[i].done = make(chan struct{})
	}
	return g
}

// isOpen reports whether the group's open has ended.
func (g *groupOpen) isOpen() bool { return isClosed(g.done) }

// isClosed reports whether ch is closed, without waiting.
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// open opens group g's files.
func (o *pageOpens) open(g int) {
	if o.opening != nil {
		o.opening(g)
	}
	from, to := g*confine.BatchSize, min(len(o.files), (g+1)*confine.BatchSize)
	if o.askedGen != nil {
		gen := o.askedGen()
		o.mu.Lock()
		o.openGen[g] = gen
		o.mu.Unlock()
	}
	rels := make([]string, 0, to-from)
	for _, f := range o.files[from:to] {
		rels = append(rels, f.Path)
	}
	o.dir.OpenReaders(rels, o.out[from:to])
	o.mu.Lock()
	defer o.mu.Unlock()
	o.opened[g] = true
	if o.stopped {
		o.closeGroup(g)
	}
}

// close ends the page: files opened and not taken are closed.
func (o *pageOpens) close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.stopped = true
	for g, ok := range o.opened {
		if ok {
			o.closeGroup(g)
		}
	}
	o.closer.End()
}

// closeGroup closes group g's Readers no one took; o.mu held.
func (o *pageOpens) closeGroup(g int) {
	from, to := g*confine.BatchSize, min(len(o.files), (g+1)*confine.BatchSize)
	for k := from; k < to; k++ {
		if !o.taken[k] && o.out[k].R != nil {
			o.closer.Close(o.out[k].R)
		}
		o.taken[k] = true
	}
}
