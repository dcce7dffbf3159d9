package worker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/fsmcp/fsmcp/worker/confine"
	"github.com/fsmcp/fsmcp/worker/cursor"
	"github.com/fsmcp/fsmcp/worker/textscan"
	"github.com/fsmcp/fsmcp/worker/toolset"
)

type searchTextArgs = searchFilesArgs

type textItem struct {
	Path string `json:"path"`
	Line int    `json:"line"`
	Text string `json:"text"`
}

// textCursor resumes a text search: the index of the file in scope, the
// line-start offset and line number inside it, and the scope's state.
type textCursor struct {
	File   int    `json:"f"`
	Offset int64  `json:"o"`
	Line   int    `json:"l"`
	State  string `json:"s"`
}

type scopedFile struct {
	path string
	id   confine.Identity
}

func (r *Root) searchText(ctx context.Context, a searchTextArgs) (*pageResult, error) {
	s, err := r.openSearch(ctx, toolset.SearchText, a)
	if err != nil {
		return nil, err
	}
	defer s.d.Close()

	// Every page binds the state of the whole scope.
	inv, err := r.scopeInventory(ctx, s)
	if err != nil {
		return nil, err
	}
	files, state := inv.files, inv.state
	var pos textCursor
	if a.Cursor != "" {
		if err := r.codec.Decode(a.Cursor, s.scope, &pos); err != nil {
			return nil, toolErrorf("%v", err)
		}
		if pos.State != state {
			return nil, toolErrorf("%v", cursor.ErrChanged)
		}
		if pos.File < 0 || pos.File > len(files) || pos.Offset < 0 || pos.Line < 0 ||
			(pos.File < len(files) && pos.Offset > files[pos.File].id.Size) {
			return nil, toolErrorf("%v", cursor.ErrInvalid)
		}
	}

	fit := newFitter(r.lim.MaxResultBytes)
	sc := textscan.NewScanner(s.m)
	sc.SetContext(ctx)
	defer sc.Release()
	guards := r.dir.NewScanGuard()
	defer guards.Close()
	budget := r.lim.MaxScanBytes
	full := false
	for pos.File < len(files) && budget > 0 && !full {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		sf := files[pos.File]
		next, done, stopped, err := r.scanFile(sc, guards, sf, &pos, &budget, func(mt textscan.Match) bool {
			if len(fit.items) >= s.limit {
				return false
			}
			b, _ := json.Marshal(textItem{Path: sf.path, Line: mt.Line, Text: mt.Text})
			return fit.add(b)
		})
		if err != nil {
			return nil, err
		}
		if stopped {
			// The match that did not fit starts the next page.
			pos.Offset, pos.Line = next.Offset, next.Line
			full = true
			break
		}
		if done {
			pos = textCursor{File: pos.File + 1}
		} else {
			pos.Offset, pos.Line = next.Offset, next.Line
		}
	}
	var nextTok *string
	if pos.File < len(files) {
		pos.State = state
		tok, err := r.codec.Encode(s.scope, pos)
		if err != nil {
			return nil, err
		}
		nextTok = &tok
	}
	return &pageResult{fitter: fit, next: nextTok, hash: itemsHash(fit.items)}, nil
}

// scanFile scans one file from pos within the budget. stopped reports that
// emit refused a match; next is then that match's line.
// guards watches the file for writes while it is scanned.
func (r *Root) scanFile(sc *textscan.Scanner, guards *confine.ScanGuard, sf scopedFile, pos *textCursor, budget *int64, emit func(textscan.Match) bool) (next textscan.Position, done, stopped bool, err error) {
	f, id, err := r.dir.OpenReader(sf.path)
	if errors.Is(err, confine.ErrPermission) {
		// A file this process may not open is skipped, as a binary one
		// is: not an error of the whole search.
		return next, true, false, nil
	}
	if err != nil {
		return next, false, false, toolErrorf("%v", cursor.ErrChanged)
	}
	defer f.Close()
	if id != sf.id {
		return next, false, false, toolErrorf("%v", cursor.ErrChanged)
	}
	guard := guards.Guard(f, sf.path)
	defer guard.Close()
	if pos.Offset == 0 {
		bin, err := sc.IsBinary(f, id.Size)
		if err != nil {
			return next, false, false, readFailure(f, id, sf.path)
		}
		if bin {
			return next, true, false, nil
		}
	}
	var refused *textscan.Match
	next, scanned, done, err := sc.Scan(f, id.Size, textscan.Position{Offset: pos.Offset, Line: pos.Line}, *budget, func(mt textscan.Match) bool {
		if !emit(mt) {
			refused = &mt
			return false
		}
		return true
	})
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return next, false, false, err
	}
	if err != nil {
		return next, false, false, readFailure(f, id, sf.path)
	}
	*budget -= scanned
	if guard.Changed() {
		return next, false, false, errChangedReading()
	}
	if err := changedSince(f, id); err != nil {
		return next, false, false, err
	}
	if refused != nil {
		return textscan.Position{Offset: refused.Offset, Line: refused.Line}, false, true, nil
	}
	return next, done, false, nil
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

// errChangedReading is the error for a read that a write overlapped (seen
// by a confine.Guard): the bytes read may hold two versions of the file.
func errChangedReading() error { return toolErrorf("filesystem changed while reading") }

// identified is an open file that can tell its identity now:
// *confine.Reader, or an *os.File as osFile.
type identified interface {
	Identity() (confine.Identity, error)
}

// osFile is an *os.File that tells its identity.
type osFile struct{ *os.File }

func (f osFile) Identity() (confine.Identity, error) { return confine.Fstat(f.File) }

// changedSince is the changed-state error when the open file f no longer
// has the identity id it was opened with (or cannot be stat'ed), else nil.
// Checked after reading, it turns a concurrent change into a refusal
// instead of a torn answer.
func changedSince(f identified, id confine.Identity) error {
	if after, err := f.Identity(); err != nil || after != id {
		return toolErrorf("%v", cursor.ErrChanged)
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
			h.Write(appendIdentity(append(buf[:0], sf.path...), sf.id))
			continue
		}
		d, ok := r.digests.get(sf.id)
		if !ok {
			f, id, err := r.dir.OpenFile(sf.path)
			if errors.Is(err, confine.ErrPermission) {
				// Skipped by the scan; bound as unreadable, so a
				// change of permission shows as a change.
				fmt.Fprintf(h, "%s\x00%d\x00unreadable\n", sf.path, sf.id.Size)
				continue
			}
			if err != nil {
				return "", toolErrorf("%v", cursor.ErrChanged)
			}
			if id != sf.id {
				f.Close()
				return "", toolErrorf("%v", cursor.ErrChanged)
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
