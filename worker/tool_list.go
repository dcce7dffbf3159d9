package worker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"

	"github.com/fsmcp/fsmcp/internal/toolset"
	"github.com/fsmcp/fsmcp/worker/cursor"
	"github.com/fsmcp/fsmcp/worker/relpath"
	"github.com/fsmcp/fsmcp/worker/textscan"
	"github.com/fsmcp/fsmcp/worker/walk"
)

// Page sizes of the listing and search tools: a larger limit is clamped.
const (
	defaultLimit = 200
	maxLimit     = 200
)

type listArgs struct {
	Path   string          `json:"path"`
	Cursor json.RawMessage `json:"cursor"`
	Limit  json.RawMessage `json:"limit"`
}

type listItem struct {
	Name string `json:"name"`
	Kind string `json:"kind"`
	Path string `json:"path"`
}

// pageItem is one item of a complete result set: its JSON, and the bytes
// it adds to content_hash.
type pageItem struct {
	json, hashed []byte
}

// indexCursor is the position of a listing cursor: how many items were
// already returned, and the digest of the whole result set they came from.
type indexCursor struct {
	Next  int    `json:"n"`
	State string `json:"s"`
}

func (r *Root) listDirectory(ctx context.Context, a listArgs) (*pageResult, error) {
	limit, err := pageLimit(toolset.ListDirectory, a.Limit, defaultLimit, maxLimit, true)
	if err != nil {
		return nil, err
	}
	dir, err := relpath.Clean(a.Path)
	if err != nil {
		return nil, toolErrorf("%v", err)
	}
	scope := cursor.Scope{Tool: toolset.ListDirectory, Args: map[string]string{"path": dir}}
	var pos *indexCursor
	if err := r.resume(a.Cursor, scope, &pos); err != nil {
		return nil, err
	}
	w := r.tree.Walk(ctx)
	sc, err := w.OpenScope(dir, false)
	if err != nil {
		return nil, err
	}
	defer sc.Close()
	es, err := w.Served(sc)
	if err != nil {
		return nil, err
	}
	items := make([]listItem, 0, len(es))
	for _, e := range es {
		item := listItem{Name: e.Name, Kind: "file", Path: relpath.Join(dir, e.Name)}
		if e.Dir {
			item.Kind = "directory"
		}
		items = append(items, item)
	}
	slices.SortFunc(items, func(a, b listItem) int { return strings.Compare(a.Name, b.Name) })
	all := make([]pageItem, len(items))
	for i, it := range items {
		b, _ := json.Marshal(it)
		all[i] = pageItem{b, []byte(it.Kind + "\x00" + it.Path + "\n")}
	}
	return r.pageOf(scope, pos, all, limit)
}

// resume decodes a cursor argument into *pos (left nil when there is none):
// a cursor that is not a non-empty string, or not one this process issued,
// is not valid; one issued for another scope is refused as such.
func (r *Root) resume(arg json.RawMessage, scope cursor.Scope, pos any) error {
	tok, present, err := cursorArg(arg)
	if err != nil || !present {
		return err
	}
	if err := r.codec.Decode(tok, scope, pos); err != nil {
		return toolErrorf("%v", err)
	}
	return nil
}

type searchArgs struct {
	Query           json.RawMessage `json:"query"`
	AnyOf           json.RawMessage `json:"any_of"`
	CaseInsensitive json.RawMessage `json:"case_insensitive"`
	Path            string          `json:"path"`
	Cursor          json.RawMessage `json:"cursor"`
	Limit           json.RawMessage `json:"limit"`
}

type pathItem struct {
	Path string `json:"path"`
}

// search is what both search tools set up before walking: the page limit,
// the compiled terms, the opened scope and the cursor scope.
type search struct {
	limit int
	m     *textscan.Matcher
	w     *walk.Walk
	walk.Scope
	cur cursor.Scope
}

// searchCall is a search call's checked arguments.
type searchCall struct {
	limit int
	m     *textscan.Matcher
	dir   string
	cur   cursor.Scope
}

