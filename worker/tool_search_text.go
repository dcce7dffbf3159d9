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
	"github.com/fsmcp/fsmcp/worker/paging"
	"github.com/fsmcp/fsmcp/worker/textscan"
	"github.com/fsmcp/fsmcp/worker/walk"
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

// place is where in the scope t resumes.
func (t *textCursor) place() paging.Position {
	return paging.Position{File: t.File, At: textscan.Position{Offset: t.Offset, Line: t.Line, LineStart: t.LineStart, Skip: t.Skip}}
}

// textCursorAt is the cursor of the page that starts at p in a scope
// whose state is state.
func textCursorAt(p paging.Position, state string) textCursor {
	return textCursor{File: p.File, Offset: p.At.Offset, Line: p.At.Line, LineStart: p.At.LineStart, Skip: p.At.Skip, State: state}
}

// searchText answers one search_text page: its scope's files from the
// cursor's place (or the first) through the paging engine, and a cursor
// where the scope goes on, to which the engine hands its scan ahead on.
func (r *Root) searchText(ctx context.Context, a searchArgs) (*pageResult, error) {
	res, err := r.searchTextPage(ctx, a)
	if errors.Is(err, errStaleInventory) {
		// Dropped: this time the scope is walked.
		res, err = r.searchTextPage(ctx, a)
	}
	if errors.Is(err, errStaleInventory) {
		err = errChangedWhileReading
	}
	return res, err
}

// errStaleInventory is a fresh search's page that found a file of the
// kept inventory it took changed, which no watch reported (see
// walk.Inventories); the inventory is dropped and the page made again.
var errStaleInventory = errors.New("a file of the kept inventory changed")

// searchTextPage is searchText's one attempt at the page.
func (r *Root) searchTextPage(ctx context.Context, a searchArgs) (*pageResult, error) {
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
	defer s.Close()
	scope, err := r.textScopeOf(s, resumed)
	if err != nil {
		return nil, err
	}
	req := paging.Request{Matcher: s.m, Limit: s.limit, Files: scope.files, Kept: scope.kept, From: scope.pos.place()}
	if resumed != nil {
		req.Token, _, _ = cursorArg(a.Cursor)
	}
	p := r.pages.Start(ctx, req)
	defer p.End()
	fit := newFitter(r.lim.MaxResultBytes)
	if err := p.Fill(fit); err != nil {
		if scope.taken != nil && errors.Is(err, paging.ErrMoved) {
			r.inv.Drop(s.Dir, scope.taken)
			if resumed == nil {
				return nil, errStaleInventory
			}
		}
		return nil, searchFailure(err, resumed != nil)
	}
	next, more := p.Next()
	if !more {
		return &pageResult{fitter: fit}, nil
	}
	tok, err := r.codec.Encode(s.cur, textCursorAt(next, scope.state))
	if err != nil {
		return nil, err
	}
	p.HandOn(tok)
	return &pageResult{fitter: fit, next: &tok}, nil
}

// searchFailure is the tool error for the paging engine's err. A file
// that is not the one the scope's inventory holds means, under a cursor,
// that the state it binds moved; otherwise it changed during this call.
func searchFailure(err error, resumed bool) error {
	var re *paging.ReadError
	switch {
	case errors.Is(err, paging.ErrMoved) && resumed:
		return toolErrorf("%v", cursor.ErrChanged)
	case errors.Is(err, paging.ErrMoved), errors.Is(err, paging.ErrChanged):
		return errChangedWhileReading
	case errors.Is(err, paging.ErrItemTooLarge):
		return toolErrorf("one result item exceeds the result ceiling")
	case errors.As(err, &re):
		return toolErrorf("cannot read %q", re.Path)
	}
	return err
}

// textScope is what a text-search page works through: the scope's files in
// path order, the state a cursor binds, the inventory they came from as
// the engine asks whether it is still kept (nil for a single file), and
// where the page starts.
type textScope struct {
	files []walk.File
	state string
	kept  paging.Kept
	pos   textCursor
	taken *walk.Inventory // the kept inventory taken without a walk, or nil
}

