//go:build linux

package e2e

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// The changing-tree test pages every tool through a copy of a real tree
// that a goroutine keeps changing: files created, deleted, rewritten in
// place (truncated, then written) and atomically (renamed over), renamed
// and renamed back. Every page must be right for the tree as its
// traversal saw it, or the traversal must fail with one of the two
// changed-filesystem errors; never a wrong page, a hang or a short result.
//
// The changes touch a few files only (slots), each of which goes through
// known versions, and every change is logged as the tree's state after it.
// So a traversal is checked against what the tree could have been while it
// ran:
//   - items come in order, never twice;
//   - every file the changes never touch gives exactly rg's lines, none
//     skipped before the last item;
//   - every other item belongs to a version of its slot, and one slot's
//     items to one version;
//   - a traversal that ends matches, slot by slot, one logged state of the
//     tree from its first call to its last answer;
//   - a page is refused when, all the while it was served, a slot held
//     versions whose items differ from those of every version it held
//     while the page before was served: the cursor binds (at least) those
//     items. A slot changed and changed back meanwhile may be seen as it
//     was, and the page rightly served.

// churnVersion is one thing a slot can hold: body at path, or no file
// (path "").
type churnVersion struct {
	name string
	path string
	body []byte
}

// churnSlot is one file the changes touch. versions[0] is what it holds
// in the copy as made: an existing file (orig), or no file (absent) for a
// slot the changes create. A stable version is one a change leaves. While
// a file is written in place it is empty (truncated and not yet written)
// or whole: a reader may see either, but never a part of the new bytes,
// as the worker refuses a page that overlaps a write (docs/security.md,
// "How a read is guarded"). writing lists those two versions.
type churnSlot struct {
	versions []churnVersion
	stable   map[string]int
	writing  map[int][]int
}

func (v churnVersion) String() string {
	if v.path == "" {
		return v.name
	}
	return fmt.Sprintf("%s at %s (%d bytes)", v.name, v.path, len(v.body))
}

func (s *churnSlot) add(v churnVersion) int {
	s.versions = append(s.versions, v)
	return len(s.versions) - 1
}

// addStable adds a version a change can leave, and the empty file a
// reader may see while it is written in place.
func (s *churnSlot) addStable(v churnVersion) {
	i := s.add(v)
	s.stable[v.name] = i
	if v.path != "" {
		s.writing[i] = []int{i, s.add(churnVersion{name: v.name + " (truncated)", path: v.path})}
	}
}

// existingSlot is the file at p with body: kept (orig), rewritten with one
// matching line more at its top, which moves every later line (edit),
// renamed within its folder (moved), or deleted (gone).
func existingSlot(p string, body []byte, early bool) churnSlot {
	s := churnSlot{stable: map[string]int{}, writing: map[int][]int{}}
	dir, base := path.Split(p)
	moved := dir + base + ".moved"
	if early {
		moved = dir + "0moved-" + base
	}
	s.addStable(churnVersion{name: "orig", path: p, body: body})
	s.addStable(churnVersion{name: "edit", path: p, body: append([]byte(churnLine+"\n"), body...)})
	s.addStable(churnVersion{name: "moved", path: moved, body: body})
	s.addStable(churnVersion{name: "gone"})
	return s
}

// newSlot is a file the changes create at p and delete again.
func newSlot(p string) churnSlot {
	s := churnSlot{stable: map[string]int{}, writing: map[int][]int{}}
	var b bytes.Buffer
	for i := 0; b.Len() < 10000; i++ {
		fmt.Fprintf(&b, "%s %d\nfiller line without a term, number %d\n", churnLine, i, i)
	}
	s.addStable(churnVersion{name: "absent"})
	s.addStable(churnVersion{name: "new", path: p, body: b.Bytes()})
	return s
}

// churnLine holds every term the changing-tree searches look for.
const churnLine = "func churned() error { return io.EOF } // Timeout"

