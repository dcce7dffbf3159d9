package worker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/fsmcp/fsmcp/internal/toolset"
	"github.com/fsmcp/fsmcp/worker/confine"
	"github.com/fsmcp/fsmcp/worker/cursor"
	"github.com/fsmcp/fsmcp/worker/textscan"
)

type textItem struct {
	Path string `json:"path"`
	Line int    `json:"line"`
	Text string `json:"text"`
}

// textCursor resumes a text search: the index of the file in scope, where
// the scan resumes in it (possibly inside a line), and the scope's state.
type textCursor struct {
	File      int    `json:"f"`
	Offset    int64  `json:"o"`
	Line      int    `json:"l"`
	LineStart int64  `json:"ls,omitempty"`
	Skip      bool   `json:"k,omitempty"`
	State     string `json:"s"`
}

func (t *textCursor) position() textscan.Position {
	return textscan.Position{Offset: t.Offset, Line: t.Line, LineStart: t.LineStart, Skip: t.Skip}
}

func (t *textCursor) moveTo(p textscan.Position) {
	t.Offset, t.Line, t.LineStart, t.Skip = p.Offset, p.Line, p.LineStart, p.Skip
}

// past moves t past a file's outcome res: to the next file's start when
// res read the file to its end, else to where res stopped.
func (t *textCursor) past(res *fileScan) {
	if res.done {
		*t = textCursor{File: t.File + 1}
	} else {
		t.moveTo(res.next)
	}
}

type scopedFile struct {
	path string
	id   confine.Identity
}

func (r *Root) searchText(ctx context.Context, a searchArgs) (*pageResult, error) {
	c, err := checkSearch(toolset.SearchText, a)
	if err != nil {
		return nil, err
	}
	var resumed *textCursor
	if err := r.resume(a.Cursor, c.cur, &resumed); err != nil {
		return nil, err
	}
	s, err := r.openSearch(ctx, c, true)
	if err != nil {
		return nil, err
	}
	defer s.close()

	// Every page binds the state of the whole scope. An inventory's state
	// is a digest of its files computed when it was walked; by default
	// that is a function of the paths and identities alone, so a kept
	// inventory's is reused instead of hashed again on every page.
	// Deterministic cursors bind contents, whose digests are looked up
	// (or hashed again) each page as before.
	var files []scopedFile
	var state string
	var inv *inventory
	switch {
	case s.file != nil:
		files = []scopedFile{*s.file}
	case s.d != nil:
		if inv, err = r.scopeInventory(s); err != nil {
			return nil, err
		}
		files = inv.files
		if !r.Deterministic() {
			state = inv.state
		}
	}
	if state == "" {
		if state, err = r.scopeState(files); err != nil {
			return nil, err
		}
	}
	var pos textCursor
	if resumed != nil {
		pos = *resumed
		if pos.State != state {
			return nil, toolErrorf("%v", cursor.ErrChanged)
		}
		if pos.File < 0 || pos.File > len(files) || pos.Offset < 0 || pos.Line < 0 || pos.LineStart < 0 || pos.LineStart > pos.Offset ||
			(pos.File < len(files) && pos.Offset > files[pos.File].id.Size) {
			return nil, toolErrorf("%v", cursor.ErrPosition)
		}
	}

	fit := newFitter(r.lim.MaxResultBytes)
	sc := textscan.NewScanner(s.m)
	sc.SetContext(ctx)
	defer sc.Release()
	var ahead *scanAhead
	var guards *pageGuards
	if resumed != nil {
		tok, _, _ := cursorArg(a.Cursor)
		ahead, guards = r.takeNextPage(ctx, tok, inv, s.limit)
	}
	if ahead == nil {
		guards = &pageGuards{sg: r.dir.NewScanGuard()}
		ahead = r.startAhead(ctx, s, files, pos.File, pos.position(), guards)
	}
	handedOn := false
	defer func() {
		if !handedOn {
			ahead.stop() // before the guards close
			guards.close()
		}
	}()
	budget := r.lim.MaxScanBytes
	maxTermLen := int64(s.m.MaxTermLen())
	for pos.File < len(files) && budget >= maxTermLen {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		sf := files[pos.File]
		emit := func(mt textscan.Match) bool {
			if len(fit.items) >= s.limit {
				return false
			}
			it := textMatchOf(sf.path, mt)
			return fit.add(it.b, it.hashed)
		}
		res := ahead.takeAt(sc, pos, budget)
		switch {
		case res == nil:
			scanned := r.scanFile(sc, guards, sf, pos.position(), budget, emit)
			res = &scanned
		case res.pending.Check():
			res = &fileScan{err: errChangedWhileReading}
		case res.again || res.err == nil && !ahead.takesAsIs(res, fit):
			// Written while it was read ahead, or its matches do not
			// all fit: scan it again here, as the page would have,
			// stopping at the first match that does not fit.
			again := r.scanFile(sc, guards, sf, pos.position(), budget, emit)
			res = &again
			ahead.again++
		case res.err == nil:
			for _, it := range res.items {
				fit.add(it.b, it.hashed)
			}
			ahead.taken++
		}
		if errors.Is(res.err, errMoved) {
			// The file is not the one the scope's inventory holds: under
			// a cursor, the state it binds moved; otherwise it changed
			// during this call.
			if resumed != nil {
				return nil, toolErrorf("%v", cursor.ErrChanged)
			}
			return nil, errChangedWhileReading
		}
		if res.err != nil {
			return nil, res.err
		}
		budget -= res.scanned
		if res.stopped && len(fit.items) == 0 {
			return nil, toolErrorf("one result item exceeds the result ceiling")
		}
		pos.past(res)
		if res.stopped {
			break // the match that did not fit starts the next page
		}
	}
	var nextTok *string
	if pos.File < len(files) {
		pos.State = state
		tok, err := r.codec.Encode(s.cur, pos)
		if err != nil {
			return nil, err
		}
		nextTok = &tok
		if handedOn = r.carryNextPage(s, inv, tok, pos, ahead, guards); !handedOn {
			r.startNextPage(s, inv, tok, pos)
		}
	}
	return &pageResult{fitter: fit, next: nextTok}, nil
}

