package worker

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/fsmcp/fsmcp/worker/confine"
	"github.com/fsmcp/fsmcp/worker/gopool"
	"github.com/fsmcp/fsmcp/worker/nbio"
	"github.com/fsmcp/fsmcp/worker/textscan"
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

// aheadMaxWorkers bounds the goroutines one page scans on, the calling one
// included (tests set 1: no scanning ahead).
var aheadMaxWorkers = 4

// aheadDone, when set (tests), is told at the end of each page that
// scanned ahead how many outcomes it took and how many files it scanned
// again itself.
var aheadDone func(taken, again int)

// aheadReadAsked, when set (tests), is called with the path of a next
// page's file opened before the page was asked for and about to be read
// after it.
var aheadReadAsked func(path string)

// scanAhead is one page's files being scanned ahead.
type scanAhead struct {
	r      *Root
	files  []scopedFile
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
	taken   int          // outcomes the page took (for aheadDone)
	again   int          // files the page scanned again
	ctx     context.Context
	cancel  context.CancelFunc
	release func()
	// asked is set for a next page, one started before it is asked for
	// (next_page.go): its goroutines claim slot 0 too, and claim no slot
	// from nextPageEarlyFiles on until asked is closed (when a page takes
	// it over). unlink then detaches it from that page's context.
	asked  chan struct{}
	unlink func()
	// scanned, for a next page, is called by the last of its goroutines
	// to stop (running counts them), once every slot is claimed or the
	// page is dropped.
	scanned func(*scanAhead)
	running atomic.Int32
	// waiting is the slot the page's goroutine waits for (-1: none);
	// wake wakes it (see waitReady).
	waiting atomic.Int64
	wake    chan struct{}
}

// isNextPage reports whether a was started before its page was asked for.
func (a *scanAhead) isNextPage() bool { return a.asked != nil }

// nextPageEarlyFiles bounds the files a next page scans before it is
// asked for, and so the descriptors it holds open meanwhile (see confirm).
const nextPageEarlyFiles = 4 * confine.BatchSize

// aheadSlot is one file to scan ahead: with what budget, and, once ready
// is set, its outcome. (The first starts at scanAhead.pos, the others at
// their start.)
type aheadSlot struct {
	budget int64
	ready  atomic.Bool
	res    fileScan
	// readAsked: a next page's file opened before the page was asked
	// for, and read and checked again after (see confirm).
	readAsked bool
}

// textMatch is one match as the page adds it: its JSON and the bytes the
// page's content_hash counts for it.
type textMatch struct{ b, hashed []byte }