// churner changes the slots of the copy at root and logs each state.
type churner struct {
	root  string
	spare string // beside root, on its filesystem: where atomic replacements are written
	slots []churnSlot

	mu  sync.Mutex
	log [][][]int // the states, each slot's possible versions; log[0] is the copy as made
	cur []int     // each slot's stable version
	err error
}

func newChurner(root, spare string, slots []churnSlot) *churner {
	first := make([][]int, len(slots))
	for i := range first {
		first[i] = []int{0}
	}
	return &churner{root: root, spare: spare, slots: slots, log: [][][]int{first}, cur: make([]int, len(slots))}
}

// logState logs the state the next change leaves: slot s holding one of
// versions. It is logged before the change is made, so while a change is
// under way the tree is in the state logged last or the one before.
func (c *churner) logState(s int, versions []int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	next := slices.Clone(c.log[len(c.log)-1])
	next[s] = versions
	c.log = append(c.log, next)
}

// states returns how many states are logged.
func (c *churner) states() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.log)
}

// failed returns the error of a change that failed, or nil. After one,
// the log no longer says what the tree holds: the change it logged last
// may not have been made.
func (c *churner) failed() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// since returns the states the tree may have been in from the moment
// states() returned from (taken before a traversal's first call) until now.
func (c *churner) since(from int) [][][]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.log[max(0, from-2):]
}

// between returns the states the tree may have been in from the moment
// states() returned from until it returned to.
func (c *churner) between(from, to int) [][][]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.log[max(0, from-2):to]
}

func (c *churner) abs(p string) string { return filepath.Join(c.root, filepath.FromSlash(p)) }

// step makes one change to a random slot.
func (c *churner) step(rng *rand.Rand) error {
	s := rng.IntN(len(c.slots))
	sl := &c.slots[s]
	switch now := sl.versions[c.cur[s]].name; now {
	case "orig", "edit":
		other := map[string]string{"orig": "edit", "edit": "orig"}[now]
		switch rng.IntN(4) {
		case 0:
			return c.writeInPlace(s, other)
		case 1:
			return c.replace(s, other)
		case 2:
			if now == "orig" {
				return c.move(s, "moved")
			}
			return c.writeInPlace(s, "orig")
		}
		return c.remove(s, "gone")
	case "moved":
		return c.move(s, "orig")
	case "gone":
		return c.writeInPlace(s, "orig")
	case "absent":
		if rng.IntN(2) == 0 {
			return c.replace(s, "new")
		}
		return c.writeInPlace(s, "new")
	case "new":
		if rng.IntN(2) == 0 {
			return c.writeInPlace(s, "new")
		}
		return c.remove(s, "absent")
	}
	return fmt.Errorf("slot %d in version %q", s, sl.versions[c.cur[s]].name)
}

// writeInPlace truncates (or creates) the slot's file and writes the
// version to: readers meanwhile may see it empty, or whole.
func (c *churner) writeInPlace(s int, to string) error {
	v := c.slots[s].stable[to]
	c.logState(s, c.slots[s].writing[v])
	if err := os.WriteFile(c.abs(c.slots[s].versions[v].path), c.slots[s].versions[v].body, 0o644); err != nil {
		return err
	}
	c.logState(s, []int{v})
	c.cur[s] = v
	return nil
}

// replace writes the version to beside the copy and renames it over the
// slot's path: readers see the old file or the new one.
func (c *churner) replace(s int, to string) error {
	v := c.slots[s].stable[to]
	tmp := filepath.Join(c.spare, "next")
	if err := os.WriteFile(tmp, c.slots[s].versions[v].body, 0o644); err != nil {
		return err
	}
	c.logState(s, []int{v})
	c.cur[s] = v
	return os.Rename(tmp, c.abs(c.slots[s].versions[v].path))
}

// move renames the slot's file to the path of the version to.
func (c *churner) move(s int, to string) error {
	from, v := c.slots[s].versions[c.cur[s]].path, c.slots[s].stable[to]
	c.logState(s, []int{v})
	c.cur[s] = v
	return os.Rename(c.abs(from), c.abs(c.slots[s].versions[v].path))
}

