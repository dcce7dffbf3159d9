// Package walk reads a root's served tree under the walk ceilings: the
// scope a call names (a directory, or one file), a directory's served
// entries, and every served file below a scope in path order with its
// identity, on two goroutines where the scope is big; and it keeps the
// inventories of a root's text-search scopes between the pages of a
// search for as long as inotify reports no change to them.
//
// What is served is the selector's to say (internal/glob); a name that is
// not UTF-8, a special file, a link or anything gone meanwhile is not
// served. Every walk is charged against the root's ceilings (depth,
// directories, entries, files) and ends with its context's error once the
// context is done. Its failures other than the context's are *Error, whose
// texts name no path.
package walk

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/fsmcp/fsmcp/internal/glob"
	"github.com/fsmcp/fsmcp/internal/limits"
	"github.com/fsmcp/fsmcp/worker/confine"
	"github.com/fsmcp/fsmcp/worker/relpath"
	"github.com/fsmcp/fsmcp/worker/watch"
)

// File is one served file: its path beneath the root and its identity as
// the walk found it.
type File struct {
	Path string
	ID   confine.Identity
}

// Error is a walk's failure: a ceiling crossed, or a directory it needs
// unreadable. Its text is the one a tool reports, and names no path.
type Error struct{ msg string }

func (e *Error) Error() string { return e.msg }

// The walk's failures. A directory the walk needs that cannot be opened
// or read for a reason other than its being gone fails the call
// (errUnreadable) rather than answer as if the directory were empty.
var (
	errEntries    = &Error{"directory entry limit exceeded"}
	errDepth      = &Error{"directory depth limit exceeded"}
	errDirs       = &Error{"directory limit exceeded"}
	errFiles      = &Error{"file limit exceeded"}
	errUnreadable = &Error{"a directory could not be read"}
)

// Tree is a root's served tree: its descriptor, what its selector serves,
// and the ceilings every walk of it is charged against.
type Tree struct {
	dir *confine.Root
	sel *glob.Selector
	lim limits.Limits
}

// New returns the tree of the root dir as sel serves it, walked within
// lim.
func New(dir *confine.Root, sel *glob.Selector, lim limits.Limits) *Tree {
	return &Tree{dir: dir, sel: sel, lim: lim}
}

// Walk is one traversal of the tree, with its ceilings.
type Walk struct {
	t   *Tree
	ctx context.Context
	// n counts what the ceilings bound; the goroutines of a split walk
	// (split.go) share it.
	n *walkCounts
	// visited counts the entries the walk has gone through, for its
	// cancellation checks (one every cancelEvery).
	visited int64
	// watch, when set, gets every directory the walk reads and every file
	// entry it hands out, each before it is read (see inventories).
	watch *watch.Set
	// shared, when set, holds the watch set instead of watch: the one the
	// goroutines of a split walk add to in turn.
	shared *sharedWatch
}

// walkCounts are a walk's totals that the ceilings bound.
type walkCounts struct{ files, dirs, entries atomic.Int64 }

// sharedWatch is the watch set of a split walk, which its goroutines add to
// one at a time (a watch.Set is not safe for concurrent use). A refused
// watch clears set for all of them.
type sharedWatch struct {
	mu  sync.Mutex
	set *watch.Set
}

// Walk starts a traversal that ends with ctx's error once ctx is done: it
// looks before reading each directory and every cancelEvery entries.
func (t *Tree) Walk(ctx context.Context) *Walk {
	return &Walk{t: t, ctx: ctx, n: &walkCounts{}}
}

// cancelEvery is how many entries a walk goes through between two looks at
// its context.
const cancelEvery = 1000

// visit counts one entry gone through and, every cancelEvery, reports the
// walk's context error.
func (w *Walk) visit() error {
	if w.visited++; w.visited%cancelEvery == 0 {
		return w.ctx.Err()
	}
	return nil
}

