package worker

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/fsmcp/fsmcp/worker/confine"
	"github.com/fsmcp/fsmcp/worker/paging"
	"github.com/fsmcp/fsmcp/worker/relpath"
	"github.com/fsmcp/fsmcp/worker/watch"
)

// walk is one traversal of the root, with its ceilings.
type walk struct {
	r   *Root
	ctx context.Context
	// n counts what the ceilings bound; the goroutines of a split walk
	// (walk_split.go) share it.
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

// newWalk starts a traversal that ends with ctx's error once ctx is done:
// it looks before reading each directory and every cancelEvery entries.
func (r *Root) newWalk(ctx context.Context) *walk {
	return &walk{r: r, ctx: ctx, n: &walkCounts{}}
}

// cancelEvery is how many entries a walk goes through between two looks at
// its context.
const cancelEvery = 1000

// errDirUnreadable is the answer when a directory the walk needs cannot be
// opened or read for a reason other than its being gone: the call fails
// rather than answer as if the directory were empty. It names no path.
var errDirUnreadable = toolErrorf("a directory could not be read")

// visit counts one entry gone through and, every cancelEvery, reports the
// walk's context error.
func (w *walk) visit() error {
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
func (w *walk) readDir(d *confine.Dir, dir string) ([]entry, error) {
	out, err := w.readDirUnsorted(d, dir)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, compareEntries)
	return out, nil
}

// readDirUnsorted reads d's files and directories in directory order,
// counting them against --max-entries.
func (w *walk) readDirUnsorted(d *confine.Dir, dir string) ([]entry, error) {
	if err := w.ctx.Err(); err != nil {
		return nil, err
	}
	es, err := d.Entries()
	switch {
	case err != nil && gone(err):
		return nil, nil // removed while open: nothing in it is there
	case err != nil:
		return nil, errDirUnreadable
	}
	if w.n.entries.Add(int64(len(es))) > w.r.lim.MaxEntries {
		return nil, toolErrorf("directory entry limit exceeded")
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
func (w *walk) enter(d *confine.Dir, path string) (*confine.Dir, error) {
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
	return nil, errDirUnreadable
}

// charge counts the directory at path against the ceilings: its depth from
// the root, and one more directory.
func (w *walk) charge(path string) error {
	if depth := int64(strings.Count(path, "/") + 1); depth > w.r.lim.MaxDepth {
		return toolErrorf("directory depth limit exceeded")
	}
	if w.n.dirs.Add(1) > w.r.lim.MaxDirectories {
		return toolErrorf("directory limit exceeded")
	}
	return nil
}

// fileServed decides whether the file entry at path is served: the
// selector (by name only, before any stat) and then the size cap. The
// identity is returned when the size cap made it stat the entry.
func (w *walk) fileServed(d *confine.Dir, path, name string) (bool, *confine.Identity, error) {
	if !w.r.sel.FileSelected(path) {
		return false, nil, nil
	}
	var st *confine.Identity
	if w.r.lim.MaxFileBytes > 0 {
		id, err := d.Stat(name)
		if err != nil && !gone(err) {
			return false, nil, errDirUnreadable
		}
		if err != nil || id.Kind() != confine.KindFile || id.Size > w.r.lim.MaxFileBytes {
			return false, nil, nil
		}
		st = &id
	}
	if w.n.files.Add(1) > w.r.lim.MaxFiles {
		return false, nil, toolErrorf("file limit exceeded")
	}
	return true, st, nil
}

// serveFile calls fn for the file entry name of d at dir if it is
// served.
func (w *walk) serveFile(d *confine.Dir, dir, name string, fn func(d *confine.Dir, path, name string, st *confine.Identity) error) error {
	path := relpath.Join(dir, name)
	ok, st, err := w.fileServed(d, path, name)
	if err != nil || !ok {
		return err
	}
	return fn(d, path, name, st)
}

// eachFile calls fn for every served file below dir (open as d), in path
// order, with the file's identity when the walk has already read it.
func (w *walk) eachFile(d *confine.Dir, dir string, fn func(d *confine.Dir, path, name string, st *confine.Identity) error) error {
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
		if w.r.sel.PruneDir(path) {
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
func (w *walk) watchEntry(d *confine.Dir, name string) bool {
	return w.watchWith(func(s *watch.Set) error { return d.WatchEntry(s, name) })
}

// watchWith adds a watch to the walk's watch set with add, if the walk has
// a set, and reports whether it did; a watch that cannot be added ends
// watching, for every goroutine of a split walk.
func (w *walk) watchWith(add func(*watch.Set) error) bool {
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
func (w *walk) holdsServedFile(d *confine.Dir, dir string) (bool, error) {
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
func (w *walk) dirServed(d *confine.Dir, path string) (bool, error) {
	if w.r.sel.PruneDir(path) {
		return false, nil
	}
	sub, err := w.enter(d, path)
	if err != nil || sub == nil {
		return false, err
	}
	defer sub.Close()
	return w.holdsServedFile(sub, path)
}

// scope is the opened prefix of a listing or search: the directory d at
// dir, or, for a search that names one file, that file (d nil). The zero
// scope is a prefix that serves nothing.
type scope struct {
	dir  string
	d    *confine.Dir
	file *paging.File
}

func (s *scope) close() {
	if s.d != nil {
		s.d.Close()
	}
}

// maxNameBytes is the longest name a directory entry can have (NAME_MAX).
const maxNameBytes = 255

// openScope opens the prefix a listing or search names (already cleaned).
// Each directory on the way down, and the prefix itself, is charged against
// the walk ceilings as a walk from the root would charge it. A prefix that
// is missing, unserved, excluded, reached through a symbolic link, spelled
// otherwise than on disk, or a file (unless fileOK) gives the zero scope,
// so every such prefix answers alike. The selector is asked before any
// filesystem call.
func (w *walk) openScope(dir string, fileOK bool) (scope, error) {
	if err := w.ctx.Err(); err != nil {
		return scope{}, err
	}
	for i := 0; i < len(dir); i++ {
		if dir[i] != '/' {
			continue
		}
		if w.r.sel.PruneDir(dir[:i]) {
			return scope{}, nil
		}
		if err := w.charge(dir[:i]); err != nil {
			return scope{}, err
		}
	}
	if len(dir[strings.LastIndexByte(dir, '/')+1:]) > maxNameBytes {
		return scope{}, nil // no such name can exist
	}
	if dir != "" && fileOK && w.r.sel.FileSelected(dir) {
		if f, ok := w.scopeFile(dir); ok {
			return scope{dir: dir, file: f}, nil
		}
	}
	if dir != "" {
		if w.r.sel.PruneDir(dir) {
			return scope{}, nil
		}
		if err := w.charge(dir); err != nil {
			return scope{}, err
		}
	}
	d, err := w.r.dir.OpenDir(dir)
	switch {
	case err == nil:
		return scope{dir: dir, d: d}, nil
	case dir != "" && gone(err):
		return scope{}, nil
	}
	return scope{}, errDirUnreadable
}

// scopeFile reports whether path, which the selector serves, is a regular
// file within the size cap, and if so its identity. It is opened under its
// exact spelling, refusing links anywhere on the way.
func (w *walk) scopeFile(path string) (*paging.File, bool) {
	f, id, err := w.r.dir.OpenFile(path)
	if err != nil {
		return nil, false
	}
	f.Close()
	if w.r.lim.MaxFileBytes > 0 && id.Size > w.r.lim.MaxFileBytes {
		return nil, false
	}
	return &paging.File{Path: path, ID: id}, true
}
