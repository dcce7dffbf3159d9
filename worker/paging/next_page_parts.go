package paging

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/fsmcp/fsmcp/worker/confine"
	"github.com/fsmcp/fsmcp/worker/textscan"
)

// A run (the scan of next pages, next_page.go) plans the files after its
// first one whole, and leaves to the pages the files it predicts a page
// ends inside (runBudgets). When it is handed on to a page, the page's
// start is known exactly, so it plans that page's two boundary files as
// parts, scanned ahead like its slots while the page's request travels:
// the head, the file the page starts inside, from the cursor with the
// page's whole budget; and the tail, the file the page would end inside
// were it to take every outcome as planned, from its start with the
// budget left there. A page takes a part only if it reads the file from
// there with that budget; a prediction that fails costs the file scanned
// by the page itself, never a different page.
//
// A file a run reads while no page is asked for, or past the predicted
// end of the page asked for, may be taken by a page asked for later: it is
// kept open until then (see scanAhead.confirm). So the goroutines of a run
// claim no slot a window or more past the start of the page it was handed
// on to, or, once that page is asked for, past its predicted end (the
// gate), which bounds the files held open and the work a client that
// stops following the cursor wastes. The window starts at a page's budget
// in bytes (and at most nextPageEarlyFiles files) and doubles each time the
// run is handed on, as readahead grows on a file read in order, up to
// runMaxWindow pages' budget and runMaxWindowFiles files.

// runMaxWindow bounds, in pages' budgets, how far a run scans ahead of its
// page; runMaxWindowFiles bounds it in files (and so the descriptors held).
const (
	runMaxWindow      = 16
	runMaxWindowFiles = 256
)

// part is a boundary file's scan planned for a page a run is handed on to.
type part struct {
	file    int
	from    textscan.Position
	claimed atomic.Bool
	s       aheadSlot
}

// gate holds a run's goroutines back: start and end are the first slot
// of the page the run was last handed on to (or starts with) and the
// slot that page is predicted to end in (or before).
type gate struct {
	start, end atomic.Int64
	mu         sync.Mutex
	moved      chan struct{} // closed when the gate moves; nil: no one waits
	waiting    atomic.Bool   // moved is not nil
}

// startRun sets a new run's window and gate, and plans its first page.
func (a *scanAhead) startRun() {
	a.planned = make([]int64, len(a.slots)+1)
	for k := range a.slots {
		a.planned[k+1] = a.planned[k] + a.files[a.first+k].ID.Size
	}
	a.window.Store(1)
	// A group is opened ahead once the one before it may be claimed: the
	// files claimed first, and the group past them.
	a.opens.mayOpen = func(g int) bool { return g == 0 || a.claimable(int64((g-1)*confine.BatchSize)) }
	a.opens.askedGen = a.askedGen
	a.opens.openGen = make([]int64, len(a.opens.groups))
	a.planPage(Position{File: a.first}, a.pos)
}

// claimable reports whether slot k may be claimed now: for a run, one
// inside its window past the start of its page, or, once the page is
// asked for, past its predicted end or the slot it needs, whichever is
// further (its files are then read during its call).
func (a *scanAhead) claimable(k int64) bool {
	if !a.run {
		return true
	}
	base := a.gate.start.Load()
	if a.asked.Load() {
		base = max(base, a.gate.end.Load(), a.need.Load())
	}
	w := a.window.Load()
	if k >= base+min(w*nextPageEarlyFiles, runMaxWindowFiles) {
		return false
	}
	// Bytes planned from base to k, within w pages' budget.
	return k < base || a.planned[k]-a.planned[base] < w*a.e.cfg.ScanBytes
}

// takenOver records that the page the run was handed on to (or starts
// with) is asked for: the files its goroutines read from now on until it
// ends, up to its predicted end, are read during its call.
func (a *scanAhead) takenOver() {
	a.gen.Add(1)
	a.asked.Store(true)
	a.gate.kick()
}

// carried widens a run's window as its page hands it on, and plans the
// page after, which starts at pos and is not asked for yet.
func (a *scanAhead) carried(pos Position) {
	a.asked.Store(false)
	a.window.Store(min(2*a.window.Load(), runMaxWindow))
	a.dropParts()
	a.planPage(pos, pos.At)
	a.gate.kick()
}

// askedGen is the page asked for now (-1: none), for an open starting.
func (a *scanAhead) askedGen() int64 {
	gen := a.gen.Load()
	if !a.asked.Load() {
		return -1
	}
	return gen
}

