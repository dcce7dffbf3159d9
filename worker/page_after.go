package worker

import (
	"context"
	"time"
)

// A next page scanned ahead is often all scanned before it is asked for:
// a client that turns pages around through another process (the go-sdk
// client, the supervisor) takes about as long as two cores take to scan a
// 4 MiB page. The cores would then wait. So once every file of a next page
// is scanned before its request, the page after it is started too, from
// where the next page will end were it to take every outcome as scanned
// (predictEnd: no file to scan again, every match fitting). When the next
// page has answered, it keeps that page after as its own next page only if
// it did end exactly there, over the same inventory with the same limit;
// it then hands it the cursor it hands out, and the page after is taken
// over as any next page is (next_page.go), with the same checks when it
// is. Otherwise it is dropped, as it is with the next page, or when no
// page keeps it within nextPageHold. One page after is kept at a time; a
// page after does not start another before it is kept.

// nextScanned is called once a's goroutines have all stopped, and when
// startNextPage keeps p with a all scanned; a is p's scan. If p is still
// waiting to be asked for and is all scanned, the page after it is
// started.
func (r *Root) nextScanned(p *nextPage, a *scanAhead) {
	if a.wasAsked() || !a.allReady() {
		return
	}
	end, ok := a.predictEnd()
	if !ok || end.File >= len(p.inv.files) {
		return
	}
	n := &r.next
	// Its last goroutine and the page that keeps it may both get here.
	if !n.waiting(p) || !p.afterStarted.CompareAndSwap(false, true) {
		return
	}
	q := &nextPage{inv: p.inv, limit: p.limit, m: p.m, start: end, hold: p.hold, workers: p.workers}
	q.guards = &pageGuards{sg: r.dir.NewScanGuard()}
	s := &search{limit: p.limit, m: p.m}
	q.ahead = r.newAhead(context.Background(), s, p.inv.files, end.File, end.position(), q.guards, q.workers, func(b *scanAhead) { r.nextScanned(q, b) })
	if q.ahead == nil {
		q.guards.close()
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.p != p || n.closed {
		q.drop()
		return
	}
	n.dropAfter()
	n.after = q
	q.timer = time.AfterFunc(q.hold, func() { n.expire(q) })
}

// waiting reports whether p is the next page kept, not yet asked for.
func (n *nextPages) waiting(p *nextPage) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.p == p && !n.closed
}

// takeAfter returns the page after kept, now the caller's, if it starts at
// pos over inv with limit; one that does not is dropped.
func (n *nextPages) takeAfter(inv *inventory, limit int, pos textCursor) *nextPage {
	n.mu.Lock()
	defer n.mu.Unlock()
	q := n.after
	if q == nil {
		return nil
	}
	n.after = nil
	q.timer.Stop()
	kept := q.inv == inv && q.limit == limit && q.start.File == pos.File && q.start.position() == pos.position()
	if nextPageAfter != nil {
		nextPageAfter(kept)
	}
	if !kept {
		q.drop()
		return nil
	}
	return q
}

// nextPageAfter, when set (tests), is told whether each page after kept
// was taken as a next page.
var nextPageAfter func(kept bool)

// dropAfter drops the page after kept, if any. n.mu is held.
func (n *nextPages) dropAfter() {
	if q := n.after; q != nil {
		n.after = nil
		q.timer.Stop()
		q.drop()
	}
}

// allReady reports whether every file of a is scanned.
func (a *scanAhead) allReady() bool {
	for i := range a.slots {
		if !a.slots[i].ready.Load() {
			return false
		}
	}
	return true
}

// predictEnd returns where the page a scans would end were it to take every
// outcome as scanned ahead, as searchText takes them: false when it would
// not take one as it is (scanned with another budget, to be scanned again,
// an error, a match that does not fit) or would reach a file not planned.
// Every file of a is scanned.
func (a *scanAhead) predictEnd() (textCursor, bool) {
	pos := textCursor{File: a.first}
	pos.moveTo(a.pos)
	fit := newFitter(a.r.lim.MaxResultBytes)
	budget := a.r.lim.MaxScanBytes
	for pos.File < len(a.files) && budget >= a.maxTermLen {
		if !a.has(pos.File) {
			return pos, false
		}
		res := &a.slots[pos.File-a.first].res
		if !a.takesAsIs(pos.File, res, budget, fit) {
			return pos, false
		}
		for _, it := range res.items {
			fit.add(it.b, it.hashed)
		}
		budget -= res.scanned
		pos.past(res)
	}
	return pos, true
}
