package paging

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/fsmcp/fsmcp/internal/nbio"
	"github.com/fsmcp/fsmcp/worker/confine"
	"github.com/fsmcp/fsmcp/worker/procs"
	"github.com/fsmcp/fsmcp/worker/textscan"
	"github.com/fsmcp/fsmcp/worker/walk"
)

// A search page's files are opened, checked and scanned on more than one
// goroutine, while the page's answer is still put together in file order
// on the calling one, as if the files had been scanned one after the other.
//
// Which files a page reaches, and with what budget, depends on what the
// files before used of the page's byte budget (a binary or unreadable file
// uses none) and on whether their matches fit. So the files are planned as
// if each were read to its end (aheadBudgets): the first from where the
// page starts with the page's whole budget, then each next one with the
// budget that leaves, up to the file it ends in. The page reaches every
// planned file unless it stops before (its results full, an error, the
// caller gone). When the page comes to a file, it takes the outcome scanned
// ahead only if the page's budget there gives the same scan (the planned
// budget, or both cover the file whole) and all its matches fit on the
// page; otherwise it scans that file again itself, as it always did,
// stopping at the first match that does not fit. So the items, their
// order, the cursor and the bytes counted against the budget are those of
// a page that scans one file at a time.
//
// A file scanned ahead is opened, checked against the inventory, guarded,
// read and checked again by the goroutine that scans it, each step as
// scanFile takes them; the page sees its outcome, error included, only when
// it reaches the file. Outcomes past the point where a page ends are
// dropped; the page does not wait for them (see stop).

// scanAhead is one page's files being scanned ahead.
type scanAhead struct {
	e      *Engine
	files  []walk.File
	first  int               // files[first] is slots[0]
	pos    textscan.Position // where files[first] is scanned from
	slots  []aheadSlot
	opens  *pageOpens // the slots' files, opened a group at a time
	guards *pageGuards
	// item bounds: a file whose matches would take more than a page can
	// hold stops collecting them, and the page scans it again itself.
	limit, ceiling int
	maxTermLen     int64

	next    atomic.Int64 // the next slot to claim (0 is the page's own)
	taken   int          // outcomes the page took (Options.PageEnded)
	again   int          // files planned that the page scanned itself
	ctx     context.Context
	cancel  context.CancelFunc
	release func()
	// waiting is the slot the page's goroutine waits for (nil: none);
	// wake wakes it (see waitReady).
	waiting atomic.Pointer[aheadSlot]
	wake    chan struct{}
}

// aheadSlot is one file to scan ahead: with what budget, and, once ready
// is set, its outcome. (The first starts at scanAhead.pos, the others at
// their start.) A slot left (one the page scans itself instead) is
// scanned by no goroutine.
type aheadSlot struct {
	budget int64
	ready  atomic.Bool
	left   atomic.Bool
	res    fileScan
}

// pageGuards is a page's ScanGuard, safe for the goroutines of one page.
// Once the page has ended (close), a file still being scanned ahead for it
// gets no guard: its outcome is dropped anyway.
type pageGuards struct {
	mu     sync.Mutex
	sg     *confine.ScanGuard
	closed bool
}

func (g *pageGuards) guard(f *confine.Reader, rel string) *confine.Guard {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil
	}
	return g.sg.Guard(f, rel)
}

// close gives back the page's watches.
func (g *pageGuards) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
	g.sg.Close()
}

// startAhead starts scanning ahead the files of the page req asks for, the
// first of them from req.From with the page's budget, on up to GOMAXPROCS
// goroutines (raised for the page where procs.Allow lets it). It returns
// nil when only one goroutine would scan: the page then scans on its own.
func (e *Engine) startAhead(ctx context.Context, req Request, guards *pageGuards) *scanAhead {
	m, files, first, pos := req.Matcher, req.Files, req.From.File, req.From.At
	plan := aheadBudgets(files, first, pos, e.cfg.ScanBytes, m.MaxTermLen())
	n := len(plan)
	if n < 2 || e.opts.Workers < 2 {
		return nil
	}
	release := procs.Raise()
	maxProcs := min(runtime.GOMAXPROCS(0), e.opts.Workers)
	workers := min(maxProcs, n)
	if maxProcs < 2 || workers < 2 {
		release()
		return nil
	}
	a := &scanAhead{
		e: e, files: files, first: first, pos: pos, slots: make([]aheadSlot, n), guards: guards,
		limit: req.Limit, ceiling: int(e.cfg.ResultBytes), maxTermLen: int64(m.MaxTermLen()),
		release: release, wake: make(chan struct{}, 1),
	}
	a.ctx, a.cancel = context.WithCancel(ctx)
	a.opens = newPageOpens(a.ctx, e.dir, files[first:first+n], e.opts.GroupOpen)
	for i := range a.slots {
		a.slots[i].budget = plan[i]
	}
	a.next.Store(1) // the page scans its first file itself
	for range workers - 1 {
		go func() {
			sc := textscan.NewScanner(m)
			sc.SetContext(a.ctx)
			for a.work(sc) {
				nbio.Yield()
			}
			sc.Release()
		}()
	}
	return a
}

