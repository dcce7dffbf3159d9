package paging

import (
	"context"
	"errors"
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

// scanAhead is one page's files being scanned ahead, or a run: the
// files of a next page and of the pages after it (next_page.go).
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
	// run: started before its page is asked for and handed on from page
	// to page (next_page.go). Its goroutines claim slot 0 too, but only
	// inside the gate (next_page_parts.go); head and tail are the boundary
	// files of the page it was last handed on to. unlink detaches it from
	// the context of the page that took it over.
	run        bool
	gate       gate
	asked      atomic.Bool  // the page the run was handed on to
	gen        atomic.Int64 // counts the pages that took the run over
	window     atomic.Int64 // in pages' budgets
	planned    []int64      // bytes of the files before each slot
	head, tail atomic.Pointer[part]
	unlink     func()
	// waiting is the slot the page's goroutine waits for (nil: none);
	// wake wakes it (see waitReady).
	waiting atomic.Pointer[aheadSlot]
	wake    chan struct{}
	// need is the furthest slot the page asked for has needed (see reach).
	need atomic.Int64
}

// aheadSlot is one file to scan ahead: with what budget, and, once ready
// is set, its outcome. (The first starts at scanAhead.pos, the others at
// their start.) A slot left (a file a run leaves to its pages, or one a
// page scans itself instead) is scanned by no goroutine. A run keeps each
// file it reads open (held) until its page takes the outcome (confirm).
type aheadSlot struct {
	budget int64
	ready  atomic.Bool
	left   atomic.Bool
	held   atomic.Pointer[confine.Reader]
	res    fileScan
	// kept: a run's file kept open once read (held until taken); gen:
	// the page asked for when it was read (see scanAhead.holds); openGen:
	// the page during whose call it was opened (-1: none).
	kept         bool
	gen, openGen int64
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
	return e.newAhead(ctx, req.Matcher, req.Limit, req.Files, req.From, guards, false)
}

// newAhead is startAhead for a page of limit items of m's matches in
// files from from, or with run the scan of a page not yet asked for and
// of the pages after it (next_page.go): as many goroutines as scan a page
// then scan its files from the first, the page's own joins them once the
// page is asked for, and one file is enough to start.
func (e *Engine) newAhead(ctx context.Context, m *textscan.Matcher, limit int, files []walk.File, from Position, guards *pageGuards, run bool) *scanAhead {
	first, pos := from.File, from.At
	var plan []int64
	if run {
		plan = runBudgets(files, first, pos, e.cfg.ScanBytes, m.MaxTermLen())
	} else {
		plan = aheadBudgets(files, first, pos, e.cfg.ScanBytes, m.MaxTermLen())
	}
	n := len(plan)
	if n < 2 && !run || n < 1 || e.opts.Workers < 2 {
		return nil
	}
	release := procs.Raise()
	maxProcs := min(runtime.GOMAXPROCS(0), e.opts.Workers)
	workers := min(maxProcs, n)
	if run {
		// The page's goroutine is busy answering, and then waits for the
		// next request: maxProcs goroutines scan meanwhile, and it joins
		// them once the page is asked for.
		workers++
	}
	if maxProcs < 2 || workers < 2 {
		release()
		return nil
	}
	a := &scanAhead{
		e: e, files: files, first: first, pos: pos, slots: make([]aheadSlot, n), guards: guards,
		limit: limit, ceiling: int(e.cfg.ResultBytes), maxTermLen: int64(m.MaxTermLen()),
		release: release, run: run, wake: make(chan struct{}, 1),
	}
	a.ctx, a.cancel = context.WithCancel(ctx)
	a.opens = newPageOpens(a.ctx, e.dir, files[first:first+n], e.opts.GroupOpen)
	for i := range a.slots {
		a.slots[i].budget = plan[i]
		if plan[i] < 0 {
			a.slots[i].left.Store(true)
		}
	}
	if run {
		a.startRun()
	} else {
		a.next.Store(1) // the page scans its first file itself
	}
	for range workers - 1 {
		go func() {
			sc := textscan.NewScanner(m)
			sc.SetContext(a.ctx)
			for a.mayClaim() {
				a.work(sc)
				nbio.Yield()
			}
			sc.Release()
		}()
	}
	return a
}

// mayClaim reports whether a slot (or a run's part) may be left to claim:
// false once every slot is claimed. A run whose next slot is past its gate
// waits until its page moves on; false if it is dropped meanwhile.
func (a *scanAhead) mayClaim() bool {
	ok := func() bool {
		k := a.next.Load()
		return k >= int64(len(a.slots)) || a.claimable(k) || a.partsWaiting()
	}
	if !ok() && !a.gate.wait(a.ctx, ok) {
		return false
	}
	return a.next.Load() < int64(len(a.slots)) || a.partsWaiting()
}

