// Package paging is the engine of search_text's pages: it scans a page's
// files on several goroutines, ahead of where the page has got, and
// answers every page exactly as a page that scans its files one after the
// other.
//
// A page is the matches of a scope's files (the path-ordered walk.Files a
// walk found, with their identities) from a Position on: each file is opened
// beneath the root, checked against its identity, guarded against writes
// while it is read, scanned, and checked again. The page ends when it has
// read the byte budget (Config.ScanBytes), when a match does not fit (the
// request's item limit, or the caller's Result under its ceiling; that
// match starts the next page), or at the scope's end. The caller gets the
// page's items added to its Result in file order, and the Position the
// next page starts at; the items, their order, that position and the bytes
// counted against the budget are those of a page that scans one file at a
// time, whatever was scanned ahead. A page's files are scanned when it is
// asked for, never before.
//
// Every wait in the engine (for a file scanned ahead, for a group of opens)
// ends when the call's context does: a page answers by
// its call's deadline, and a read that never returns (a network share whose
// server went away) holds only the goroutine in it, never the page.
package paging

import (
	"context"
	"errors"

	"github.com/fsmcp/fsmcp/worker/confine"
	"github.com/fsmcp/fsmcp/worker/textscan"
	"github.com/fsmcp/fsmcp/worker/walk"
)

// Position is a place in a scope: the index of a file in it (the scope's
// length at its end), and where in that file.
type Position struct {
	File int
	At   textscan.Position
}

// past moves p past a file's outcome res: to the next file's start when
// res read the file to its end, else to where res stopped.
func (p *Position) past(res *fileScan) {
	if res.done {
		*p = Position{File: p.File + 1}
	} else {
		p.At = res.next
	}
}

// Item is one match as a page adds it: its JSON, and the bytes the page's
// content hash counts for it.
type Item struct{ JSON, Hashed []byte }

// Result is the caller's page, which the engine fills.
type Result interface {
	// Add adds it if it fits under the result ceiling, and reports
	// whether it did.
	Add(it Item) bool
	// Len is the number of items added.
	Len() int
	// Room is what the items added from now on may cost (Config.Cost).
	Room() int
}

// Errors a page's Fill reports besides the call's context error.
var (
	// ErrMoved: a file is not the one the scope's inventory holds at
	// its path.
	ErrMoved = errors.New("file moved since the inventory")
	// ErrChanged: a file changed while the page read it.
	ErrChanged = errors.New("filesystem changed while reading")
	// ErrItemTooLarge: the page's first match does not fit in an empty
	// Result.
	ErrItemTooLarge = errors.New("one result item exceeds the result ceiling")
)

// ReadError is a failed read of the file at Path (beneath the root).
type ReadError struct{ Path string }

func (e *ReadError) Error() string { return "cannot read " + e.Path }

// Config is what every page of an engine shares.
type Config struct {
	// ScanBytes is a page's byte budget: the bytes of its files it reads
	// at most.
	ScanBytes int64
	// ResultBytes is the result ceiling: a file scanned ahead whose
	// items would cost more stops collecting them, and its page scans it
	// itself.
	ResultBytes int64
	// Item renders match m of the file at path; it is called on the
	// goroutines that scan ahead.
	Item func(path string, m textscan.Match) Item
	// Cost is what an item's JSON costs under the result ceiling, as
	// the caller's Result counts it.
	Cost func(json []byte) int
}

// Engine pages text searches of one root. Its methods are safe for
// concurrent use.
type Engine struct {
	dir  *confine.Root
	cfg  Config
	opts Options
}

// defaultWorkers is Options.Workers's default.
const defaultWorkers = 4

// Options set how an Engine works where its defaults do not suit (tests);
// the zero Options are the defaults. Each hook, if set, is told what the
// engine decided.
type Options struct {
	// Workers bounds the goroutines a page scans on, its own included (4
	// if 0, and at most GOMAXPROCS); with 1 no file is scanned ahead.
	Workers int
	// PageEnded hears, as each page that scanned ahead ends, how many
	// outcomes it took and how many planned files it scanned again
	// itself.
	PageEnded func(taken, again int)
	// GroupOpen hears each group of a page's opens begin, on the
	// goroutine that opens it.
	GroupOpen func(g int)
}

// New returns the engine of the root dir's pages.
func New(dir *confine.Root, cfg Config, opts Options) *Engine {
	if opts.Workers == 0 {
		opts.Workers = defaultWorkers
	}
	return &Engine{dir: dir, cfg: cfg, opts: opts}
}

// Request is one page asked for.
type Request struct {
	Matcher *textscan.Matcher
	Limit   int         // items the page holds at most
	Files   []walk.File // the scope, in path order
	From    Position
}

// Start begins the page req asks for, scanning its files ahead. The page
// ends when ctx does; the caller fills it (Fill) and ends it (End).
func (e *Engine) Start(ctx context.Context, req Request) *Page {
	p := &Page{e: e, ctx: ctx, req: req, pos: req.From, sc: textscan.NewScanner(req.Matcher)}
	p.sc.SetContext(ctx)
	p.guards = &pageGuards{sg: e.dir.NewScanGuard()}
	p.ahead = e.startAhead(ctx, req, p.guards)
	return p
}