// fileScan is what scanning one file of a page came to. stopped reports
// that emit refused a match; next is then where that match is found again.
type fileScan struct {
	next          textscan.Position
	scanned       int64
	done, stopped bool
	err           error
	items         []textMatch // a file scanned ahead: its matches
	// pending is the guard of a file scanned ahead, settled after the
	// read; the page checks it when it takes the outcome.
	pending *confine.Guard
	// held is the open file of an outcome a next page scanned before it
	// was asked for, which the page checks again when it takes it; again
	// asks the page to scan the file itself (such an outcome that cannot
	// be checked so).
	held  *confine.Reader
	again bool
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

// aheadBudgets plans the files a page scans ahead from first: the budget
// each would be scanned with were every file before it read to its end
// (none binary, none unreadable). first is scanned from pos with the
// page's whole budget; each next file while that budget left is at least
// maxTermLen, up to and including the file it ends in. A file before
// which the page turns out to have another budget is scanned again by the
// page, unless both budgets cover it whole.
func aheadBudgets(files []scopedFile, first int, pos textscan.Position, budget int64, maxTermLen int) []int64 {
	if first >= len(files) || budget < int64(maxTermLen) {
		return nil
	}
	// The first file is read to its end from where Scan starts reading.
	// (A prediction only: a page that finds another budget left scans the
	// file again.)
	from := pos.ReadsFrom(maxTermLen)
	left0 := budget - min(budget, max(0, files[first].id.Size-from))
	// Each next file while the budget left is at least maxTermLen, up to
	// the file it ends in: counted first, so that the plan is made once.
	n, left := 1, left0
	for _, sf := range files[first+1:] {
		if left < int64(maxTermLen) {
			break
		}
		n++
		if left < sf.id.Size {
			break // the file the budget ends in
		}
		left -= sf.id.Size
	}
	plan := make([]int64, 1, n)
	plan[0], left = budget, left0
	for _, sf := range files[first+1 : first+n] {
		plan = append(plan, left)
		left -= sf.id.Size
	}
	return plan
}

// fits reports whether file i's outcome scanned ahead is the one the page
// would get scanning it with budget: the same budget, or budgets that both
// cover the file whole.
func (a *scanAhead) fits(i int, budget int64) bool {
	s := &a.slots[i-a.first]
	if s.budget == budget {
		return true
	}
	size := a.files[i].id.Size
	return i > a.first && s.budget >= size && budget >= size
}

// startAhead starts scanning ahead the n files from first, the first of
// them from pos with the page's budget, on up to GOMAXPROCS goroutines
// (raised for the page where SetSearchProcs allows it). It returns nil
// when only one goroutine would scan: the page then scans on its own.
func (r *Root) startAhead(ctx context.Context, s *search, files []scopedFile, first int, pos textscan.Position, guards *pageGuards) *scanAhead {
	return r.newAhead(ctx, s, files, first, pos, guards, aheadMaxWorkers, nil)
}

// newAhead is startAhead, or with scanned the scan of a page not yet asked
// for (next_page.go): as many goroutines as scan a page then scan its
// files from the first, the page's own joins them once the page is asked
// for, one file is enough to start, and the last of them to stop calls
// scanned. maxWorkers is aheadMaxWorkers, read by the caller.
func (r *Root) newAhead(ctx context.Context, s *search, files []scopedFile, first int, pos textscan.Position, guards *pageGuards, maxWorkers int, scanned func(*scanAhead)) *scanAhead {
	nextPage := scanned != nil
	plan := aheadBudgets(files, first, pos, r.lim.MaxScanBytes, s.m.MaxTermLen())
	n := len(plan)
	if n < 2 && !nextPage || n < 1 || maxWorkers < 2 {
		return nil
	}
	release := raiseProcs()
	procs := min(runtime.GOMAXPROCS(0), maxWorkers)
	workers := min(procs, n)
	if nextPage {
		// The page's goroutine is busy answering, and then waits for the
		// next request: procs goroutines scan meanwhile, and it joins
		// them once the page is asked for.
		workers++
	}
	if procs < 2 || workers < 2 {
		release()
		return nil
	}
	a := &scanAhead{
		r: r, files: files, first: first, slots: make([]aheadSlot, n), guards: guards,
		limit: s.limit, ceiling: int(r.lim.MaxResultBytes), maxTermLen: int64(s.m.MaxTermLen()),
		release: release, scanned: scanned,
	}
	a.opens = newPageOpens(r, files[first:first+n])
	if nextPage {
		// The files it claims early, and the group opened ahead of them.
		a.opens.earlyGroups = nextPageEarlyFiles/confine.BatchSize + 1
	}
	a.ctx, a.cancel = context.WithCancel(ctx)
	a.waiting.Store(-1)
	a.wake = make(chan struct{}, 1)
	for i := range a.slots {
		a.slots[i].budget = plan[i]
	}
	a.pos = pos
	if nextPage {
		a.asked = make(chan struct{})
	} else {
		a.next.Store(1) // the page scans its first file itself
	}
	a.running.Store(int32(workers - 1))
	for range workers - 1 {
		gopool.Go(func() {
			sc := textscan.NewScanner(s.m)
			sc.SetContext(a.ctx)
			for a.mayClaim() {
				a.work(sc)
				nbio.Yield()
			}
			sc.Release()
			if a.running.Add(-1) == 0 && a.scanned != nil {
				a.scanned(a)
			}
		})
	}
	return a
}

// mayClaim reports whether a slot may be left to claim: false once every
// slot is claimed. A next page not yet asked for that has claimed
// nextPageEarlyFiles files first waits until it is asked for; false if it
// is dropped meanwhile.
func (a *scanAhead) mayClaim() bool {
	k := a.next.Load()
	if k >= int64(len(a.slots)) {
		return false
	}
	if !a.waitsAsked(k) {
		return true
	}
	select {
	case <-a.asked:
		return true
	case <-a.ctx.Done():
		return false
	}
}

// waitsAsked reports whether slot k is past those a next page claims
// before it is asked for, and it is not asked for yet.
func (a *scanAhead) waitsAsked(k int64) bool {
	return k >= nextPageEarlyFiles && a.isNextPage() && !a.wasAsked()
}

// wasAsked reports whether a next page has been asked for.
func (a *scanAhead) wasAsked() bool { return isClosed(a.asked) }

// takeOver hands a next page scanned ahead to the page that is asked for:
// files opened from now on are the page's own.
func (a *scanAhead) takeOver() {
	a.opens.takeOver()
	close(a.asked)
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
	if aheadDone != nil {
		aheadDone(a.taken, a.again)
	}
}

// halt is stop without the report: a next page no page took.
func (a *scanAhead) halt() {
	a.cancel()
	if a.unlink != nil {
		a.unlink()
	}
	a.opens.close()
	a.release()
}

// has reports whether file i is scanned ahead.
func (a *scanAhead) has(i int) bool { return a != nil && i >= a.first && i < a.first+len(a.slots) }

// take returns the outcome of file i (has(i)), scanning files not yet
// claimed with sc while it is not ready. The page's first file is scanned
// here unless a next page's goroutine took it up before, so a page that
// ends in it waits for no other file.
func (a *scanAhead) take(sc *textscan.Scanner, i int) *fileScan {
	s := &a.slots[i-a.first]
	if i == a.first {
		if !a.isNextPage() || a.next.CompareAndSwap(0, 1) {
			a.scan(sc, 0)
		} else {
			a.waitReady(0)
		}
		return a.confirm(i)
	}
	for !s.ready.Load() {
		if !a.work(sc) {
			a.waitReady(i - a.first)
			break
		}
	}
	return a.confirm(i)
}

// waitReady waits until slot k is scanned. Only the page's goroutine
// waits (take), so one slot at most is waited for: its scanner, having
// set ready, wakes the waiter if it sees it waiting for that slot; the
// waiter checks ready again after saying what it waits for, so one of the
// two sees the other. A wake-up left over from an earlier slot only makes
// the loop look again.
func (a *scanAhead) waitReady(k int) {
	s := &a.slots[k]
	for !s.ready.Load() {
		a.waiting.Store(int64(k))
		if s.ready.Load() {
			break
		}
		<-a.wake
	}
	a.waiting.Store(-1)
}

// markReady marks slot k scanned, waking the page's goroutine if it waits
// for it.
func (a *scanAhead) markReady(k int) {
	a.slots[k].ready.Store(true)
	if a.waiting.Load() == int64(k) {
		select {
		case a.wake <- struct{}{}:
		default: // a wake-up is pending already
		}
	}
}

// confirm returns file i's outcome once ready. A file a next page opened
// before it was asked for was checked against the inventory then, before
// this call: its identity is checked again now, on the descriptor it was
// read through, so a change since (even one no watch reports, such as a
// write through a hard link made after the walk) fails the page as a
// page that opened the file now would. A file read after the page was
// asked for had that check after its read, during this call, and needs no
// other. Such an outcome without a descriptor (a file that could not be
// opened), or refused as written while it was read, is scanned again.
func (a *scanAhead) confirm(i int) *fileScan {
	s := &a.slots[i-a.first]
	res := &s.res
	if !a.isNextPage() || !a.opens.isEarly(i-a.first) {
		return res
	}
	if !s.readAsked {
		f := a.opens.unhold(i - a.first)
		if f == nil {
			if res.err == nil {
				return &fileScan{again: true}
			}
			return res
		}
		id, err := f.Identity()
		a.opens.closer.Close(f)
		if err != nil || id != a.files[i].id {
			return &fileScan{err: errMoved}
		}
	}
	if errors.Is(res.err, errChangedWhileReading) {
		// Written while read, or since it was opened before this call
		// (the check after the read found it changed), and as the
		// inventory has it now: the page reads it as it is now.
		return &fileScan{again: true}
	}
	return res
}

// work claims the next slot and scans its file with sc; false when every
// slot is claimed, or a next page not yet asked for has claimed
// nextPageEarlyFiles.
func (a *scanAhead) work(sc *textscan.Scanner) bool {
	for {
		k := a.next.Load()
		if k >= int64(len(a.slots)) || a.waitsAsked(k) {
			return false
		}
		if a.next.CompareAndSwap(k, k+1) {
			a.scan(sc, int(k))
			return true
		}
	}
}

// startOf returns where slot k's file is scanned from.
func (a *scanAhead) startOf(k int) textscan.Position {
	if k == 0 {
		return a.pos
	}
	return textscan.Position{}
}

// scan scans slot k's file with sc and marks it ready.
func (a *scanAhead) scan(sc *textscan.Scanner, k int) {
	s := &a.slots[k]
	defer a.markReady(k)
	if err := a.ctx.Err(); err != nil {
		s.res.err = err
		return
	}
	sf := a.files[a.first+k]
	var items []textMatch
	cost := 0
	op := a.opens.take(k)
	keep := a.isNextPage() && a.opens.isEarly(k) // known once its group opened
	// Asked for before the read: its checks after it are this call's.
	asked := keep && a.wasAsked()
	if asked && aheadReadAsked != nil {
		aheadReadAsked(sf.path)
	}
	s.res = a.r.scanOpened(sc, a.guards, sf, op, a.opens, keep, keep && !asked, a.startOf(k), s.budget, func(mt textscan.Match) bool {
		it := textMatchOf(sf.path, mt)
		if cost += itemCost(it.b); len(items) >= a.limit || cost > a.ceiling {
			return false // more than a page holds: the page scans it itself
		}
		items = append(items, it)
		return true
	})
	s.res.items = items
	if f := s.res.held; f != nil {
		s.res.held = nil
		if asked {
			// Opened as the inventory has it (scanOpened holds no
			// other), read and checked after the page was asked for.
			a.opens.closer.Close(f)
			s.readAsked = true
			return
		}
		if !a.opens.hold(k, f) {
			a.opens.closer.Close(f)
			s.res = fileScan{err: errPageEnded}
		}
	}
}

// takesAsIs reports whether a page with budget left and fit so far takes
// file i's outcome res as scanned ahead: no error, nothing to scan again,
// scanned with the budget the page has (fits), none of its matches
// refused and all of them fitting on the page. searchText scans a file
// whose outcome it does not take so itself; predictEnd stops there.
func (a *scanAhead) takesAsIs(i int, res *fileScan, budget int64, fit *fitter) bool {
	return res.err == nil && !res.again && !res.stopped && a.fits(i, budget) && fitsAll(fit, a.limit, res.items)
}

// fitsAll reports whether items all fit on the page f holds with limit
// items at most, as adding them one by one would find.
func fitsAll(f *fitter, limit int, items []textMatch) bool {
	if len(f.items)+len(items) > limit {
		return false
	}
	used := f.used
	for _, it := range items {
		if used += itemCost(it.b); used > f.ceiling {
			return false
		}
	}
	return true
}