// remove deletes the slot's file.
func (c *churner) remove(s int, to string) error {
	from, v := c.slots[s].versions[c.cur[s]].path, c.slots[s].stable[to]
	c.logState(s, []int{v})
	c.cur[s] = v
	return os.Remove(c.abs(from))
}

// run changes the tree until stop is closed: bursts of up to 12 changes
// up to 15 ms apart, each followed by 0.3-2 s without change, so that
// some traversals end while others meet a change. It returns how many
// changes it made; a change that failed is in c.err.
func (c *churner) run(stop <-chan struct{}, seed uint64) int {
	rng := rand.New(rand.NewPCG(seed, 44))
	n := 0
	wait := func(d time.Duration) bool {
		select {
		case <-stop:
			return false
		case <-time.After(d):
			return true
		}
	}
	for {
		for range 1 + rng.IntN(12) {
			if err := c.step(rng); err != nil {
				c.mu.Lock()
				c.err = err
				c.mu.Unlock()
				return n
			}
			n++
			if !wait(time.Duration(rng.IntN(15)) * time.Millisecond) {
				return n
			}
		}
		if !wait(time.Duration(300+rng.IntN(1700)) * time.Millisecond) {
			return n
		}
	}
}

// churnOracle is what one tool's traversals of the changing copy may
// return: the items of the files no change touches (required, in order),
// and the items of each version of each slot.
type churnOracle[T realItem] struct {
	tool     string
	args     map[string]any
	cmp      func(a, b T) int
	required []T
	items    [][][]T        // [slot][version]
	holders  map[T][][2]int // item -> the (slot, version) pairs holding it
}

func newChurnOracle[T realItem](tool string, args map[string]any, cmp func(a, b T) int, required []T, items [][][]T) *churnOracle[T] {
	o := &churnOracle[T]{tool: tool, args: args, cmp: cmp, required: required, items: items, holders: map[T][][2]int{}}
	for s := range items {
		for v, its := range items[s] {
			for _, it := range its {
				o.holders[it] = append(o.holders[it], [2]int{s, v})
			}
		}
	}
	return o
}

// churnPager follows one tool's traversals through one server and checks
// each page against its oracle and the churner's log.
type churnPager[T realItem] struct {
	name  string
	o     *churnOracle[T]
	srv   *realServer
	c     *churner
	pause func() time.Duration

	// The traversal under way.
	cursor    string
	began     int           // the churner's states before its first call
	got       []T           // its items so far
	next      int           // how many required items it returned
	cands     map[int][]int // slot -> the versions its items so far agree with
	slotItems map[int][]T
	prev      [2]int // the churner's states when its last page was asked for and answered

	pages, refused, completed int
	mustRefuse                int // refused pages that movedSince says had to be
}

func (p *churnPager[T]) String() string {
	return fmt.Sprintf("%s: %d pages, %d traversals refused as changed (%d had to be), %d completed", p.name, p.pages, p.refused, p.mustRefuse, p.completed)
}

// stepOutcome is what one page did to its traversal.
type stepOutcome int

const (
	stepServed    stepOutcome = iota // a page, and a cursor to follow
	stepRefused                      // the changed-filesystem error
	stepCompleted                    // the last page
)