// work scans a run's part no one has claimed, else claims the next slot
// and scans its file with sc; false when every slot is claimed, or a run's
// next slot is past its gate.
func (a *scanAhead) work(sc *textscan.Scanner) bool {
	if a.run && a.scanParts(sc) {
		return true
	}
	for {
		k := a.next.Load()
		if k >= int64(len(a.slots)) || !a.claimable(k) {
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
	a.halt()
	a.report()
}

// report tells Options.PageEnded what the page that ends took, and starts
// the count again for a page a run is handed on to.
func (a *scanAhead) report() {
	if f := a.e.opts.PageEnded; f != nil {
		f(a.taken, a.again)
	}
	a.taken, a.again = 0, 0
}

// halt is stop without the report: a next page no page took. The files a
// run holds are closed (one still being read is closed by its scanner).
func (a *scanAhead) halt() {
	a.cancel()
	if a.unlink != nil {
		a.unlink()
	}
	a.opens.close()
	for k := range a.slots {
		a.closeHeld(&a.slots[k])
	}
	a.dropParts()
	a.release()
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
	if p := a.partAt(pos, budget); p != nil {
		a.leave(pos.File) // the slot scans the file whole: not this
		return a.takePart(sc, p)
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
// here unless a next page's goroutine took it up before, so a page that
// ends in it waits for no other file. If the call ends first, the outcome
// is its context's error.
func (a *scanAhead) take(sc *textscan.Scanner, i int) *fileScan {
	s := &a.slots[i-a.first]
	if i == a.first {
		if !a.run || a.next.CompareAndSwap(0, 1) {
			a.scan(sc, 0)
		} else if !a.waitReady(s) {
			return &fileScan{err: a.ctx.Err()}
		}
		return a.confirm(s, i)
	}
	a.reach(int64(i - a.first))
	for !s.ready.Load() {
		if !a.work(sc) {
			if !a.waitReady(s) {
				return &fileScan{err: a.ctx.Err()}
			}
			break
		}
	}
	return a.confirm(s, i)
}

// reach records that the page asked for needs slot k. A page can go far
// past the file its byte budget predicted it ends in (binary and
// unreadable files use none of the budget), so a run's gate is measured
// from the slot the page needs too: otherwise that slot is past the gate,
// no goroutine claims it, and the page waits for it forever.
func (a *scanAhead) reach(k int64) {
	if a.run && k > a.need.Load() {
		a.need.Store(k)
		a.gate.kick()
	}
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
// for it. A run's slot left meanwhile, or a run stopped, has its file
// closed.
func (a *scanAhead) markReady(s *aheadSlot) {
	s.ready.Store(true)
	if a.waiting.Load() == s {
		select {
		case a.wake <- struct{}{}:
		default: // a wake-up is pending already
		}
	}
	if a.run && (s.left.Load() || a.ctx.Err() != nil) {
		a.closeHeld(s)
	}
}

// confirm returns the outcome of slot s, file i's, once ready. A run's file
// read during the call of the page that takes it had the identity check
// after its read then, as any file; one read during another page's call,
// and not kept, is scanned again. A file kept open (read before its page
// was asked for) has its identity checked again now, on that descriptor,
// so a change since it was opened (even one no watch reports, such as a
// write through a hard link made after the walk) fails the page as a page
// that opened the file now would. That check stands in for the one after
// the read, which such a file does not get: it compares the same
// descriptor with the same inventory identity, later. Such an outcome
// without a descriptor (a file that could not be opened), or refused as
// written while it was read, is scanned again.
func (a *scanAhead) confirm(s *aheadSlot, i int) *fileScan {
	res := &s.res
	if !a.run {
		return res
	}
	if !s.kept {
		gen := a.gen.Load()
		if s.gen != gen || s.openGen != gen && errors.Is(res.err, ErrChanged) {
			// Read during another call; or opened before this one and
			// changed since (the page scanning it again tells whether
			// the cursor still holds).
			return &fileScan{again: true}
		}
		return res
	}
	f := s.held.Swap(nil)
	if f == nil {
		if res.err == nil {
			return &fileScan{again: true}
		}
		return res
	}
	id, err := f.Identity()
	a.opens.closer.Close(f)
	if err != nil || id != a.files[i].ID {
		return &fileScan{err: ErrMoved}
	}
	if errors.Is(res.err, ErrChanged) {
		// Written while read, and as the inventory has it now: the page
		// reads it as it is now.
		return &fileScan{again: true}
	}
	return res
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
		s.res = fileScan{again: true}
	} else {
		start := textscan.Position{}
		if k == 0 {
			start = a.pos
		}
		if a.run {
			s.kept, s.gen = a.holds(k)
			s.openGen = a.opens.openedIn(k)
		}
		a.scanInto(sc, s, a.first+k, op, start)
	}
	a.markReady(s)
}

// scanInto scans file i, opened as op tells, from start with s's budget
// into s. A run's file is kept open in s if s.kept (see confirm).
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
	if hook := a.e.opts.ReadAhead; a.run && hook != nil {
		hook(f.Path)
	}
	job := fileJob{f: f, op: op, from: start, budget: s.budget, closer: a.opens.closer, held: s.kept}
	s.res = scanOpened(sc, a.guards, job, func(mt textscan.Match) bool {
		it := a.e.cfg.Item(f.Path, mt)
		if cost += a.e.cfg.Cost(it.JSON); len(items) >= a.limit || cost > a.ceiling {
			return false // more than a page holds: the page scans it itself
		}
		items = append(items, it)
		return true
	})
	s.res.items = items
	if r := s.res.held; r != nil {
		s.res.held = nil
		s.held.Store(r)
	}
}

// leave marks file i's slot, if a has it, as one the page scans itself;
// a run closes the file now if it was scanned, or once it is.
func (a *scanAhead) leave(i int) {
	if a.has(i) {
		a.leaveSlot(&a.slots[i-a.first])
	}
}

// leaveSlot is leave for slot s (or a part's).
func (a *scanAhead) leaveSlot(s *aheadSlot) {
	if !s.left.Swap(true) && s.ready.Load() {
		a.closeHeld(s)
	}
}

// closeHeld closes the file a run holds for slot s, if any.
func (a *scanAhead) closeHeld(s *aheadSlot) {
	if f := s.held.Swap(nil); f != nil {
		a.opens.closer.Close(f)
	}
}