// textMatchOf is the page item of a match in the file at path.
func textMatchOf(path string, mt textscan.Match) textMatch {
	b, _ := json.Marshal(textItem{Path: path, Line: mt.Line, Text: mt.Text})
	hashed := make([]byte, 0, len(path)+len(mt.Text)+24)
	hashed = append(hashed, path...)
	hashed = append(hashed, 0)
	hashed = strconv.AppendInt(hashed, int64(mt.Line), 10)
	hashed = append(hashed, 0)
	hashed = append(hashed, mt.Text...)
	hashed = append(hashed, '\n')
	return textMatch{b: b, hashed: hashed}
}

// scanFile scans one file from pos within budget, calling emit for each
// match; see fileScan. guards watches the file for writes while it is
// scanned.
func (r *Root) scanFile(sc *textscan.Scanner, guards *pageGuards, sf scopedFile, pos textscan.Position, budget int64, emit func(textscan.Match) bool) fileScan {
	f, id, err := r.dir.OpenReader(sf.path)
	return r.scanOpened(sc, guards, sf, confine.Opened{R: f, ID: id, Err: err}, nil, false, false, pos, budget, emit)
}

// scanOpened is scanFile with the file already opened (or not) as op
// tells. ahead is nil, or the opens of the page that scans this file
// ahead: the file is then closed through its closer, and a guard the page
// shares is only settled here, its check left in the outcome (pending)
// for the page to make when it takes it. With keep, the file is not
// closed but left in the outcome (held). With checkedWhenTaken (a next
// page's file read before the page is asked for, kept), its identity is
// not checked after the read: the page checks it on the kept descriptor
// when it takes the outcome (scanAhead.confirm), against the same
// inventory identity, and a change the check here would find is still
// there then.
func (r *Root) scanOpened(sc *textscan.Scanner, guards *pageGuards, sf scopedFile, op confine.Opened, ahead *pageOpens, keep, checkedWhenTaken bool, pos textscan.Position, budget int64, emit func(textscan.Match) bool) (res fileScan) {
	var closer *confine.Closer
	if ahead != nil {
		closer = ahead.closer
	}
	f, id, err := op.R, op.ID, op.Err
	if errors.Is(err, errPageEnded) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fileScan{err: err}
	}
	if errors.Is(err, confine.ErrPermission) {
		// A file this process may not open is skipped, as a binary one
		// is: not an error of the whole search.
		return fileScan{done: true}
	}
	if err != nil || id != sf.id {
		if f != nil {
			closer.Close(f)
		}
		return fileScan{err: errMoved}
	}
	if keep {
		defer func() { res.held = f }()
	} else {
		defer closer.Close(f)
	}
	guard := guards.guard(f, sf.path)
	defer guard.Close()
	if pos.Offset == 0 {
		bin, err := sc.IsBinary(f, id.Size, budget)
		if err != nil {
			return fileScan{err: readFailure(f, id, sf.path)}
		}
		if bin {
			return fileScan{done: true}
		}
	}
	next, scanned, done, stopped, err := sc.Scan(f, id.Size, pos, budget, emit)
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fileScan{err: err}
	}
	if err != nil {
		return fileScan{err: readFailure(f, id, sf.path)}
	}
	var pending *confine.Guard
	if ahead != nil && guard.Shared() {
		guard.Settle()
		pending = guard
	} else if guard.Changed() {
		return fileScan{err: errChangedWhileReading}
	}
	if !checkedWhenTaken {
		if err := changedSince(f, id); err != nil {
			return fileScan{err: err}
		}
	}
	return fileScan{next: next, scanned: scanned, done: done, stopped: stopped, pending: pending}
}

