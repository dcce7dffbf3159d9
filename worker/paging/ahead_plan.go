package paging

import (
	"github.com/fsmcp/fsmcp/worker/textscan"
	"github.com/fsmcp/fsmcp/worker/walk"
)

// What a page plans to take from files scanned ahead, and when it takes an
// outcome as it is (see scan_ahead.go).

// aheadBudgets plans the files a page scans ahead from first: the budget
// each would be scanned with were every file before it read to its end
// (none binary, none unreadable). first is scanned from pos with the
// page's whole budget; each next file while that budget left is at least
// maxTermLen, up to and including the file it ends in. A file before
// which the page turns out to have another budget is scanned again by the
// page, unless both budgets cover it whole.
func aheadBudgets(files []walk.File, first int, pos textscan.Position, budget int64, maxTermLen int) []int64 {
	if first >= len(files) || budget < int64(maxTermLen) {
		return nil
	}
	// The first file is read to its end from where Scan starts reading.
	// (A prediction only: a page that finds another budget left scans the
	// file again.)
	from := pos.ReadsFrom(maxTermLen)
	left0 := budget - min(budget, max(0, files[first].ID.Size-from))
	// Each next file while the budget left is at least maxTermLen, up to
	// the file it ends in: counted first, so that the plan is made once.
	n, left := 1, left0
	for _, sf := range files[first+1:] {
		if left < int64(maxTermLen) {
			break
		}
		n++
		if left < sf.ID.Size {
			break // the file the budget ends in
		}
		left -= sf.ID.Size
	}
	plan := make([]int64, 1, n)
	plan[0], left = budget, left0
	for _, sf := range files[first+1 : first+n] {
		plan = append(plan, left)
		left -= sf.ID.Size
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
	size := a.files[i].ID.Size
	return i > a.first && s.budget >= size && budget >= size
}

// plans reports whether the page at pos with budget left takes file
// pos.File's outcome from its slot, were it scanned as planned: a slot a
// has, not left, scanned from where the page reads the file, with the same
// budget or, both covering the file whole, with one that gives the same
// scan.
func (a *scanAhead) plans(pos Position, budget int64) bool {
	if !a.has(pos.File) || a.slots[pos.File-a.first].left.Load() {
		return false
	}
	start := textscan.Position{}
	if pos.File == a.first {
		start = a.pos
	}
	if pos.At != start {
		return false
	}
	return a.fits(pos.File, budget)
}

// takesAsIs reports whether a page with out so far takes the outcome res
// of a file it plans as scanned ahead: no error, nothing to scan again,
// none of its matches refused and all of them fitting on the page. The
// page scans a file whose outcome it does not take so itself.
func (a *scanAhead) takesAsIs(res *fileScan, out Result) bool {
	return res.err == nil && !res.again && !res.stopped && fitsAll(out, a.limit, a.e.cfg.Cost, res.items)
}

// fitsAll reports whether items all fit on the page out with limit items
// at most, each costing cost, as adding them one by one would find.
func fitsAll(out Result, limit int, cost func([]byte) int, items []Item) bool {
	if out.Len()+len(items) > limit {
		return false
	}
	room := out.Room()
	for _, it := range items {
		if room -= cost(it.JSON); room < 0 {
			return false
		}
	}
	return true
}