// step asks for one page: the next of the traversal under way, or the
// first of a new one.
func (p *churnPager[T]) step(t *testing.T) stepOutcome {
	t.Helper()
	args := map[string]any{}
	for k, v := range p.o.args {
		args[k] = v
	}
	called := p.c.states()
	resumed := p.cursor != ""
	if resumed {
		args["cursor"] = p.cursor
	} else {
		p.began, p.got, p.next, p.cands, p.slotItems = called, nil, 0, map[int][]int{}, map[int][]T{}
	}
	r := p.srv.page(t, p.o.tool, args)
	p.cursor = ""
	prev := p.prev
	p.prev = [2]int{called, p.c.states()}
	if err := p.c.failed(); err != nil {
		t.Fatalf("changing the copy: %v", err)
	}
	var moved string
	if resumed {
		moved = p.movedSince(prev, p.prev)
	}
	if r.isError {
		if !refusedAsChanged(r.text) {
			p.srv.dumpAndFail(t, fmt.Sprintf("%s: page refused with %q, want a page or a changed-filesystem error", p.name, r.text))
		}
		p.refused++
		if moved != "" {
			p.mustRefuse++
		}
		return stepRefused
	}
	p.pages++
	items := checkPage[T](t, p.o.tool, r, p.pages)
	if moved != "" {
		t.Fatalf("%s: page %d was served though, since the page before, %s; %s", p.name, p.pages, moved, p.served(items))
	}
	for _, it := range items {
		p.accept(t, it)
	}
	if r.page.NextCursor != nil {
		p.cursor = *r.page.NextCursor
		return stepServed
	}
	p.complete(t)
	return stepCompleted
}

// movedSince names a slot that, all the while a page was served (now:
// the churner's states when it was asked for and answered), held versions
// whose items differ from those of every version it held while the page
// before was served (prev, likewise), or returns "". The cursor binds at
// least those items, so the page must be refused. A slot that changes and
// changes back while the page is asked for (removed, then written again)
// may be seen as it was: the page is then served rightly.
func (p *churnPager[T]) movedSince(prev, now [2]int) string {
	before, during := p.c.between(prev[0], prev[1]), p.c.between(now[0], now[1])
	for s := range p.o.items {
		was, is := p.versionsOf(s, before), p.versionsOf(s, during)
		if !slices.ContainsFunc(is, func(v int) bool {
			return slices.ContainsFunc(was, func(w int) bool { return slices.Equal(p.o.items[s][v], p.o.items[s][w]) })
		}) {
			return fmt.Sprintf("slot %d went from %v to %v", s, p.versionNames(s, was), p.versionNames(s, is))
		}
	}
	return ""
}

// versionsOf returns the versions slot s holds in any of states.
func (p *churnPager[T]) versionsOf(s int, states [][][]int) []int {
	var vs []int
	for _, st := range states {
		vs = append(vs, st[s]...)
	}
	slices.Sort(vs)
	return slices.Compact(vs)
}

// versionNames names versions of slot s.
func (p *churnPager[T]) versionNames(s int, vs []int) []string {
	names := make([]string, len(vs))
	for i, v := range vs {
		names[i] = p.c.slots[s].versions[v].String()
	}
	return names
}

// served says where a page's items fall in the traversal so far, to tell
// a page the worker served wrongly from an answer that is not the page's.
func (p *churnPager[T]) served(items []T) string {
	if len(items) == 0 {
		return "it held no items"
	}
	last := "none, as it is the first"
	if n := len(p.got); n > 0 {
		last = fmt.Sprintf("%.200v", p.got[n-1])
	}
	return fmt.Sprintf("it held %d items from %.200v to %.200v; the traversal's item before it: %s", len(items), items[0], items[len(items)-1], last)
}

// accept checks one item against the traversal so far.
func (p *churnPager[T]) accept(t *testing.T, it T) {
	t.Helper()
	if n := len(p.got); n > 0 && p.o.cmp(p.got[n-1], it) >= 0 {
		t.Fatalf("%s: item %v after %v: out of order or repeated", p.name, it, p.got[n-1])
	}
	p.got = append(p.got, it)
	req := p.o.required
	if p.next < len(req) && p.o.cmp(req[p.next], it) < 0 {
		t.Fatalf("%s: item %v, but %v (of a file no change touches) was skipped", p.name, it, req[p.next])
	}
	if p.next < len(req) && req[p.next] == it {
		p.next++
		return
	}
	hs := p.o.holders[it]
	if len(hs) == 0 {
		t.Fatalf("%s: item %v is in no version of the tree", p.name, it)
	}
	s := hs[0][0]
	var vs []int
	for _, h := range hs {
		if p.cands[s] == nil || slices.Contains(p.cands[s], h[1]) {
			vs = append(vs, h[1])
		}
	}
	if len(vs) == 0 {
		t.Fatalf("%s: item %v is of another version of its file than the items before it (%v)", p.name, it, p.slotItems[s])
	}
	p.cands[s] = vs
	p.slotItems[s] = append(p.slotItems[s], it)
}

