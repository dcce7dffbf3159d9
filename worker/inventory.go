package worker

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fsmcp/fsmcp/worker/confine"
	"github.com/fsmcp/fsmcp/worker/paging"
	"github.com/fsmcp/fsmcp/worker/watch"
)

// maxWatches bounds the inotify watches one root holds for its cached
// inventories: one per directory of each cached scope (and per file with
// more than one link). A
// scope that would need more is inventoried on every page instead. It is
// the smaller of 32,768 and an eighth of the user's inotify watch limit as
// the process starts (see userWatchLimit), so a handful of workers never
// use up what the user's other programs need.
var maxWatches = min(1<<15, userWatchLimit()/8)

// userWatchLimit is the number of inotify watches this process's user may
// hold: fs.inotify.max_user_watches, or the user namespace's own limit
// (user.max_inotify_watches) where that is lower. Where neither can be
// read it is 8<<15, so the cap stays 32,768.
func userWatchLimit() int {
	limit := 8 << 15
	for _, f := range []string{"/proc/sys/fs/inotify/max_user_watches", "/proc/sys/user/max_inotify_watches"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && n >= 0 {
			limit = min(limit, n)
		}
	}
	return limit
}

// watchIdle is how long kept inventories outlive the last text search of
// their root: then their watches are given back, and the next search walks
// again. FSMCP_TEST_WATCH_IDLE (a Go duration) sets it for tests only; it is
// not an interface.
var watchIdle = func() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("FSMCP_TEST_WATCH_IDLE")); err == nil && d > 0 {
		return d
	}
	return time.Minute
}()

// inventory is a text-search scope as one walk found it: its served files
// in path order with their identities, and the state a cursor binds.
type inventory struct {
	files []paging.File
	state string
}

// inventories keeps the last inventory of each text-search scope for the
// pages after the first of its traversals, for as long as it can show that
// nothing it was read from changed: while its watch set reports no change.
// Every directory walked is watched before it is read (its watch reports
// its entries' changes too), every file with more than one link is watched
// before it is stat'ed, and so is the way down from the root to the scope;
// the set also counts any mount or unmount as a change, and answers only
// for a scope on a local filesystem with no mount point below it
// (watch.Set.Tree). The first change drops every kept inventory. A later
// page whose scope is kept then costs no walk; any other page walks as if
// nothing were kept. A fresh search (no cursor) always walks: its answer
// is the tree as it is at call time, and the inventory it takes is the one
// kept for its later pages.
//
// The one change no watch and no check reports: a write through a hard
// link made after the walk to a file that had one link then. A page that
// opens that file sees its identity moved (the link changed its ctime) and
// fails as under any other change; a file an earlier page of the
// traversal has already read is not opened again.
//
// One mutex covers the lookup, the walk and the keeping, so concurrent
// text searches of one root take their inventories one at a time; their
// scans run concurrently.
type inventories struct {
	mu     sync.Mutex
	set    *watch.Set
	scopes map[string]*inventory
	// idle ends the keeping watchIdle after the last use (used); nil while
	// nothing is kept.
	idle *time.Timer
	used time.Time
}

// newInventories returns an empty cache whose scopes take their watches
// from b (which the root's read guards share for their idle watches).
func newInventories(b *watch.Budget) *inventories {
	return &inventories{set: watch.NewIn(b)}
}

func (c *inventories) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.forget()
}

// forget drops every kept inventory and gives the watches back; c.mu held.
func (c *inventories) forget() {
	c.set.Close()
	c.scopes = nil
	if c.idle != nil {
		c.idle.Stop()
		c.idle = nil
	}
}

// touch records a use and makes sure the idle timer runs; c.mu held.
func (c *inventories) touch() {
	c.used = time.Now()
	if c.idle == nil && c.set.Len() > 0 {
		c.idle = time.AfterFunc(watchIdle, c.expire)
	}
}

// expire gives the watches back once the cache has been idle for
// watchIdle, or waits again for the rest of that time.
func (c *inventories) expire() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.idle == nil {
		return // forgotten meanwhile
	}
	if left := watchIdle - time.Since(c.used); left > 0 {
		c.idle.Reset(left)
		return
	}
	c.forget()
}

// isKept reports whether inv is the inventory kept for the scope dir now.
// It does not wait for another search's walk: a cache busy walking
// answers false.
func (c *inventories) isKept(dir string, inv *inventory) bool {
	if !c.mu.TryLock() {
		return false
	}
	defer c.mu.Unlock()
	return inv != nil && c.scopes[dir] == inv
}

// scopeInventory returns the inventory of s's scope (the walk ends with
// the context s's walk was made with). A page resumed from a cursor takes
// the kept one if there is one and its watches report no change; a fresh
// search, and any page without a kept inventory, walks, and the walk is
// kept if every directory of it was watched.
func (r *Root) scopeInventory(s *search, resumed bool) (*inventory, error) {
	c := r.inv
	c.mu.Lock()
	defer c.mu.Unlock()
	defer c.touch()
	if changed, err := c.set.Changed(); changed || err != nil {
		c.scopes = nil
	}
	if inv := c.scopes[s.dir]; inv != nil && resumed {
		return inv, nil
	}
	// Watch while walking only when the way to the scope is watched and
	// the set answers for the tree below it; a walk that loses its watch
	// set (a watch refused) is not kept.
	if c.watchScope(r, s) && s.d.WatchTree(c.set) == nil {
		s.w.watch = c.set
	}
	files, err := r.walkScope(s)
	if err != nil {
		return nil, err
	}
	if old := c.scopes[s.dir]; old != nil && s.w.watch != nil && slices.Equal(old.files, files) {
		// The same files with the same identities: keep the kept one,
		// which a next page scanned ahead may be bound to.
		return old, nil
	}
	state, err := r.scopeState(files)
	if err != nil {
		return nil, err
	}
	inv := &inventory{files: files, state: state}
	switch {
	case s.w.watch != nil:
		if c.scopes == nil {
			c.scopes = map[string]*inventory{}
		}
		c.scopes[s.dir] = inv
	case len(c.scopes) == 0:
		c.set.Close() // the watches of a walk that is not kept serve nothing
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
// identity, on two goroutines where the scope is big (walk_split.go). With
// s.w.watch set, each directory is watched before it is read (eachFile),
// so a later create, delete, rename, write, truncation or attribute change
// of an entry through that directory is reported by the directory's watch.
// A file with more than one link is also watched on its own, before it is
// stat'ed again (inventoryFile): a write through a link in a directory
// outside the scope reports to that directory, not to this one. A watch
// that cannot be added clears s.w.watch and the walk goes on unwatched.
func (r *Root) walkScope(s *search) ([]paging.File, error) {
	return s.w.inventory(s.d, s.dir, walkSplit{after: splitAfter})
}