// holds reports whether a run's goroutine keeps the file of slot k (or a
// part, k -1) open once read, for its page to check it again when it takes
// the outcome (see confirm): one read while no page is asked for, or past
// the asked page's predicted end. gen is the page asked for.
func (a *scanAhead) holds(k int) (hold bool, gen int64) {
	gen = a.gen.Load()
	hold = !a.asked.Load() || k < 0 || int64(k) >= a.gate.end.Load()
	return hold, gen
}

// planPage plans the page that starts in file pos.File at from: the
// gate's start and end, and the head (unless the run's slot 0 is that
// scan) and tail.
func (a *scanAhead) planPage(pos Position, from textscan.Position) {
	end := a.first + len(a.slots)
	i := pos.File
	a.gate.start.Store(int64(i - a.first))
	a.gate.end.Store(int64(len(a.slots)))
	if i >= end {
		return
	}
	budget := a.e.cfg.ScanBytes
	if (from != textscan.Position{} || a.files[i].ID.Size > budget) && (i != a.first || from != a.pos) {
		a.head.Store(&part{file: i, from: from, s: aheadSlot{budget: budget}})
	}
	// The page's plan, as a page scanning ahead from pos makes it: its
	// last file is the tail when the budget ends inside it.
	plan := aheadBudgets(a.files[:end], i, from, budget, int(a.maxTermLen))
	last := i + max(len(plan), 1) - 1
	if len(plan) > 1 && plan[len(plan)-1] < a.files[last].ID.Size {
		a.tail.Store(&part{file: last, s: aheadSlot{budget: plan[len(plan)-1]}})
		last-- // the page ends inside the tail
	}
	a.gate.end.Store(int64(last + 1 - a.first))
}

// partAt returns the part the page at pos with budget left takes, or nil.
func (a *scanAhead) partAt(pos Position, budget int64) *part {
	if !a.run {
		return nil
	}
	for _, p := range [...]*part{a.head.Load(), a.tail.Load()} {
		if p != nil && p.file == pos.File && p.from == pos.At && p.s.budget == budget && !p.s.left.Load() {
			return p
		}
	}
	return nil
}

// takePart returns part p's outcome, scanning it with sc unless another
// goroutine has begun to.
func (a *scanAhead) takePart(sc *textscan.Scanner, p *part) *fileScan {
	if p.claimed.CompareAndSwap(false, true) {
		a.scanPart(sc, p)
	} else if !a.waitReady(&p.s) {
		return &fileScan{err: a.ctx.Err()}
	}
	return a.confirm(&p.s, p.file)
}

// partsWaiting reports whether a part is planned that no one has claimed.
func (a *scanAhead) partsWaiting() bool {
	for _, p := range [...]*part{a.head.Load(), a.tail.Load()} {
		if p != nil && !p.claimed.Load() {
			return true
		}
	}
	return false
}

// scanParts scans a part no one has claimed; false if there is none.
func (a *scanAhead) scanParts(sc *textscan.Scanner) bool {
	for _, p := range [...]*part{a.head.Load(), a.tail.Load()} {
		if p != nil && p.claimed.CompareAndSwap(false, true) {
			a.scanPart(sc, p)
			return true
		}
	}
	return false
}

// scanPart opens part p's file and scans it.
func (a *scanAhead) scanPart(sc *textscan.Scanner, p *part) {
	if !p.s.left.Load() {
		p.s.kept, p.s.gen = a.holds(-1)
		p.s.openGen = a.askedGen()
		f, id, err := a.e.dir.OpenReader(a.files[p.file].Path)
		a.scanInto(sc, &p.s, p.file, confine.Opened{R: f, ID: id, Err: err}, p.from)
	}
	a.markReady(&p.s)
}

// dropParts leaves the parts planned (closing their files).
func (a *scanAhead) dropParts() {
	for _, p := range [...]*part{a.head.Swap(nil), a.tail.Swap(nil)} {
		if p != nil {
			a.leaveSlot(&p.s)
		}
	}
}

// wait waits until ok reports true, checking it again each time the gate
// moves (kick); false if ctx ends first.
func (g *gate) wait(ctx context.Context, ok func() bool) bool {
	for {
		g.mu.Lock()
		if g.moved == nil {
			g.moved = make(chan struct{})
		}
		moved := g.moved
		g.waiting.Store(true)
		g.mu.Unlock()
		// Checked after saying so: a move before this is seen here, one
		// after it sees waiting and closes moved.
		if ok() {
			return true
		}
		select {
		case <-moved:
		case <-ctx.Done():
			return false
		}
	}
}

// kick wakes the goroutines waiting at the gate.
func (g *gate) kick() {
	if !g.waiting.Load() {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.moved != nil {
		close(g.moved)
		g.moved = nil
	}
	g.waiting.Store(false)
}