// complete checks a traversal that ended: every required item returned,
// and each slot's items those of the version it held in one logged state.
func (p *churnPager[T]) complete(t *testing.T) {
	t.Helper()
	if p.next != len(p.o.required) {
		t.Fatalf("%s: the traversal ended without %v and %d more items of files no change touches", p.name, p.o.required[p.next], len(p.o.required)-p.next-1)
	}
	states := p.c.since(p.began)
	for _, st := range states {
		if p.matches(st) {
			p.completed++
			return
		}
	}
	var b strings.Builder
	for s := range p.o.items {
		fmt.Fprintf(&b, "\n slot %d returned %.300v", s, p.slotItems[s])
	}
	t.Fatalf("%s: a completed traversal (%d items) matches none of the %d states the tree was in meanwhile:%s", p.name, len(p.got), len(states), b.String())
}

// matches reports whether the traversal's items agree, slot by slot, with
// the state st.
func (p *churnPager[T]) matches(st [][]int) bool {
	for s, vs := range st {
		if !slices.ContainsFunc(vs, func(v int) bool { return slices.Equal(p.o.items[s][v], p.slotItems[s]) }) {
			return false
		}
	}
	return true
}

// stepper is a churnPager of any item type.
type stepper interface {
	step(t *testing.T) stepOutcome
	delay() time.Duration // the pause before its next page
	mustRefusals() int    // pages movedSince said had to be refused
	String() string
}

func (p *churnPager[T]) delay() time.Duration { return p.pause() }

func (p *churnPager[T]) mustRefusals() int { return p.mustRefuse }

// TestRealTreeChurn pages search_text, search_files and list_directory
// through the worker and the supervisor, at full speed and with random
// pauses, over a copy of GOROOT/src/net that a goroutine keeps changing,
// then, once the changes stop, once more to the end.
func TestRealTreeChurn(t *testing.T) {
	ripgrep(t)
	base := t.TempDir()
	root, spare, side := filepath.Join(base, "net"), filepath.Join(base, "spare"), filepath.Join(base, "versions")
	src := realDir(t, filepath.Join(goEnv(t, "GOROOT"), "src", "net"), "the Go distribution, from `go env GOROOT`")
	if out, err := exec.Command("cp", "-a", src, root).CombinedOutput(); err != nil {
		t.Fatalf("cp -a %s %s: %v\n%s", src, root, err, out)
	}
	for _, d := range []string{spare, side} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	served := servedFiles(runFind(t, root, ""))
	slots := churnSlots(t, root, served)
	untouched := slices.DeleteFunc(slices.Clone(served), func(f string) bool { return slotPaths(slots)[f] })
	c := newChurner(root, spare, slots)

	oracles := churnOracles(t, root, side, slots, untouched)
	sup := startSupervisor(t, writeManifest(t, rootSpec{name: "churn", path: root}), buildSupervisorBins(t).worker)
	servers := []*realServer{realWorker(t, root), supervisedRoot(t, sup, "churn")}
	var pagers []stepper
	var nextAt []time.Time
	for i, o := range oracles {
		for j, s := range servers {
			pace := fullSpeed
			if (i+j)%2 == 1 {
				pace = pacing{name: "random pauses", seed: uint64(10*i + j + 1)}
			}
			pagers = append(pagers, o(s, c, pace))
			nextAt = append(nextAt, time.Now())
		}
	}

	stop := make(chan struct{})
	changes := make(chan int, 1)
	go func() { changes <- c.run(stop, 1) }()
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
			<-changes
		}
	}()
	churnFor := 8 * time.Second
	if testing.Short() {
		churnFor = 3 * time.Second
	}
	// One page at a time, of the pager whose pause ends first.
	for end := time.Now().Add(churnFor); time.Now().Before(end); {
		i := 0
		for j := range nextAt {
			if nextAt[j].Before(nextAt[i]) {
				i = j
			}
		}
		time.Sleep(time.Until(nextAt[i]))
		pagers[i].step(t)
		nextAt[i] = time.Now().Add(pagers[i].delay())
	}
	close(stop)
	n := <-changes
	if err := c.failed(); err != nil {
		t.Fatalf("changing the copy: %v", err)
	}
	// Quiet now: each tool's traversal completes, at the latest after
	// one refusal of the cursor it held.
	var mustRefuse int
	for _, p := range pagers {
		refusals := 0
	pages:
		for i := 0; ; i++ {
			switch p.step(t) {
			case stepCompleted:
				break pages
			case stepRefused:
				if refusals++; refusals > 1 {
					t.Fatalf("%s: refused as changed twice once the changes stopped", p)
				}
			}
			if i > 5000 {
				t.Fatalf("%s: no end after 5000 pages once the changes stopped", p)
			}
		}
		mustRefuse += p.mustRefusals()
		t.Logf("figures: realtree churn %s (%d changes meanwhile)", p, n)
	}
	// The changes met traversals under way so that some pages had to be
	// refused: the case was set up.
	if mustRefuse == 0 {
		t.Fatalf("%d changes, and no page had to be refused as changed: the changes met no traversal", n)
	}
}

