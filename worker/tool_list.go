package worker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/fsmcp/fsmcp/worker/confine"
	"github.com/fsmcp/fsmcp/worker/cursor"
	"github.com/fsmcp/fsmcp/worker/relpath"
	"github.com/fsmcp/fsmcp/worker/textscan"
	"github.com/fsmcp/fsmcp/worker/toolset"
)

// Page sizes of the listing tools.
const (
	defaultLimit = 200
	maxLimit     = 1000
)

type listArgs struct {
	Path   string `json:"path"`
	Cursor string `json:"cursor"`
	Limit  *int   `json:"limit"`
}

type pathEntry struct {
	Path string `json:"path"`
	Type string `json:"type"`
}

// indexCursor is the body of a listing cursor: how many items were already
// returned, and the digest of the whole result set they came from.
type indexCursor struct {
	Next  int    `json:"n"`
	State string `json:"s"`
}

func pageLimit(l *int, def, max int) (int, error) {
	if l == nil {
		return def, nil
	}
	if *l < 1 || *l > max {
		return 0, toolErrorf("limit must be between 1 and %d", max)
	}
	return *l, nil
}

func (r *Root) listDirectory(ctx context.Context, a listArgs) (*pageResult, error) {
	limit, err := pageLimit(a.Limit, defaultLimit, maxLimit)
	if err != nil {
		return nil, err
	}
	w := r.newWalk(ctx)
	dir, d, err := w.openScope(a.Path)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	scope := cursor.Scope{Tool: toolset.ListDirectory, Args: map[string]string{"path": dir}}
	es, err := w.readDir(d, dir)
	if err != nil {
		return nil, err
	}
	var all [][]byte
	for _, e := range es {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		path := relpath.Join(dir, e.name)
		item := pathEntry{Path: path, Type: "file"}
		if e.kind == confine.KindDir {
			if ok, err := w.dirServed(d, path); err != nil {
				return nil, err
			} else if !ok {
				continue
			}
			item.Type = "directory"
		} else if ok, _, err := w.fileServed(d, path, e.name); err != nil {
			return nil, err
		} else if !ok {
			continue
		}
		b, _ := json.Marshal(item)
		all = append(all, b)
	}
	return r.pageOf(scope, a.Cursor, all, limit)
}

type searchFilesArgs struct {
	Query           string   `json:"query"`
	AnyOf           []string `json:"any_of"`
	CaseInsensitive bool     `json:"case_insensitive"`
	Path            string   `json:"path"`
	Cursor          string   `json:"cursor"`
	Limit           *int     `json:"limit"`
}

type pathItem struct {
	Path string `json:"path"`
}

// search is what both search tools set up before walking: the page limit,
// the compiled terms, the opened scope and the cursor scope.
type search struct {
	limit int
	m     *textscan.Matcher
	w     *walk
	dir   string
	d     *confine.Dir
	scope cursor.Scope
}

// openSearch checks a search call's arguments and opens its scope; the
// caller closes s.d.
func (r *Root) openSearch(ctx context.Context, tool string, a searchFilesArgs) (*search, error) {
	limit, err := pageLimit(a.Limit, defaultLimit, maxLimit)
	if err != nil {
		return nil, err
	}
	terms, err := searchTerms(a.Query, a.AnyOf)
	if err != nil {
		return nil, err
	}
	m, err := textscan.NewMatcher(terms, a.CaseInsensitive)
	if err != nil {
		return nil, toolErrorf("%v", err)
	}
	w := r.newWalk(ctx)
	dir, d, err := w.openScope(a.Path)
	if err != nil {
		return nil, err
	}
	return &search{limit: limit, m: m, w: w, dir: dir, d: d, scope: cursor.Scope{Tool: tool, Args: map[string]any{
		"path": dir, "terms": terms, "case_insensitive": a.CaseInsensitive,
	}}}, nil
}

func (r *Root) searchFiles(ctx context.Context, a searchFilesArgs) (*pageResult, error) {
	s, err := r.openSearch(ctx, toolset.SearchFiles, a)
	if err != nil {
		return nil, err
	}
	defer s.d.Close()
	var all [][]byte
	err = s.w.eachFile(s.d, s.dir, func(_ *confine.Dir, path, _ string, _ *confine.Identity) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if s.m.MatchString(path) {
			b, _ := json.Marshal(pathItem{Path: path})
			all = append(all, b)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return r.pageOf(s.scope, a.Cursor, all, s.limit)
}

// pageOf serves one page of a complete, ordered result set, binding the
// cursor to a digest of the whole set.
func (r *Root) pageOf(scope cursor.Scope, token string, all [][]byte, limit int) (*pageResult, error) {
	h := sha256.New()
	for _, b := range all {
		h.Write(b)
		h.Write([]byte{'\n'})
	}
	state := hex.EncodeToString(h.Sum(nil))
	start := 0
	if token != "" {
		var c indexCursor
		if err := r.codec.Decode(token, scope, &c); err != nil {
			return nil, toolErrorf("%v", err)
		}
		if c.State != state {
			return nil, toolErrorf("%v", cursor.ErrChanged)
		}
		if c.Next < 0 || c.Next > len(all) {
			return nil, toolErrorf("%v", cursor.ErrInvalid)
		}
		start = c.Next
	}
	f := newFitter(r.lim.MaxResultBytes)
	i := start
	for ; i < len(all) && i-start < limit; i++ {
		if !f.add(all[i]) {
			break
		}
	}
	var next *string
	if i < len(all) {
		tok, err := r.codec.Encode(scope, indexCursor{Next: i, State: state})
		if err != nil {
			return nil, err
		}
		next = &tok
	}
	return &pageResult{fitter: f, next: next, hash: itemsHash(f.items)}, nil
}

// pageResult is a fitted page waiting to be rendered.
type pageResult struct {
	fitter *fitter
	next   *string
	hash   string
}

// searchTerms checks the query rules shared by both search tools: exactly
// one of query or any_of, at most 16 terms, each non-empty, one line, and
// bounded.
func searchTerms(query string, anyOf []string) ([]string, error) {
	var terms []string
	switch {
	case query != "" && anyOf != nil:
		return nil, toolErrorf("pass either query or any_of, not both")
	case query != "":
		terms = []string{query}
	case anyOf != nil:
		if len(anyOf) == 0 {
			return nil, toolErrorf("any_of must hold at least one term")
		}
		if len(anyOf) > textscan.MaxTerms {
			return nil, toolErrorf("any_of holds %d terms; at most %d are allowed", len(anyOf), textscan.MaxTerms)
		}
		terms = anyOf
	default:
		return nil, toolErrorf("pass a non-empty query or an any_of list")
	}
	for _, t := range terms {
		switch {
		case t == "":
			return nil, toolErrorf("search terms must not be empty")
		case len(t) > maxTermBytes:
			return nil, toolErrorf("a search term is %d bytes; at most %d are allowed", len(t), maxTermBytes)
		case containsLineBreak(t):
			return nil, toolErrorf("a search term must be one line (no CR or LF)")
		}
	}
	return terms, nil
}

const maxTermBytes = 1024

func containsLineBreak(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' || s[i] == '\r' {
			return true
		}
	}
	return false
}