// checkSearch checks a search call's arguments, in the order of
// docs/reference.md, Arguments.
func checkSearch(tool string, a searchArgs) (*searchCall, error) {
	limit, err := pageLimit(tool, a.Limit, defaultLimit, maxLimit, true)
	if err != nil {
		return nil, err
	}
	terms, err := searchTerms(a.Query, a.AnyOf)
	if err != nil {
		return nil, err
	}
	var fold bool
	if a.CaseInsensitive != nil && json.Unmarshal(a.CaseInsensitive, &fold) != nil {
		return nil, toolErrorf("case_insensitive must be a boolean")
	}
	dir, err := relpath.Clean(a.Path)
	if err != nil {
		return nil, toolErrorf("%v", err)
	}
	m, err := textscan.NewMatcher(terms, fold)
	if err != nil {
		return nil, toolErrorf("%v", err)
	}
	return &searchCall{limit: limit, m: m, dir: dir, cur: cursor.Scope{Tool: tool, Args: map[string]any{
		"path": dir, "terms": terms, "case_insensitive": fold,
	}}}, nil
}

// openSearch opens a checked search's scope; the caller closes it.
func (r *Root) openSearch(ctx context.Context, c *searchCall, fileOK bool) (*search, error) {
	w := r.tree.Walk(ctx)
	sc, err := w.OpenScope(c.dir, fileOK)
	if err != nil {
		return nil, err
	}
	return &search{limit: c.limit, m: c.m, w: w, Scope: sc, cur: c.cur}, nil
}

func (r *Root) searchFiles(ctx context.Context, a searchArgs) (*pageResult, error) {
	c, err := checkSearch(toolset.SearchFiles, a)
	if err != nil {
		return nil, err
	}
	var pos *indexCursor
	if err := r.resume(a.Cursor, c.cur, &pos); err != nil {
		return nil, err
	}
	s, err := r.openSearch(ctx, c, false)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	var all []pageItem
	err = s.w.EachPath(s.Scope, func(path string) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if s.m.MatchString(path) {
			b, _ := json.Marshal(pathItem{Path: path})
			all = append(all, pageItem{b, []byte(path + "\n")})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return r.pageOf(s.cur, pos, all, s.limit)
}

// pageOf serves one page of a complete, ordered result set from pos (nil:
// the first page), binding the next cursor to a digest of the whole set.
func (r *Root) pageOf(scope cursor.Scope, pos *indexCursor, all []pageItem, limit int) (*pageResult, error) {
	h := sha256.New()
	for _, it := range all {
		h.Write(it.hashed)
	}
	state := hex.EncodeToString(h.Sum(nil))
	start := 0
	if pos != nil {
		if pos.State != state {
			return nil, toolErrorf("%v", cursor.ErrChanged)
		}
		if pos.Next < 0 || pos.Next > len(all) {
			return nil, toolErrorf("%v", cursor.ErrPosition)
		}
		start = pos.Next
	}
	f := newFitter(r.lim.MaxResultBytes)
	i := start
	for ; i < len(all) && i-start < limit; i++ {
		if !f.add(all[i].json, all[i].hashed) {
			break
		}
	}
	if i == start && i < len(all) {
		return nil, toolErrorf("one result item exceeds the result ceiling")
	}
	var next *string
	if i < len(all) {
		tok, err := r.codec.Encode(scope, indexCursor{Next: i, State: state})
		if err != nil {
			return nil, err
		}
		next = &tok
	}
	return &pageResult{fitter: f, next: next}, nil
}

// pageResult is a fitted page waiting to be rendered.
type pageResult struct {
	fitter *fitter
	next   *string
}

// maxTermBytes bounds one search term.
const maxTermBytes = 256

// searchTerms checks the query rules shared by both search tools: exactly
// one of query or any_of, at most 16 terms, each a non-empty line of at
// most 256 bytes.
func searchTerms(query, anyOf json.RawMessage) ([]string, error) {
	var terms []string
	switch {
	case query != nil && anyOf != nil:
		return nil, toolErrorf("pass either query or any_of, not both")
	case anyOf != nil:
		if json.Unmarshal(anyOf, &terms) != nil || len(terms) == 0 {
			return nil, toolErrorf("any_of must be a non-empty array of strings")
		}
		if len(terms) > textscan.MaxTerms {
			return nil, toolErrorf("any_of accepts at most %d terms", textscan.MaxTerms)
		}
	default:
		var q string
		if query == nil || json.Unmarshal(query, &q) != nil {
			return nil, toolErrorf("query must be a non-empty string")
		}
		terms = []string{q}
	}
	for _, t := range terms {
		switch {
		case t == "":
			return nil, toolErrorf("query must be a non-empty string")
		case len(t) > maxTermBytes || strings.ContainsAny(t, "\r\n"):
			return nil, toolErrorf("query must be one line of at most %d UTF-8 bytes", maxTermBytes)
		}
	}
	return terms, nil
}