// work claims the next slot and scans its file with sc; false when every
// slot is claimed.
func (a *scanAhead) work(sc *textscan.Scanner) bool {
	for {
		k := a.next.Load()
		if k >= int64(len(a.slots)) {
			return false
		}
		if a.next.CompareAndSwap(k, k+1) {
			a.scan(sc, int(k))
			return true
		}
	}
}

// stop ends the scanning ahead: no file is taken up any more, and a scan
// under way ends at its next read (within 256 KiB). The page does not wait
// for it: a file the page did not reach may be one whose reads never
// return (a network share whose server went away), and the page must not
// wait for it any more than it did before scanning ahead.
func (a *scanAhead) stop() {
	if a == nil {
		return
	}
	a.cancel()
	a.opens.close()
	a.release()
	if f := a.e.opts.PageEnded; f != nil {
		f(a.taken, a.again)
	}
}

// has reports whether file i is scanned ahead.
func (a *scanAhead) has(i int) bool { return a != nil && i >= a.first && i < a.first+len(a.slots) }

// takeAt returns the outcome scanned ahead of the file the page at pos
// reads next with budget left, scanning it (or files after it) itself
// while it is not ready; nil when a has none that gives the page's scan of
// the file (see plans), which the page then scans itself.
func (a *scanAhead) takeAt(sc *textscan.Scanner, pos Position, budget int64) *fileScan {
	if a == nil {
		return nil
	}
	if !a.plans(pos, budget) {
		if a.has(pos.File) {
			a.leave(pos.File)
			a.again++ // planned, but not as the page reads it
		}
		return nil
	}
	return a.take(sc, pos.File)
}

// take returns the outcome of file i (plans), scanning files not yet
// claimed with sc while it is not ready. The page's first file is scanned
// here, so a page that ends in it waits for no other file. If the call
// ends first, the outcome is its context's error.
func (a *scanAhead) take(sc *textscan.Scanner, i int) *fileScan {
	s := &a.slots[i-a.first]
	if i == a.first {
		a.scan(sc, 0)
		return &s.res
	}
	for !s.ready.Load() {
		if !a.work(sc) {
			if !a.waitReady(s) {
				return &fileScan{err: a.ctx.Err()}
			}
			break
		}
	}
	return &s.res
}

// waitReady waits until slot s is scanned, and reports whether it was;
// false when the scan's context ended first (the call cancelled or past
// its deadline), in which case s must not be read. Only the page's
// goroutine waits (take), so one slot at most is waited for: its scanner,
// having set ready, wakes the waiter if it sees it waiting for that slot;
// the waiter checks ready again after saying what it waits for, so one of
// the two sees the other. A wake-up left over from an earlier slot only
// makes the loop look again.
func (a *scanAhead) waitReady(s *aheadSlot) bool {
	defer a.waiting.Store(nil)
	for !s.ready.Load() {
		a.waiting.Store(s)
		if s.ready.Load() {
			break
		}
		select {
		case <-a.wake:
		case <-a.ctx.Done():
			return s.ready.Load()
		}
	}
	return true
}

// markReady marks slot s scanned, waking the page's goroutine if it waits
// for it.
func (a *scanAhead) markReady(s *aheadSlot) {
	s.ready.Store(true)
	if a.waiting.Load() == s {
		select {
		case a.wake <- struct{}{}:
		default: // a wake-up is pending already
		}
	}
}

// scan scans slot k's file with sc and marks it ready; a slot left is not
// scanned, its file closed.
func (a *scanAhead) scan(sc *textscan.Scanner, k int) {
	s := &a.slots[k]
	op := a.opens.take(k)
	if s.left.Load() {
		if op.R != nil {
			a.opens.closer.Close(op.R)
		}
	} else {
		start := textscan.Position{}
		if k == 0 {
			start = a.pos
		}
		a.scanInto(sc, s, a.first+k, op, start)
	}
	a.markReady(s)
}

// scanInto scans file i, opened as op tells, from start with s's budget
// into s.
func (a *scanAhead) scanInto(sc *textscan.Scanner, s *aheadSlot, i int, op confine.Opened, start textscan.Position) {
	if err := a.ctx.Err(); err != nil {
		if op.R != nil {
			a.opens.closer.Close(op.R)
		}
		s.res = fileScan{err: err}
		return
	}
	f := a.files[i]
	var items []Item
	cost := 0
	job := fileJob{f: f, op: op, from: start, budget: s.budget, closer: a.opens.closer}
	s.res = scanOpened(sc, a.guards, job, func(mt textscan.Match) bool {
		it := a.e.cfg.Item(f.Path, mt)
		if cost += a.e.cfg.Cost(it.JSON); len(items) >= a.limit || cost > a.ceiling {
			return false // more than a page holds: the page scans it itself
		}
		items = append(items, it)
		return true
	})
	s.res.items = items
}

// leave marks file i's slot, if a has it, as one the page scans itself.
func (a *scanAhead) leave(i int) {
	if a.has(i) {
		a.slots[i-a.first].left.Store(true)
	}
}
