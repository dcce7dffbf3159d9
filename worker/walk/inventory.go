package walk

import (
	"strings"
	"sync"
	"time"

	"github.com/fsmcp/fsmcp/worker/confine"
	"github.com/fsmcp/fsmcp/worker/watch"
)

// Inventory is a text-search scope as one walk found it: its served files
// in path order with their identities, and the state a cursor binds.
type Inventory struct {
	Files []File
	State string
}

// Inventories keeps the last inventory of each text-search scope for the
// pages after the first of its traversals, for as long as it can show that
// nothing it was read from changed: while its watch set reports no change.
// Every directory walked is watched before it is read (its watch reports
// its entries' changes too), every file with more than one link is watched
// before it is stat'ed, and so is the way down from the root to the scope;
// the set also counts any mount or unmount as a change, and answers only
// for a scope on a local filesystem with no mount point below it
// (watch.Set.Tree). The first change drops every kept inventory. A page
// whose scope is kept then costs no walk; any other page walks as if
// nothing were kept.
//
// The one change no watch and no check reports: a write through a hard
// link made after the walk to a file that had one link then. A page that
// opens that file sees its identity moved (the link changed its ctime),
// and its caller drops the inventory (Drop): a fresh search then walks and
// answers again, a later page fails as under any other change and the
// search that starts over walks. A file an earlier page of the traversal
// has already read is not opened again.
//
// One mutex covers the lookup, the walk and the keeping, so concurrent
// text searches of one root take their inventories one at a time; their
// scans run concurrently.
type Inventories struct {
	mu     sync.Mutex
	set    *watch.Set
	scopes map[string]*Inventory
	// idle ends the keeping idleAfter the last use (used); nil while
	// nothing is kept.
	idle      *time.Timer
	idleAfter time.Duration
	used      time.Time
}

// NewInventories returns an empty cache whose scopes take their watches
// from b (which the root's read guards share for their idle watches), and
// give them back once idle for idle.
func NewInventories(b *watch.Budget, idle time.Duration) *Inventories {
	return &Inventories{set: watch.NewIn(b), idleAfter: idle}
}

// Close drops every kept inventory and gives the watches back.
func (c *Inventories) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.forget()
}

// forget drops every kept inventory and gives the watches back; c.mu held.
func (c *Inventories) forget() {
	c.set.Close()
	c.scopes = nil
	if c.idle != nil {
		c.idle.Stop()
		c.idle = nil
	}
}

// touch records a use and makes sure the idle timer runs; c.mu held.
func (c *Inventories) touch() {
	c.used = time.Now()
	if c.idle == nil && c.set.Len() > 0 {
		c.idle = time.AfterFunc(c.idleAfter, c.expire)
	}
}

// expire gives the watches back once the cache has been idle for
// idleAfter, or waits again for the rest of that time.
func (c *Inventories) expire() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.idle == nil {
		return // forgotten meanwhile
	}
	if left := c.idleAfter - time.Since(c.used); left > 0 {
		c.idle.Reset(left)
		return
	}
	c.forget()
}

// Kept reports whether inv is the inventory kept for the scope dir now.
// It does not wait for another search's walk: a cache busy walking
// answers false.
func (c *Inventories) Kept(dir string, inv *Inventory) bool {
	if !c.mu.TryLock() {
		return false
	}
	defer c.mu.Unlock()
	return inv != nil && c.scopes[dir] == inv
}

// Take returns the inventory of the directory scope sc opened by w (the
// walk ends with w's context), its state made by state from its files, and
// whether it is the kept one, taken without a walk: it is when one is kept
// and its watches report no change. Otherwise Take walks, and the walk is
// kept if every directory of it was watched.
func (c *Inventories) Take(w *Walk, sc Scope, state func([]File) (string, error)) (*Inventory, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	defer c.touch()
	if changed, err := c.set.Changed(); changed || err != nil {
		c.scopes = nil
	}
	if inv := c.scopes[sc.Dir]; inv != nil {
		return inv, true, nil
	}
	// Watch while walking only when the way to the scope is watched and
	// the set answers for the tree below it; a walk that loses its watch
	// set (a watch refused) is not kept.
	if c.watchScope(w.t, sc) && sc.D.WatchTree(c.set) == nil {
		w.watch = c.set
	}
	files, err := w.inventoryScope(sc)
	if err != nil {
		return nil, false, err
	}
	st, err := state(files)
	if err != nil {
		return nil, false, err
	}
	inv := &Inventory{Files: files, State: st}
	switch {
	case w.watch != nil:
		if c.scopes == nil {
			c.scopes = map[string]*Inventory{}
		}
		c.scopes[sc.Dir] = inv
	case len(c.scopes) == 0:
		c.set.Close() // the watches of a walk that is not kept serve nothing
	}
	return inv, false, nil
}

// Drop stops keeping inv as the inventory of the scope dir: a file of it
// was found changed where no watch reported it.
func (c *Inventories) Drop(dir string, inv *Inventory) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.scopes[dir] == inv {
		delete(c.scopes, dir)
	}
}

// watchScope watches the way down from t's root to the scope sc, each
// directory on it before the next one is opened, and reports whether the
// way now leads to the directory sc opened. From then on a swap anywhere on
// the way is an event on the watch of its parent; a swap before is a
// mismatch here. Without the check a scope swapped before the watches took
// hold would be kept as the old one: every later page would then fail its
// identity checks, with no event ever queued to drop the stale inventory.
// The scope itself is watched by the walk, before it is read.
func (c *Inventories) watchScope(t *Tree, sc Scope) bool {
	if sc.Dir == "" {
		return true // the root itself: its descriptor never changes
	}
	d, err := t.dir.OpenDir("")
	if err != nil {
		return false
	}
	for _, p := range strings.Split(sc.Dir, "/") {
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
	want, err1 := sc.D.Identity()
	got, err2 := d.Identity()
	return err1 == nil && err2 == nil && want.Dev == got.Dev && want.Ino == got.Ino
}

// inventoryScope inventories the scope sc: every served file in path order
// with its identity, on two goroutines where the scope is big (split.go).
// With w.watch set, each directory is watched before it is read (eachFile),
// so a later create, delete, rename, write, truncation or attribute change
// of an entry through that directory is reported by the directory's watch.
// A file with more than one link is also watched on its own, before it is
// stat'ed again (inventoryFile): a write through a link in a directory
// outside the scope reports to that directory, not to this one. A watch
// that cannot be added clears w.watch and the walk goes on unwatched.
func (w *Walk) inventoryScope(sc Scope) ([]File, error) {
	return w.inventory(sc.D, sc.Dir, walkSplit{after: splitAfter})
}
