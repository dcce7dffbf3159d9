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
	scope, err := r.textScopeOf(s, resumed)
	if err != nil {
		return nil, err
	}
	p := r.startTextPage(ctx, s, scope, a.Cursor)
	defer p.end()
	if err := p.scan(ctx); err != nil {
		return nil, err
	}
	return p.finish()
}

// textScope is what a text-search page works through: the scope's files in
// path order, the state a cursor binds, the kept inventory they came from
// (nil for a single file), and where the page starts.
type textScope struct {
	files   []scopedFile
	state   string
	inv     *inventory
	pos     textCursor
	resumed bool // the page continues from a cursor
}

// textScopeOf is s's scope as a page resumed from resumed (nil: the first
// page) finds it. Every page binds the state of the whole scope. An
// inventory's state is a digest of its files computed when it was walked;
// by default that is a function of the paths and identities alone, so a
// kept inventory's is reused instead of hashed again on every page.
// Deterministic cursors bind contents, whose digests are looked up (or
// hashed again) each page.
func (r *Root) textScopeOf(s *search, resumed *textCursor) (*textScope, error) {
	t := &textScope{resumed: resumed != nil}
	switch {
	case s.file != nil:
		t.files = []scopedFile{*s.file}
	case s.d != nil:
		inv, err := r.scopeInventory(s, resumed != nil)
		if err != nil {
			return nil, err
		}
		t.files, t.inv = inv.files, inv
		if !r.Deterministic() {
			t.state = inv.state
		}
	}
	if t.state == "" {
		var err error
		if t.state, err = r.scopeState(t.files); err != nil {
			return nil, err
		}
	}
	if resumed == nil {
		return t, nil
	}
	if resumed.State != t.state {
		return nil, toolErrorf("%v", cursor.ErrChanged)
	}
	if !resumed.within(t.files) {
		return nil, toolErrorf("%v", cursor.ErrPosition)
	}
	t.pos = *resumed
	return t, nil
}

// within reports whether t names a place in files: a file of them (or
// their end) and an offset inside it, after the start of its line.
func (t *textCursor) within(files []scopedFile) bool {
	if t.File < 0 || t.File > len(files) || t.Offset < 0 || t.Line < 0 || t.LineStart < 0 || t.LineStart > t.Offset {
		return false
	}
	return t.File == len(files) || t.Offset <= files[t.File].id.Size
}

// textPage is one search_text page under way: its items so far, its
// scanner, and the files scanned ahead for it (taken over from the page
// before, or started for it).
type textPage struct {
	r        *Root
	s        *search
	scope    *textScope
	fit      *fitter
	sc       *textscan.Scanner
	ahead    *scanAhead // nil: the page scans each file itself
	guards   *pageGuards
	handedOn bool // ahead and guards went on to the next page
}

// startTextPage starts the page at scope.pos: it takes over the scan the
// page before handed on for the cursor arg, or starts scanning ahead.
func (r *Root) startTextPage(ctx context.Context, s *search, scope *textScope, arg json.RawMessage) *textPage {
	p := &textPage{r: r, s: s, scope: scope, fit: newFitter(r.lim.MaxResultBytes), sc: textscan.NewScanner(s.m)}
	p.sc.SetContext(ctx)
	if scope.resumed {
		tok, _, _ := cursorArg(arg)
		p.ahead, p.guards = r.takeNextPage(ctx, tok, scope.inv, s.limit)
	}
	if p.ahead == nil {
		p.guards = &pageGuards{sg: r.dir.NewScanGuard()}
		p.ahead = r.startAhead(ctx, s, scope.files, scope.pos.File, scope.pos.position(), p.guards)
	}
	return p
}

// end stops what the page scans ahead (unless it went on to the next
// page) before its guards close, and releases its scanner.
func (p *textPage) end() {
	if !p.handedOn {
		p.ahead.stop()
		p.guards.close()
	}
	p.sc.Release()
}