// churnSlots picks the files the changes touch: in each tenth of the path
// order, the largest text file among its first ten, renamed alternately
// earlier and later in the order; and three files the changes create, at
// the top of the order, in a folder half way down, and at the end.
func churnSlots(t *testing.T, root string, served []string) []churnSlot {
	t.Helper()
	if len(served) < 100 {
		t.Fatalf("fixture: the copy serves %d files, want 100 or more", len(served))
	}
	var slots []churnSlot
	taken := map[string]bool{}
	for i := range 10 {
		var pick string
		var body []byte
		for _, f := range served[i*len(served)/10:][:10] {
			b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f)))
			if err != nil {
				t.Fatal(err)
			}
			if !taken[f] && len(b) > len(body) && !skippedAsBinary(b[:min(len(b), binaryHead)], int64(len(b))) {
				pick, body = f, b
			}
		}
		if pick == "" {
			t.Fatalf("fixture: no text file among %v", served[i*len(served)/10:][:10])
		}
		taken[pick] = true
		slots = append(slots, existingSlot(pick, body, i%2 == 0))
	}
	middle := path.Dir(served[len(served)/2]) + "/"
	if middle == "./" {
		middle = ""
	}
	slots = append(slots, newSlot("0churn-new.go"), newSlot(middle+"churn-new.go"), newSlot("zz-churn-new.go"))
	for p := range slotPaths(slots) {
		if _, err := os.Lstat(filepath.Join(root, filepath.FromSlash(p))); err == nil && !taken[p] {
			t.Fatalf("fixture: %s, a path the changes create, exists in the copy", p)
		}
	}
	return slots
}

// slotPaths are every path a slot's versions are at.
func slotPaths(slots []churnSlot) map[string]bool {
	out := map[string]bool{}
	for _, s := range slots {
		for _, v := range s.versions {
			if v.path != "" {
				out[v.path] = true
			}
		}
	}
	return out
}

// churnOracle's constructors: one per tool and arguments, each building
// a pager for a server.
type churnOracleFor func(s *realServer, c *churner, pace pacing) stepper

func pagerFor[T realItem](o *churnOracle[T]) churnOracleFor {
	return func(s *realServer, c *churner, pace pacing) stepper {
		return &churnPager[T]{name: fmt.Sprintf("%s %v through the %s at %s", o.tool, o.args, s.kind, pace.name), o: o, srv: s, c: c, pause: pace.pauses()}
	}
}

