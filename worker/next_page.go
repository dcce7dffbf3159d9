package worker

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsmcp/fsmcp/worker/textscan"
)

// A search_text page that hands out a cursor starts scanning the next
// page's files before that page is asked for: while its answer travels to
// the client and the next request comes back, the page's files are opened,
// checked against the inventory, guarded and scanned ahead, as the next
// page itself would scan them (its plan is exact: the same inventory, from
// the cursor's position, with the page's whole budget).
//
// The next page takes that work over only when it continues exactly there:
// its cursor is the very token the page handed out (so the same scope and
// position), its scope's inventory is the same kept one (nothing in scope
// changed since, as far as its watches tell: otherwise the page walks
// again and its cursor fails), and it asks for the same limit. It then
// takes each outcome as it takes any scanned ahead: checking the file's
// guard, set before the file was read, at the moment it takes it, so a
// write to the file after its read refuses the page as "filesystem changed
// while reading" (a file changed since the cursor was handed out is an
// in-scope change, which fails a cursor anyway). Any other page, or none
// within nextPageHold, lets the work go: its scans stop, its files close
// and its watches go back.

// nextPageHold is how long the scan of a next page waits to be taken over
// (a variable for tests). Clients that follow cursors in a loop ask within
// a millisecond or two; the next page of a client that pauses longer (a
// model reading the page) is dropped, and that page scans as any other.
var nextPageHold = 500 * time.Millisecond

// nextPageDone, when set (tests), is told whether each page that found a
// next page scanned ahead took it over.
var nextPageDone func(taken bool)

// nextPage is the next page of one search, scanned ahead of its request.
type nextPage struct {
	token string     // the cursor the page before handed out
	inv   *inventory // the scope's kept inventory
	limit int
	m     *textscan.Matcher
	start textCursor // where it starts (State unset)
	// hold and workers are nextPageHold and aheadMaxWorkers when the
	// search's first next page started, for the pages after it.
	hold    time.Duration
	workers int
	ahead   *scanAhead
	guards  *pageGuards
	timer   *time.Timer
	// afterStarted: the page after this one was started (once at most).
	afterStarted atomic.Bool
}

// nextPages holds a Root's one next page scanned ahead: the last page of
// any search to hand out a cursor starts the one kept. after is the page
// after it, started when p was all scanned before it was asked for
// (page_after.go).
type nextPages struct {
	mu     sync.Mutex
	p      *nextPage
	after  *nextPage
	closed bool
}

// startNextPage scans the page after pos ahead of its request; tok is the cursor
// the page hands out for it. Only a scope whose inventory is kept
// qualifies: the next page can then tell that nothing changed.
func (r *Root) startNextPage(s *search, inv *inventory, tok string, pos textCursor) {
	n := &r.next
	after := n.takeAfter(inv, s.limit, pos)
	if !r.inv.isKept(s.dir, inv) {
		if after != nil {
			after.drop()
		}
		return
	}
	p := after
	if p == nil {
		p = &nextPage{inv: inv, limit: s.limit, m: s.m, start: pos, hold: nextPageHold, workers: aheadMaxWorkers}
		p.guards = &pageGuards{sg: r.dir.NewScanGuard()}
		p.ahead = r.newAhead(context.Background(), s, inv.files, pos.File, pos.position(), p.guards, p.workers, func(a *scanAhead) { r.nextScanned(p, a) })
		if p.ahead == nil {
			p.guards.close()
			return
		}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		p.drop()
		return
	}
	if n.p != nil {
		n.p.drop()
	}
	p.token = tok
	n.p = p
	p.timer = time.AfterFunc(p.hold, func() { n.expire(p) })
	if p.ahead.allReady() {
		// Its goroutines may have stopped before it was kept here (a page
		// after always has, or is about to): they found it not waiting.
		go r.nextScanned(p, p.ahead)
	}
}

// takeNextPage returns the next page scanned ahead for a page resumed from
// the cursor tok over inv with limit items, or nil (any other one kept is
// dropped). The page owns what it returns, and stops it once it ends; ctx
// ending (the call cancelled) stops its scans too.
func (r *Root) takeNextPage(ctx context.Context, tok string, inv *inventory, limit int) (*scanAhead, *pageGuards) {
	n := &r.next
	n.mu.Lock()
	p := n.p
	n.p = nil
	n.mu.Unlock()
	if p == nil {
		return nil, nil
	}
	p.timer.Stop()
	taken := p.token == tok && p.inv == inv && p.limit == limit
	if nextPageDone != nil {
		nextPageDone(taken)
	}
	if !taken {
		p.drop()
		n.mu.Lock()
		n.dropAfter() // it was p's
		n.mu.Unlock()
		return nil, nil
	}
	a := p.ahead
	stop := context.AfterFunc(ctx, a.cancel)
	a.unlink = func() { stop() }
	a.takeOver()
	return a, p.guards
}

// expire drops p if it is still waiting: the next page kept (and its
// page after with it), or the page after kept.
func (n *nextPages) expire(p *nextPage) {
	n.mu.Lock()
	defer n.mu.Unlock()
	switch p {
	case n.p:
		n.p = nil
		p.drop()
		n.dropAfter()
	case n.after:
		n.after = nil
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
	n.dropAfter()
}

// drop ends p's scans and gives its files and watches back.
func (p *nextPage) drop() {
	p.ahead.halt()
	p.guards.close()
}