// scan adds the matches of the files from the page's position on, until
// its byte budget is spent, a match does not fit, or the scope ends.
func (p *textPage) scan(ctx context.Context) error {
	budget := p.r.lim.MaxScanBytes
	maxTermLen := int64(p.s.m.MaxTermLen())
	pos := &p.scope.pos
	for pos.File < len(p.scope.files) && budget >= maxTermLen {
		if err := ctx.Err(); err != nil {
			return err
		}
		res := p.scanNext(budget)
		if err := p.failure(res); err != nil {
			return err
		}
		budget -= res.scanned
		if res.stopped && len(p.fit.items) == 0 {
			return toolErrorf("one result item exceeds the result ceiling")
		}
		pos.past(res)
		if res.stopped {
			break // the match that did not fit starts the next page
		}
	}
	return nil
}

// scanNext is the outcome of the file at the page's position with budget
// left, its matches added to the page: the one scanned ahead where the
// page takes it as it is, else the file scanned here, stopping at the
// first match that does not fit.
func (p *textPage) scanNext(budget int64) *fileScan {
	pos := p.scope.pos
	sf := p.scope.files[pos.File]
	here := func() *fileScan {
		res := p.r.scanFile(p.sc, p.guards, sf, pos.position(), budget, func(mt textscan.Match) bool {
			if len(p.fit.items) >= p.s.limit {
				return false
			}
			it := textMatchOf(sf.path, mt)
			return p.fit.add(it.b, it.hashed)
		})
		return &res
	}
	res := p.ahead.takeAt(p.sc, pos, budget)
	switch {
	case res == nil:
		return here()
	case res.pending.Check():
		return &fileScan{err: errChangedWhileReading}
	case res.again || res.err == nil && !p.ahead.takesAsIs(res, p.fit):
		// Written while it was read ahead, or its matches do not all
		// fit: scanned again here, as the page would have.
		p.ahead.again++
		return here()
	case res.err == nil:
		for _, it := range res.items {
			p.fit.add(it.b, it.hashed)
		}
		p.ahead.taken++
	}
	return res
}

// failure is the error that ends the page for the outcome res, or nil. A
// file that is not the one the scope's inventory holds means, under a
// cursor, that the state it binds moved; otherwise it changed during this
// call.
func (p *textPage) failure(res *fileScan) error {
	if !errors.Is(res.err, errMoved) {
		return res.err
	}
	if p.scope.resumed {
		return toolErrorf("%v", cursor.ErrChanged)
	}
	return errChangedWhileReading
}

// finish renders the page, with a cursor where the scope goes on; the
// scan ahead goes on to the page after that cursor, or one starts for it.
func (p *textPage) finish() (*pageResult, error) {
	pos := p.scope.pos
	if pos.File >= len(p.scope.files) {
		return &pageResult{fitter: p.fit}, nil
	}
	pos.State = p.scope.state
	tok, err := p.r.codec.Encode(p.s.cur, pos)
	if err != nil {
		return nil, err
	}
	if p.handedOn = p.r.carryNextPage(p.s, p.scope.inv, tok, pos, p.ahead, p.guards); !p.handedOn {
		p.r.startNextPage(p.s, p.scope.inv, tok, pos)
	}
	return &pageResult{fitter: p.fit, next: &tok}, nil
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
	return scanOpened(sc, guards, fileJob{sf: sf, op: confine.Opened{R: f, ID: id, Err: err}, from: pos, budget: budget}, emit)
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
	sf     scopedFile
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
	if err != nil || id != job.sf.id {
		if f != nil {
			job.closer.Close(f)
		}
		return fileScan{err: errMoved}
	}
	if job.held {
		defer func() { res.held = f }()
	} else {
		defer job.closer.Close(f)
	}
	guard := guards.guard(f, job.sf.path)
	defer guard.Close()
	if job.from.Offset == 0 {
		bin, err := sc.IsBinary(f, id.Size, job.budget)
		if err != nil {
			return fileScan{err: readFailure(f, id, job.sf.path)}
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
		return fileScan{err: readFailure(f, id, job.sf.path)}
	}
	var pending *confine.Guard
	if job.closer != nil && guard.Shared() {
		guard.Settle()
		pending = guard
	} else if guard.Changed() {
		return fileScan{err: errChangedWhileReading}
	}
	if !job.held {
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