// churnOracles builds the oracles of the traversals the test pages: two
// searches of text, one of paths, and the listing of the copy's top
// folder, with limits that make them take many pages.
func churnOracles(t *testing.T, root, side string, slots []churnSlot, untouched []string) []churnOracleFor {
	t.Helper()
	// Every version's bytes, for rg: side/<slot>/<version>.
	for s, sl := range slots {
		for v, ver := range sl.versions {
			if ver.path != "" {
				writeFile(t, filepath.Join(side, fmt.Sprint(s), fmt.Sprint(v)), string(ver.body))
			}
		}
	}
	var out []churnOracleFor
	for i, q := range []realSearch{{terms: []string{"func "}}, {terms: []string{"EOF", "timeout"}, fold: true}} {
		args := q.args("")
		args["limit"] = []int{200, 60}[i]
		out = append(out, pagerFor(newChurnOracle("search_text", args, compareHits, churnRequiredHits(t, root, q, untouched), churnVersionHits(t, side, q, slots))))
	}
	files := realSearch{terms: []string{".go"}}
	args := files.args("")
	args["limit"] = 20
	items := versionItems(slots, func(p string) []pathHit { return wantFoundPaths([]string{p}, files.terms, false) })
	byPath := func(a, b pathHit) int { return strings.Compare(a.Path, b.Path) }
	out = append(out, pagerFor(newChurnOracle("search_files", args, byPath, wantFoundPaths(untouched, files.terms, false), items)))

	list := wantListing(untouched, "")
	entries := versionItems(slots, func(p string) []entryItem {
		if strings.Contains(p, "/") {
			return nil
		}
		return []entryItem{{Name: p, Kind: "file", Path: p}}
	})
	for p := range slotPaths(slots) {
		top, _, deeper := strings.Cut(p, "/")
		if deeper && !slices.Contains(list, entryItem{Name: top, Kind: "directory", Path: top}) {
			t.Fatalf("fixture: the folder %s holds only files the changes touch, so its listing would change too", top)
		}
	}
	byName := func(a, b entryItem) int { return strings.Compare(a.Name, b.Name) }
	out = append(out, pagerFor(newChurnOracle("list_directory", map[string]any{"path": "", "limit": 20}, byName, list, entries)))
	return out
}

// versionItems is each slot version's items: of for its path, nothing
// where it holds no file.
func versionItems[T any](slots []churnSlot, of func(p string) []T) [][][]T {
	out := make([][][]T, len(slots))
	for s, sl := range slots {
		out[s] = make([][]T, len(sl.versions))
		for v, ver := range sl.versions {
			if ver.path != "" {
				out[s][v] = of(ver.path)
			}
		}
	}
	return out
}

// churnRequiredHits is what search_text finds in the files no change
// touches, as the copy was made.
func churnRequiredHits(t *testing.T, root string, q realSearch, untouched []string) []textHit {
	t.Helper()
	keep := map[string]bool{}
	for _, f := range untouched {
		keep[f] = true
	}
	rg := runRipgrep(t, root, "", q.terms, q.fold)
	hits := wantTextHits(t, rg.lines, func(rel string) ([]byte, int64, error) { return fileHead(filepath.Join(root, rel)) })
	return slices.DeleteFunc(hits, func(h textHit) bool { return !keep[h.Path] })
}

// churnVersionHits is what search_text finds in each slot version, from
// rg over the versions' bytes written under side.
func churnVersionHits(t *testing.T, side string, q realSearch, slots []churnSlot) [][][]textHit {
	t.Helper()
	rg := runRipgrep(t, side, "", q.terms, q.fold)
	hits := wantTextHits(t, rg.lines, func(rel string) ([]byte, int64, error) { return fileHead(filepath.Join(side, rel)) })
	out := versionItems(slots, func(string) []textHit { return nil })
	for _, h := range hits {
		var s, v int
		if _, err := fmt.Sscanf(h.Path, "%d/%d", &s, &v); err != nil {
			t.Fatalf("rg named %s under %s", h.Path, side)
		}
		h.Path = slots[s].versions[v].path
		out[s][v] = append(out[s][v], h)
	}
	return out
}
