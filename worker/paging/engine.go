// Package paging is the engine of search_text's pages: it scans a page's
// files on several goroutines, ahead of where the page has got, and the
// next pages' files while the client turns each page around, and answers
// every page exactly as a page that scans its files one after the other.
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
// time, whatever was scanned ahead.
//
// A page that hands out a cursor (HandOn) keeps scanning the pages after
// it, and the page asked for with that very cursor, over the same kept
// inventory (Kept) and with the same limit, takes the outcomes over; any
// other page, or none within the hold (500 ms), lets them go. A file read
// before its page was asked for is kept open and checked again when the
// page takes it.
//
// Every wait in the engine (for a file scanned ahead, for a group of opens,
// at a run's gate) ends when the call's context does: a page answers by
// its call's deadline, and a read that never returns (a network share whose
// server went away) holds only the goroutine in it, never the page.
package paging

import (
	"context"
	"errors"
	"time"

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

// Kept is the kept inventory a scope's files come from: only a scope
// that has one gets its next pages scanned ahead, and a page takes over
// the next page scanned ahead only if its Kept is equal (==) to the one
// that page was planned on.
type Kept interface {
	// Current reports whether the inventory is still the scope's, as far
	// as its keeper can tell. It must not wait for a walk.
	Current() bool
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
	next nextPages
}

// Default options.
const (
	defaultWorkers = 4
	defaultHold    = 500 * time.Millisecond
)

// Options set how an Engine works where its defaults do not suit (tests);
// the zero Options are the defaults. Each hook, if set, is told what the
// engine decided.
type Options struct {
	// Workers bounds the goroutines a page scans on, its own included (4
	// if 0, and at most GOMAXPROCS); with 1 no file is scanned ahead.
	Workers int
	// Hold is how long a next page scanned ahead waits to be asked for
	// (500 ms if 0). Clients that follow cursors in a loop ask within a
	// millisecond or two; the next page of a client that pauses longer (a
	// model reading the page) is dropped, and that page scans as any
	// other.
	Hold time.Duration
	// PageEnded hears, as each page that scanned ahead ends or hands its
	// scan on, how many outcomes it took and how many planned files it
	// scanned again itself.
	PageEnded func(taken, again int)
	// TakenOver hears, for each page that found a next page scanned
	// ahead, whether it took it over.
	TakenOver func(taken bool)
	// NextKept hears, for each next page kept, whether it is the scan the
	// page took over handed on (carried) or a new one.
	NextKept func(carried bool)
	// ReadAhead hears the path of each file a next page's scan has opened
	// and is about to read, on the goroutine that reads it.
	ReadAhead func(path string)
	// GroupOpen hears each group of a page's opens begin, on the
	// goroutine that opens it.
	GroupOpen func(g int)
}

// New returns the engine of the root dir's pages.
func New(dir *confine.Root, cfg Config, opts Options) *Engine {
	if opts.Workers == 0 {
		opts.Workers = defaultWorkers
	}
	if opts.Hold == 0 {
		opts.Hold = defaultHold
	}
	return &Engine{dir: dir, cfg: cfg, opts: opts}
}

// Close drops the next page waiting to be asked for, and keeps none any
// more.
func (e *Engine) Close() { e.next.close() }

// Request is one page asked for.
type Request struct {
	Matcher *textscan.Matcher
	Limit   int         // items the page holds at most
	Files   []walk.File // the scope, in path order
	Kept    Kept        // the inventory Files come from; nil: none kept
	From    Position
	// Token is the cursor the page was asked with, "" for a search's
	// first page.
	Token string
}

// Start begins the page req asks for: it takes over the scan the page
// before handed on for req.Token, or starts scanning its files ahead. The
// page ends when ctx does; the caller fills it (Fill) and ends it (End).
func (e *Engine) Start(ctx context.Context, req Request) *Page {
	p := &Page{e: e, ctx: ctx, req: req, pos: req.From, sc: textscan.NewScanner(req.Matcher)}
	p.sc.SetContext(ctx)
	if req.Token != "" {
		p.ahead, p.guards = e.takeNextPage(ctx, req.Token, req.Kept, req.Limit)
	}
	if p.ahead == nil {
		p.guards = &pageGuards{sg: e.dir.NewScanGuard()}
		p.ahead = e.startAhead(ctx, req, p.guards)
	}
	return p
}
