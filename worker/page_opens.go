package worker

import (
	"errors"
	"sync"

	"github.com/fsmcp/fsmcp/worker/confine"
)

// pageOpens opens the files a page scans ahead in groups of
// confine.BatchSize, one confine.OpenReaders batch a group, the first time
// a file of the group is wanted, or the first file of the group before is
// taken: a few system calls for the group instead of four a file. Each file's Reader goes to the one goroutine that takes
// it; those no one took when the page ends are closed by close, or by the
// goroutine still opening their group then.
type pageOpens struct {
	r      *Root
	files  []scopedFile // the page's planned files, first to last
	groups []sync.Once
	out    []confine.Opened
	// closer closes the page's files a batch at a time, the last ones
	// when the page ends.
	closer *confine.Closer

	mu      sync.Mutex
	taken   []bool
	opened  []bool // per group
	stopped bool
	// For a next page scanned before it is asked for: a group whose open
	// began before the page was asked for (taken over) is early, and the
	// Readers of its files stay open, held, until the page takes their
	// outcomes and checks them again (see scanAhead.confirm).
	takenOver bool
	early     []bool // per group
	held      map[int]*confine.Reader
}

// errPageEnded is take's answer once the page has ended.
var errPageEnded = errors.New("the page has ended")

func newPageOpens(r *Root, files []scopedFile) *pageOpens {
	n := len(files)
	groups := (n + confine.BatchSize - 1) / confine.BatchSize
	return &pageOpens{
		r: r, files: files, groups: make([]sync.Once, groups), out: make([]confine.Opened, n),
		taken: make([]bool, n), opened: make([]bool, groups), closer: r.dir.NewCloser(),
		early: make([]bool, groups),
	}
}

// takeOver records that the page is asked for: groups opened from now on
// are not early.
func (o *pageOpens) takeOver() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.takenOver = true
}

// isEarly reports whether file k's group began opening before the page
// was taken over.
func (o *pageOpens) isEarly(k int) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.early[k/confine.BatchSize]
}

// hold keeps file k's Reader open until unhold; false (the caller closes
// it) once the page has ended.
func (o *pageOpens) hold(k int, f *confine.Reader) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.stopped {
		return false
	}
	if o.held == nil {
		o.held = map[int]*confine.Reader{}
	}
	o.held[k] = f
	return true
}

// unhold returns file k's held Reader, now the caller's, or nil.
func (o *pageOpens) unhold(k int) *confine.Reader {
	o.mu.Lock()
	defer o.mu.Unlock()
	f := o.held[k]
	delete(o.held, k)
	return f
}

// take returns file k's open, opening its group first if no one has; the
// caller owns the Reader. A file taken twice, or after the page ended,
// gets errPageEnded.
func (o *pageOpens) take(k int) confine.Opened {
	g := k / confine.BatchSize
	o.groups[g].Do(func() { o.open(g) })
	if k%confine.BatchSize == 0 && g+1 < len(o.groups) {
		// Whoever starts a group opens the next while the other
		// goroutines scan this one, so that none waits on its open.
		o.groups[g+1].Do(func() { o.open(g + 1) })
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.stopped || o.taken[k] {
		return confine.Opened{Err: errPageEnded}
	}
	o.taken[k] = true
	return o.out[k]
}

// open opens group g's files.
func (o *pageOpens) open(g int) {
	from, to := g*confine.BatchSize, min(len(o.files), (g+1)*confine.BatchSize)
	o.mu.Lock()
	o.early[g] = !o.takenOver
	o.mu.Unlock()
	rels := make([]string, 0, to-from)
	for _, sf := range o.files[from:to] {
		rels = append(rels, sf.path)
	}
	o.r.dir.OpenReaders(rels, o.out[from:to])
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
	for k, f := range o.held {
		o.closer.Close(f)
		delete(o.held, k)
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
