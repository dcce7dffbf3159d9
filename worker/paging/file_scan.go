package paging

import (
	"context"
	"errors"

	"github.com/fsmcp/fsmcp/worker/confine"
	"github.com/fsmcp/fsmcp/worker/textscan"
	"github.com/fsmcp/fsmcp/worker/walk"
)

// fileScan is what scanning one file of a page came to. stopped reports
// that emit refused a match; next is then where that match is found again.
type fileScan struct {
	next          textscan.Position
	scanned       int64
	done, stopped bool
	err           error
	items         []Item // a file scanned ahead: its matches
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

// scanFile scans one file from pos within budget, calling emit for each
// match; see fileScan. guards watches the file for writes while it is
// scanned.
func (e *Engine) scanFile(sc *textscan.Scanner, guards *pageGuards, f walk.File, pos textscan.Position, budget int64, emit func(textscan.Match) bool) fileScan {
	r, id, err := e.dir.OpenReader(f.Path)
	return scanOpened(sc, guards, fileJob{f: f, op: confine.Opened{R: r, ID: id, Err: err}, from: pos, budget: budget}, emit)
}

// fileJob is one file to scan: the file as the scope's inventory holds it,
// its open (or the failure to open it), and from where with what budget.
//
// A file scanned ahead of its page has the closer of the page's opens: it
// is closed through it, and a guard the page shares is only settled, its
// check left in the outcome (pending) for the page to make when it takes
// it. A file held is one a run reads before its page is asked for: it is
// not closed but left in the outcome (held), and its identity is not
// checked after the read, because the page checks it on the kept
// descriptor when it takes the outcome (scanAhead.confirm), against the
// same inventory identity, and a change the check here would find is still
// there then.
type fileJob struct {
	f      walk.File
	op     confine.Opened
	from   textscan.Position
	budget int64
	closer *confine.Closer // scanned ahead; nil: scanned by its page
	held   bool
}

// scanOpened scans the file of job, calling emit for each match; see
// fileJob and fileScan.
func scanOpened(sc *textscan.Scanner, guards *pageGuards, job fileJob, emit func(textscan.Match) bool) (res fileScan) {
	f, id, err := job.op.R, job.op.ID, job.op.Err
	if errors.Is(err, errPageEnded) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fileScan{err: err}
	}
	if errors.Is(err, confine.ErrPermission) {
		// A file this process may not open is skipped, as a binary one
		// is: not an error of the whole search.
		return fileScan{done: true}
	}
	if err != nil || id != job.f.ID {
		if f != nil {
			job.closer.Close(f)
		}
		return fileScan{err: ErrMoved}
	}
	if job.held {
		defer func() { res.held = f }()
	} else {
		defer job.closer.Close(f)
	}
	guard := guards.guard(f, job.f.Path)
	defer guard.Close()
	if job.from.Offset == 0 {
		bin, err := sc.IsBinary(f, id.Size, job.budget)
		if err != nil {
			return fileScan{err: readFailure(f, id, job.f.Path)}
		}
		if bin {
			return fileScan{done: true}
		}
	}
	next, scanned, done, stopped, err := sc.Scan(f, id.Size, job.from, job.budget, emit)
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fileScan{err: err}
	}
	if err != nil {
		return fileScan{err: readFailure(f, id, job.f.Path)}
	}
	var pending *confine.Guard
	if job.closer != nil && guard.Shared() {
		guard.Settle()
		pending = guard
	} else if guard.Changed() {
		return fileScan{err: ErrChanged}
	}
	if !job.held {
		if err := changedSince(f, id); err != nil {
			return fileScan{err: err}
		}
	}
	return fileScan{next: next, scanned: scanned, done: done, stopped: stopped, pending: pending}
}

// readFailure is the error for a failed read of the open file f: a file
// changed (say, truncated) since it was opened reads short, and that is
// ErrChanged, not a read failure.
func readFailure(f *confine.Reader, id confine.Identity, path string) error {
	if err := changedSince(f, id); err != nil {
		return err
	}
	return &ReadError{Path: path}
}

// changedSince is ErrChanged when the open file f no longer has the
// identity id it was opened with (or cannot be stat'ed), else nil. Checked
// after reading, it turns a concurrent change into a refusal instead of a
// torn answer.
func changedSince(f *confine.Reader, id confine.Identity) error {
	if after, err := f.Identity(); err != nil || after != id {
		return ErrChanged
	}
	return nil
}