// readFailure is the error for a failed read of the open file f: a file
// changed (say, truncated) since it was opened reads short, and that is the
// changed-state error, not a read failure.
func readFailure(f identified, id confine.Identity, path string) error {
	if err := changedSince(f, id); err != nil {
		return err
	}
	return toolErrorf("cannot read %q", path)
}

// identified is an open file that can tell its identity now, as a
// *confine.Reader does.
type identified interface {
	Identity() (confine.Identity, error)
}

// errMoved is scanFile's report that the file at a path is no longer the
// one the scope's inventory found there.
var errMoved = errors.New("file moved since the inventory")

// errChangedWhileReading is the answer when a file changed while a call
// read or hashed it.
var errChangedWhileReading = toolErrorf("filesystem changed while reading")

// changedSince is errChangedWhileReading when the open file f no longer has
// the identity id it was opened with (or cannot be stat'ed), else nil.
// Checked after reading, it turns a concurrent change into a refusal
// instead of a torn answer.
func changedSince(f identified, id confine.Identity) error {
	if after, err := f.Identity(); err != nil || after != id {
		return errChangedWhileReading
	}
	return nil
}

// scopeState digests what a text-search cursor binds: every in-scope path
// with its physical identity by default, or with its size and content
// digest when cursors are deterministic.
func (r *Root) scopeState(files []scopedFile) (string, error) {
	h := sha256.New()
	var buf []byte
	b := &hashBudget{left: r.lim.MaxCursorHashBytes}
	if r.Deterministic() {
		// Refuse before hashing anything when the uncached bytes exceed
		// the budget, so a call that must fail wastes no hashing and
		// caches nothing: retrying it fails the same way.
		var need int64
		for _, sf := range files {
			if _, ok := r.digests.get(sf.id); !ok {
				need += sf.id.Size
			}
		}
		if need > b.left {
			return "", hashBudgetError(r.lim.MaxCursorHashBytes)
		}
	}
	for _, sf := range files {
		if !r.Deterministic() {
			buf = appendIdentity(append(buf[:0], sf.path...), sf.id)
			h.Write(buf)
			continue
		}
		d, ok := r.digests.get(sf.id)
		if !ok {
			f, id, err := r.dir.OpenReader(sf.path)
			if errors.Is(err, confine.ErrPermission) {
				// Skipped by the scan; bound as unreadable, so a
				// change of permission shows as a change.
				fmt.Fprintf(h, "%s\x00%d\x00unreadable\n", sf.path, sf.id.Size)
				continue
			}
			if err != nil {
				return "", errChangedWhileReading
			}
			if id != sf.id {
				f.Close()
				return "", errChangedWhileReading
			}
			d, err = r.digest(f, id, b)
			f.Close()
			if err != nil {
				return "", err
			}
		}
		fmt.Fprintf(h, "%s\x00%d\x00%s\n", sf.path, sf.id.Size, d)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