// gone reports whether err, from opening or stat'ing an entry, means the
// entry is not there to serve: missing (ENOENT), not a directory (ENOTDIR),
// a symbolic link (ELOOP), or one the process may not read (EACCES, EPERM),
// which stays so from call to call and is served by no tool. Any other
// failure (EMFILE, ENFILE, ENOMEM, EIO, ...) is transient or a fault, and
// must fail the call, not shorten its answer.
func gone(err error) bool {
	return errors.Is(err, confine.ErrNotExist) || errors.Is(err, confine.ErrNotDir) ||
		errors.Is(err, confine.ErrSymlink) || errors.Is(err, confine.ErrPermission) ||
		errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM)
}

// entry is a directory entry the walk may use.
type entry struct {
	name string
	kind confine.Kind
}

// readDir reads d's entries, counts them against --max-entries, and sorts
// them so that full paths come out in byte order (a directory sorts as if
// its name ended in '/').
func (w *Walk) readDir(d *confine.Dir, dir string) ([]entry, error) {
	out, err := w.readDirUnsorted(d, dir)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, compareEntries)
	return out, nil
}

// readDirUnsorted reads d's files and directories in directory order,
// counting them against --max-entries.
func (w *Walk) readDirUnsorted(d *confine.Dir, dir string) ([]entry, error) {
	if err := w.ctx.Err(); err != nil {
		return nil, err
	}
	es, err := d.Entries()
	switch {
	case err != nil && gone(err):
		return nil, nil // removed while open: nothing in it is there
	case err != nil:
		return nil, errUnreadable
	}
	if w.n.entries.Add(int64(len(es))) > w.t.lim.MaxEntries {
		return nil, errEntries
	}
	out := make([]entry, 0, len(es))
	for _, e := range es {
		// A name that is not UTF-8 cannot be named back in a JSON
		// call, so nothing under it is served: not listed, not
		// searched, not descended into.
		if (e.Kind == confine.KindFile || e.Kind == confine.KindDir) && utf8.ValidString(e.Name) {
			out = append(out, entry{e.Name, e.Kind})
		}
	}
	return out, nil
}

// compareEntries orders entries by name, a directory's name taken as
// ending in '/', without building those names.
func compareEntries(a, b entry) int {
	n := min(len(a.name), len(b.name))
	if c := strings.Compare(a.name[:n], b.name[:n]); c != 0 {
		return c
	}
	return a.after(n) - b.after(n)
}

// after is the byte of e's sort key at i, the name's length or more: '/'
// just past a directory's name, -1 past the end.
func (e entry) after(i int) int {
	switch {
	case i < len(e.name):
		return int(e.name[i])
	case i == len(e.name) && e.kind == confine.KindDir:
		return '/'
	}
	return -1
}

// enter opens the child directory at path of d for walking, counting it
// against the ceilings: its depth from the root, and one more directory. It
// returns nil, nil when the directory is gone (see gone): vanished, turned
// into something else meanwhile, or unreadable.
func (w *Walk) enter(d *confine.Dir, path string) (*confine.Dir, error) {
	if err := w.charge(path); err != nil {
		return nil, err
	}
	name := path[strings.LastIndexByte(path, '/')+1:]
	sub, err := d.OpenDir(name)
	switch {
	case err == nil:
		return sub, nil
	case gone(err):
		return nil, nil // gone, or swapped for a link: not served
	}
	return nil, errUnreadable
}

// charge counts the directory at path against the ceilings: its depth from
// the root, and one more directory.
func (w *Walk) charge(path string) error {
	if depth := int64(strings.Count(path, "/") + 1); depth > w.t.lim.MaxDepth {
		return errDepth
	}
	if w.n.dirs.Add(1) > w.t.lim.MaxDirectories {
		return errDirs
	}
	return nil
}