// keptScope is the inventory of the scope dir as the paging engine sees
// it: current while the root's inventories keep it for dir.
type keptScope struct {
	c   *walk.Inventories
	dir string
	inv *walk.Inventory
}

func (k keptScope) Current() bool { return k.c.Kept(k.dir, k.inv) }

// textScopeOf is s's scope as a page resumed from resumed (nil: the first
// page) finds it. Every page binds the state of the whole scope. An
// inventory's state is a digest of its files computed when it was walked;
// by default that is a function of the paths and identities alone, so a
// kept inventory's is reused instead of hashed again on every page.
// Deterministic cursors bind contents, whose digests are looked up (or
// hashed again) each page.
func (r *Root) textScopeOf(s *search, resumed *textCursor) (*textScope, error) {
	t := &textScope{}
	switch {
	case s.File != nil:
		t.files = []walk.File{*s.File}
	case s.D != nil:
		inv, kept, err := r.inv.Take(s.w, s.Scope, r.scopeState)
		if err != nil {
			return nil, err
		}
		t.files, t.kept = inv.Files, keptScope{c: r.inv, dir: s.Dir, inv: inv}
		if kept {
			t.taken = inv
		}
		if !r.Deterministic() {
			t.state = inv.State
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
func (t *textCursor) within(files []walk.File) bool {
	if t.File < 0 || t.File > len(files) || t.Offset < 0 || t.Line < 0 || t.LineStart < 0 || t.LineStart > t.Offset {
		return false
	}
	return t.File == len(files) || t.Offset <= files[t.File].ID.Size
}

// textMatchOf is the page item of a match in the file at path.
func textMatchOf(path string, mt textscan.Match) paging.Item {
	b, _ := json.Marshal(textItem{Path: path, Line: mt.Line, Text: mt.Text})
	hashed := make([]byte, 0, len(path)+len(mt.Text)+24)
	hashed = append(hashed, path...)
	hashed = append(hashed, 0)
	hashed = strconv.AppendInt(hashed, int64(mt.Line), 10)
	hashed = append(hashed, 0)
	hashed = append(hashed, mt.Text...)
	hashed = append(hashed, '\n')
	return paging.Item{JSON: b, Hashed: hashed}
}

// scopeState digests what a text-search cursor binds: every in-scope path
// with its physical identity by default, or with its size and content
// digest when cursors are deterministic.
func (r *Root) scopeState(files []walk.File) (string, error) {
	h := sha256.New()
	var buf []byte
	b := &hashBudget{left: r.lim.MaxCursorHashBytes}
	if r.Deterministic() {
		// Refuse before hashing anything when the uncached bytes exceed
		// the budget, so a call that must fail wastes no hashing and
		// caches nothing: retrying it fails the same way.
		var need int64
		for _, sf := range files {
			if _, ok := r.digests.get(sf.ID); !ok {
				need += sf.ID.Size
			}
		}
		if need > b.left {
			return "", hashBudgetError(r.lim.MaxCursorHashBytes)
		}
	}
	for _, sf := range files {
		if !r.Deterministic() {
			buf = appendIdentity(append(buf[:0], sf.Path...), sf.ID)
			h.Write(buf)
			continue
		}
		d, ok := r.digests.get(sf.ID)
		if !ok {
			f, id, err := r.dir.OpenReader(sf.Path)
			if errors.Is(err, confine.ErrPermission) {
				// Skipped by the scan; bound as unreadable, so a
				// change of permission shows as a change.
				fmt.Fprintf(h, "%s\x00%d\x00unreadable\n", sf.Path, sf.ID.Size)
				continue
			}
			if err != nil {
				return "", errChangedWhileReading
			}
			if id != sf.ID {
				f.Close()
				return "", errChangedWhileReading
			}
			d, err = r.digest(f, id, b)
			f.Close()
			if err != nil {
				return "", err
			}
		}
		fmt.Fprintf(h, "%s\x00%d\x00%s\n", sf.Path, sf.ID.Size, d)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
