package paging

import (
	"context"

	"github.com/fsmcp/fsmcp/worker/textscan"
)

// Page is one page under way: where it has got, its scanner, and the files
// scanned ahead for it (taken over from the page before, or started for
// it).
type Page struct {
	e        *Engine
	ctx      context.Context
	req      Request
	pos      Position
	sc       *textscan.Scanner
	ahead    *scanAhead // nil: the page scans each file itself
	guards   *pageGuards
	handedOn bool // ahead and guards went on to the next page
}

// Fill adds to out the matches of the files from the page's position on,
// until its byte budget is spent, a match does not fit, or the scope ends.
// Its errors are the call's context's, ErrMoved, ErrChanged,
// ErrItemTooLarge and *ReadError.
func (p *Page) Fill(out Result) error {
	budget := p.e.cfg.ScanBytes
	maxTermLen := int64(p.req.Matcher.MaxTermLen())
	for p.pos.File < len(p.req.Files) && budget >= maxTermLen {
		if err := p.ctx.Err(); err != nil {
			return err
		}
		res := p.scanNext(out, budget)
		if res.err != nil {
			return res.err
		}
		budget -= res.scanned
		if res.stopped && out.Len() == 0 {
			return ErrItemTooLarge
		}
		p.pos.past(res)
		if res.stopped {
			break // the match that did not fit starts the next page
		}
	}
	return nil
}

// scanNext is the outcome of the file at the page's position with budget
// left, its matches added to out: the one scanned ahead where the page
// takes it as it is, else the file scanned here, stopping at the first
// match that does not fit.
func (p *Page) scanNext(out Result, budget int64) *fileScan {
	pos := p.pos
	f := p.req.Files[pos.File]
	here := func() *fileScan {
		res := p.e.scanFile(p.sc, p.guards, f, pos.At, budget, func(mt textscan.Match) bool {
			if out.Len() >= p.req.Limit {
				return false
			}
			return out.Add(p.e.cfg.Item(f.Path, mt))
		})
		return &res
	}
	res := p.ahead.takeAt(p.sc, pos, budget)
	switch {
	case res == nil:
		return here()
	case res.pending.Check():
		return &fileScan{err: ErrChanged}
	case res.again || res.err == nil && !p.ahead.takesAsIs(res, out):
		// Written while it was read ahead, or its matches do not all
		// fit: scanned again here, as the page would have.
		p.ahead.again++
		return here()
	case res.err == nil:
		for _, it := range res.items {
			out.Add(it)
		}
		p.ahead.taken++
	}
	return res
}

// Next is where the page after this one starts, once Fill has returned
// nil; false at the scope's end.
func (p *Page) Next() (Position, bool) { return p.pos, p.pos.File < len(p.req.Files) }

// HandOn hands the page's scan ahead on to the page after it, which
// token, the cursor the page hands out for Next, asks for; or starts one
// for it. Only a scope with a kept inventory (Request.Kept, current) gets
// one.
func (p *Page) HandOn(token string) {
	if p.handedOn = p.e.carryNextPage(p.req, token, p.pos, p.ahead, p.guards); !p.handedOn {
		p.e.startNextPage(p.req, token, p.pos)
	}
}

// End stops what the page scans ahead (unless it went on to the next
// page) before its guards close, and releases its scanner.
func (p *Page) End() {
	if !p.handedOn {
		p.ahead.stop()
		p.guards.close()
	}
	p.sc.Release()
}
