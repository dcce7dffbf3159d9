package paging

import (
	"context"
	"sync"
	"time"

	"github.com/fsmcp/fsmcp/worker/textscan"
	"github.com/fsmcp/fsmcp/worker/walk"
)

// A page that hands out a cursor starts scanning the next
// page's files before that page is asked for: while its answer travels to
// the client and the next request comes back, the files are opened,
// checked against the inventory, guarded and scanned ahead, as the next
// page itself would scan them. That scan does not stop where the next page
// will end: it goes on through the files after it (runBudgets), so a
// search's files are scanned by the same goroutines from page to page, as
// one scan, with no pause at each page's end; each page takes the outcomes
// of its files from it in order and hands the scan on to the page after
// it with the cursor it hands out.
//
// A page takes that scan over only when it continues exactly there: its
// cursor is the very token the page before handed out (so the same scope
// and position), its scope's inventory is the same kept one (nothing in
// scope changed since, as far as its watches tell: otherwise the page walks
// again and its cursor fails), and it asks for the same limit. It then
// takes each outcome as it takes any scanned ahead (the same budget, the
// same start, every match fitting), checking the file's guard, set before
// the file was read, when it takes it. Any other page, or none within
// the hold (Options.Hold), lets the scan go: its goroutines stop, its files close
// and its watches go back.
//
// A file may be read before the page that takes its outcome is asked for:
// such a file stays open until its page takes the outcome and checks its
// identity again then, on that descriptor (scanAhead.confirm), so a
// change since, even one no watch reports (a write through a hard link
// made after the walk), fails the page as a page that opened the file then
// would. A window bounds how far ahead of its page the scan goes, and so
// the descriptors held (next_page_parts.go).

// nextPageEarlyFiles bounds the files the scan of a next page claims
// before the page is asked for, and so the descriptors it holds open
// meanwhile; the window (next_page_parts.go) grows from there.
const nextPageEarlyFiles = 64

// runMaxFiles bounds the files one scan of next pages plans; a page that
// ends less than a page's budget before its last starts another.
const runMaxFiles = 4096

// nextPage is the next page of one search, scanned ahead of its request.
type nextPage struct {
	token  string // the cursor the page before handed out
	kept   Kept   // the scope's kept inventory
	limit  int
	ahead  *scanAhead
	guards *pageGuards
	timer  *time.Timer
}

// nextPages holds an Engine's one next page scanned ahead: the last page
// of any search to hand out a cursor keeps it.
type nextPages struct {
	mu     sync.Mutex
	p      *nextPage
	closed bool
}

// runBudgets plans the scan of a next page from pos in files[first]: that
// file with the page's whole budget, then each next file whole (with a
// budget that covers it), up to runMaxFiles files. A file in which some
// page is predicted to end (were every file before it read to its end) is
// left to the pages, which scan it themselves (-1): an outcome of the
// whole file would serve neither the page that ends in it nor the one that
// starts in it. A prediction that fails (a binary file, a page ended by
// its matches) costs a file scanned again, never a different page.
func runBudgets(files []walk.File, first int, pos textscan.Position, budget int64, maxTermLen int) []int64 {
	if first >= len(files) || budget < int64(maxTermLen) {
		return nil
	}
	n := min(len(files)-first, runMaxFiles)
	plan := make([]int64, n)
	plan[0] = budget
	left := budget - min(budget, max(0, files[first].ID.Size-pos.ReadsFrom(maxTermLen)))
	for k := 1; k < n; k++ {
		size := files[first+k].ID.Size
		if left < int64(maxTermLen) {
			left = budget // a page ends before this file; the next starts at it
		}
		if left >= size {
			plan[k] = max(size, budget)
			left -= size
			continue
		}
		plan[k] = -1
		rest := size - left
		for rest > budget {
			rest -= budget
		}
		left = budget - rest
	}
	return plan
}

// startNextPage scans the page of req's search after pos ahead of its
// request; tok is the cursor the page hands out for it. Only a scope
// whose inventory is kept qualifies: the next page can then tell that
// nothing changed.
func (e *Engine) startNextPage(req Request, tok string, pos Position) {
	if req.Kept == nil || !req.Kept.Current() {
		return
	}
	guards := &pageGuards{sg: e.dir.NewScanGuard()}
	a := e.newAhead(context.Background(), req.Matcher, req.Limit, req.Files, pos, guards, true)
	if a == nil {
		guards.close()
		return
	}
	e.keepNextPage(req, tok, a, guards, false)
}

// carryNextPage hands the scan a the page of req took over on to the page
// after it, at pos (the cursor tok), if a has planned that page's files;
// false if it has not (the caller then stops a, and may start another).
func (e *Engine) carryNextPage(req Request, tok string, pos Position, a *scanAhead, guards *pageGuards) bool {
	if !a.carriesOn(pos) || req.Kept == nil || !req.Kept.Current() {
		return false
	}
	if a.unlink != nil {
		a.unlink() // from the page's call
		a.unlink = nil
	}
	a.report()
	a.carried(pos)
	e.keepNextPage(req, tok, a, guards, true)
	return true
}

// keepNextPage keeps the scan a as the next page for tok, dropping any
// other.
func (e *Engine) keepNextPage(req Request, tok string, a *scanAhead, guards *pageGuards, carried bool) {
	n := &e.next
	p := &nextPage{token: tok, kept: req.Kept, limit: req.Limit, ahead: a, guards: guards}
	if f := e.opts.NextKept; f != nil {
		f(carried)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		p.drop()
		return
	}
	if n.p != nil {
		n.p.timer.Stop()
		n.p.drop()
	}
	n.p = p
	p.timer = time.AfterFunc(e.opts.Hold, func() { n.expire(p) })
}

// takeNextPage returns the next page scanned ahead for a page resumed from
// the cursor tok over kept with limit items, or nil (any other one kept is
// dropped). The page owns what it returns, and stops it or hands it on
// once it ends; ctx ending (the call cancelled) stops its scans too.
func (e *Engine) takeNextPage(ctx context.Context, tok string, kept Kept, limit int) (*scanAhead, *pageGuards) {
	n := &e.next
	n.mu.Lock()
	p := n.p
	n.p = nil
	n.mu.Unlock()
	if p == nil {
		return nil, nil
	}
	p.timer.Stop()
	taken := p.token == tok && p.kept == kept && p.limit == limit
	if f := e.opts.TakenOver; f != nil {
		f(taken)
	}
	if !taken {
		p.drop()
		return nil, nil
	}
	a := p.ahead
	stop := context.AfterFunc(ctx, a.cancel)
	a.unlink = func() { stop() }
	a.takenOver()
	return a, p.guards
}

// expire drops p if it is still the next page kept.
func (n *nextPages) expire(p *nextPage) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.p == p {
		n.p = nil
		p.drop()
	}
}

// close drops the page waiting, and starts none any more.
func (n *nextPages) close() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.closed = true
	if n.p != nil {
		n.p.timer.Stop()
		n.p.drop()
		n.p = nil
	}
}

// drop ends p's scans and gives its files and watches back.
func (p *nextPage) drop() {
	p.ahead.halt()
	p.guards.close()
}

// carriesOn reports whether the run a has planned the page at pos: it is
// not stopped, has pos.File, and its files from there cover a page's
// budget or reach the scope's end.
func (a *scanAhead) carriesOn(pos Position) bool {
	if a == nil || !a.run || a.ctx.Err() != nil || !a.has(pos.File) {
		return false
	}
	k := pos.File - a.first
	return a.first+len(a.slots) == len(a.files) || a.planned[len(a.slots)]-a.planned[k] >= a.e.cfg.ScanBytes
}