// fileServed decides whether the file entry at path is served: the
// selector (by name only, before any stat) and then the size cap. The
// identity is returned when the size cap made it stat the entry.
func (w *Walk) fileServed(d *confine.Dir, path, name string) (bool, *confine.Identity, error) {
	if !w.t.sel.FileSelected(path) {
		return false, nil, nil
	}
	var st *confine.Identity
	if w.t.lim.MaxFileBytes > 0 {
		id, err := d.Stat(name)
		if err != nil && !gone(err) {
			return false, nil, errUnreadable
		}
		if err != nil || id.Kind() != confine.KindFile || id.Size > w.t.lim.MaxFileBytes {
			return false, nil, nil
		}
		st = &id
	}
	if w.n.files.Add(1) > w.t.lim.MaxFiles {
		return false, nil, errFiles
	}
	return true, st, nil
}

// serveFile calls fn for the file entry name of d at dir if it is
// served.
func (w *Walk) serveFile(d *confine.Dir, dir, name string, fn func(d *confine.Dir, path, name string, st *confine.Identity) error) error {
	path := relpath.Join(dir, name)
	ok, st, err := w.fileServed(d, path, name)
	if err != nil || !ok {
		return err
	}
	return fn(d, path, name, st)
}

// eachFile calls fn for every served file below dir (open as d), in path
// order, with the file's identity when the walk has already read it.
func (w *Walk) eachFile(d *confine.Dir, dir string, fn func(d *confine.Dir, path, name string, st *confine.Identity) error) error {
	w.watchWith(d.Watch)
	es, err := w.readDir(d, dir)
	if err != nil {
		return err
	}
	for _, e := range es {
		if err := w.visit(); err != nil {
			return err
		}
		if e.kind != confine.KindDir {
			if err := w.serveFile(d, dir, e.name, fn); err != nil {
				return err
			}
			continue
		}
		path := relpath.Join(dir, e.name)
		if w.t.sel.PruneDir(path) {
			continue
		}
		sub, err := w.enter(d, path)
		if err != nil {
			return err
		}
		if sub == nil {
			continue
		}
		err = w.eachFile(sub, path, fn)
		sub.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// watchEntry adds d's entry name to the walk's watch set, if it has one,
// and reports whether it did; a watch that cannot be added ends watching.
func (w *Walk) watchEntry(d *confine.Dir, name string) bool {
	return w.watchWith(func(s *watch.Set) error { return d.WatchEntry(s, name) })
}

// watchWith adds a watch to the walk's watch set with add, if the walk has
// a set, and reports whether it did; a watch that cannot be added ends
// watching, for every goroutine of a split walk.
func (w *Walk) watchWith(add func(*watch.Set) error) bool {
	set := &w.watch
	if w.shared != nil {
		w.shared.mu.Lock()
		defer w.shared.mu.Unlock()
		set = &w.shared.set
	}
	if *set == nil {
		return false
	}
	if add(*set) != nil {
		*set = nil
		return false
	}
	return true
}

// holdsServedFile reports whether the directory d at dir holds a served file
// at any depth, stopping at the first one. Order does not matter to the
// answer, so entries are not sorted, and a level's files are tried before
// any of its directories is entered.
func (w *Walk) holdsServedFile(d *confine.Dir, dir string) (bool, error) {
	es, err := w.readDirUnsorted(d, dir)
	if err != nil {
		return false, err
	}
	for _, e := range es {
		if e.kind != confine.KindFile {
			continue
		}
		if err := w.visit(); err != nil {
			return false, err
		}
		ok, _, err := w.fileServed(d, relpath.Join(dir, e.name), e.name)
		if ok || err != nil {
			return ok, err
		}
	}
	for _, e := range es {
		if e.kind != confine.KindDir {
			continue
		}
		ok, err := w.dirServed(d, relpath.Join(dir, e.name))
		if ok || err != nil {
			return ok, err
		}
	}
	return false, nil
}

// dirServed reports whether the child directory at path of d is one the
// root shows: not pruned, still a directory, holding a served file.
func (w *Walk) dirServed(d *confine.Dir, path string) (bool, error) {
	if w.t.sel.PruneDir(path) {
		return false, nil
	}
	sub, err := w.enter(d, path)
	if err != nil || sub == nil {
		return false, err
	}
	defer sub.Close()
	return w.holdsServedFile(sub, path)
}

// Scope is the opened prefix of a listing or search: the directory D at
// Dir, or, for a search that names one file, that file (D nil). The zero
// Scope is a prefix that serves nothing.
type Scope struct {
	Dir  string
	D    *confine.Dir
	File *File
}

// Close closes the scope's directory.
func (s *Scope) Close() {
	if s.D != nil {
		s.D.Close()
	}
}

// maxNameBytes is the longest name a directory entry can have (NAME_MAX).
const maxNameBytes = 255

// OpenScope opens the prefix a listing or search names (already cleaned).
// Each directory on the way down, and the prefix itself, is charged against
// the walk ceilings as a walk from the root would charge it. A prefix that
// is missing, unserved, excluded, reached through a symbolic link, spelled
// otherwise than on disk, or a file (unless fileOK) gives the zero scope,
// so every such prefix answers alike. The selector is asked before any
// filesystem call.
func (w *Walk) OpenScope(dir string, fileOK bool) (Scope, error) {
	if err := w.ctx.Err(); err != nil {
		return Scope{}, err
	}
	for i := 0; i < len(dir); i++ {
		if dir[i] != '/' {
			continue
		}
		if w.t.sel.PruneDir(dir[:i]) {
			return Scope{}, nil
		}
		if err := w.charge(dir[:i]); err != nil {
			return Scope{}, err
		}
	}
	if len(dir[strings.LastIndexByte(dir, '/')+1:]) > maxNameBytes {
		return Scope{}, nil // no such name can exist
	}
	if dir != "" && fileOK && w.t.sel.FileSelected(dir) {
		if f, ok := w.scopeFile(dir); ok {
			return Scope{Dir: dir, File: f}, nil
		}
	}
	if dir != "" {
		if w.t.sel.PruneDir(dir) {
			return Scope{}, nil
		}
		if err := w.charge(dir); err != nil {
			return Scope{}, err
		}
	}
	d, err := w.t.dir.OpenDir(dir)
	switch {
	case err == nil:
		return Scope{Dir: dir, D: d}, nil
	case dir != "" && gone(err):
		return Scope{}, nil
	}
	return Scope{}, errUnreadable
}

// scopeFile reports whether path, which the selector serves, is a regular
// file within the size cap, and if so its identity. It is opened under its
// exact spelling, refusing links anywhere on the way.
func (w *Walk) scopeFile(path string) (*File, bool) {
	f, id, err := w.t.dir.OpenFile(path)
	if err != nil {
		return nil, false
	}
	f.Close()
	if w.t.lim.MaxFileBytes > 0 && id.Size > w.t.lim.MaxFileBytes {
		return nil, false
	}
	return &File{Path: path, ID: id}, true
}

// Entry is a served entry of a directory: a file, or a directory that
// holds a served file at some depth.
type Entry struct {
	Name string
	Dir  bool
}

// Served returns the served entries of the scope's directory (none for a
// file or the zero Scope), in path order.
func (w *Walk) Served(sc Scope) ([]Entry, error) {
	if sc.D == nil {
		return nil, nil
	}
	es, err := w.readDir(sc.D, sc.Dir)
	if err != nil {
		return nil, err
	}
	var out []Entry
	for _, e := range es {
		if err := w.ctx.Err(); err != nil {
			return nil, err
		}
		path := relpath.Join(sc.Dir, e.name)
		var ok bool
		if e.kind == confine.KindDir {
			ok, err = w.dirServed(sc.D, path)
		} else {
			ok, _, err = w.fileServed(sc.D, path, e.name)
		}
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, Entry{Name: e.name, Dir: e.kind == confine.KindDir})
		}
	}
	return out, nil
}

// EachPath calls fn with the path of every served file below the scope's
// directory (none for a file or the zero Scope), in path order.
func (w *Walk) EachPath(sc Scope, fn func(path string) error) error {
	if sc.D == nil {
		return nil
	}
	return w.eachFile(sc.D, sc.Dir, func(_ *confine.Dir, path, _ string, _ *confine.Identity) error { return fn(path) })
}
