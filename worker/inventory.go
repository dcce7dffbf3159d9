package worker

import (
	"context"
	"strings"
	"sync"

	"github.com/fsmcp/fsmcp/worker/confine"
	"github.com/fsmcp/fsmcp/worker/watch"
)

// maxWatches bounds the inotify watches one root holds for its cached
// inventories: one per served file and directory of each cached scope. A
// scope that would need more is inventoried on every page instead.
const maxWatches = 1 << 15

// inventory is a text-search scope as one walk found it: its served files
// in path order with their identities, and the state a cursor binds.
type inventory struct {
	files []scopedFile
	state string
}

// inventories keeps the last inventory of each text-search scope for as
// long as the kernel reports no change to anything it was read from: every
// directory walked and every file stat'ed is watched before it is read, and
// so is the way down from the root to the scope, so any later change to
// them queues an event, and the first event drops every kept inventory. A
// page whose scope is kept then costs no walk; any other page walks as if
// nothing were kept. The answers are the ones a fresh walk would give.
//
// What inotify does not report (a write through a shared memory mapping
// before the writer closes the file, a change on a network filesystem made
// by another machine) is still caught for each file a page opens, whose
// identity is checked against the inventory's; a file read on an earlier
// page and changed that way is not.
//
// One mutex covers the lookup, the walk and the keeping, so concurrent
// text searches of one root take their inventories one at a time; their
// scans run concurrently.
type inventories struct {
	mu     sync.Mutex
	set    *watch.Set
	scopes map[string]*inventory
}

// newInventories returns an empty cache whose scopes may hold up to max
// watches in all.
func newInventories(max int) *inventories {
	return &inventories{set: watch.New(max)}
}

func (c *inventories) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.set.Close()
	c.scopes = nil
}

// scopeInventory returns the inventory of s's scope, cached or walked.
func (r *Root) scopeInventory(ctx context.Context, s *search) (*inventory, error) {
	c := r.inv
	c.mu.Lock()
	defer c.mu.Unlock()
	if changed, err := c.set.Changed(); changed || err != nil {
		c.scopes = nil
	}
	if inv := c.scopes[s.dir]; inv != nil {
		return inv, nil
	}
	// Watch while walking only when the way to the scope is watched; a
	// walk that loses its watch set (a watch refused) is not kept.
	if c.watchScope(r, s) {
		s.w.watch = c.set
	}
	files, err := r.walkScope(ctx, s)
	if err != nil {
		return nil, err
	}
	state, err := r.scopeState(files)
	if err != nil {
		return nil, err
	}
	inv := &inventory{files: files, state: state}
	if s.w.watch != nil {
		if c.scopes == nil {
			c.scopes = map[string]*inventory{}
		}
		c.scopes[s.dir] = inv
	}
	return inv, nil
}

// watchScope watches the way down from the root to s's scope, each
// directory on it before the next one is opened, and reports whether the
// way now leads to the directory s opened. From then on a swap anywhere on
// the way is an event on the watch of its parent; a swap before is a
// mismatch here. Without the check a scope swapped before the watches took
// hold would be kept as the old one: every later page would then fail its
// identity checks, with no event ever queued to drop the stale inventory.
// The scope itself is watched by the walk, before it is read.
func (c *inventories) watchScope(r *Root, s *search) bool {
	if s.dir == "" {
		return true // the root itself: its descriptor never changes
	}
	d, err := r.dir.OpenDir("")
	if err != nil {
		return false
	}
	for _, p := range strings.Split(s.dir, "/") {
		err := d.WatchAlong(c.set, p)
		var next *confine.Dir
		if err == nil {
			next, err = d.OpenDir(p)
		}
		d.Close()
		if err != nil {
			return false
		}
		d = next
	}
	defer d.Close()
	want, err1 := s.d.Identity()
	got, err2 := d.Identity()
	return err1 == nil && err2 == nil && want.Dev == got.Dev && want.Ino == got.Ino
}

// walkScope inventories s's scope: every served file in path order with its
// identity. With s.w.watch set, each directory and file is watched before
// it is read; a watch that cannot be added clears s.w.watch and the walk
// goes on unwatched.
func (r *Root) walkScope(ctx context.Context, s *search) ([]scopedFile, error) {
	var files []scopedFile
	err := s.w.eachFile(s.d, s.dir, func(d *confine.Dir, path, name string, st *confine.Identity) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if s.w.watchEntry(d, name) {
			st = nil // stat'ed before the watch: stat again
		}
		if st != nil {
			files = append(files, scopedFile{path, *st})
			return nil
		}
		id, err := d.Stat(name)
		if err != nil || id.Kind() != confine.KindFile {
			return nil
		}
		files = append(files, scopedFile{path, id})
		return nil
	})
	return files, err
}
