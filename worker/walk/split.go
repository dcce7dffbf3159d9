package walk

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/fsmcp/fsmcp/worker/confine"
	"github.com/fsmcp/fsmcp/worker/procs"
	"github.com/fsmcp/fsmcp/worker/relpath"
)

// A split walk inventories a text-search scope (inventoryScope) on two
// goroutines where the scope is big: on this kind of machine nearly all of
// a cold walk is system calls (open, watch, getdents, and one fstatat a
// file), which a second core can share. It gives the answer the sequential
// walk (eachFile) gives, in the same order:
//
//   - The scope and the levels below it are read first, each directory as
//     eachFile reads it (charged, watched, read, sorted), until a level
//     holds splitJobs directories or splitLevels levels are read. What is
//     left is a list of jobs in path order: the subtree of a directory, or
//     a run of consecutive files of one directory.
//   - The calling goroutine does the jobs in order. Once it has gone
//     through splitAfter entries and jobs are left, a second goroutine
//     (with GOMAXPROCS raised, see procs.Raise) takes jobs too; each job's
//     files go to a slice of its own, and the slices are joined in job
//     order. A small scope never starts the second goroutine.
//   - Both goroutines charge one set of counts and add to one watch set
//     in turn (sharedWatch); a refused watch ends watching for both.
//   - If it fails in any way, the split walk is forgotten and the scope is
//     walked again sequentially, from the same counts: which error a call
//     gets (a ceiling, an unreadable directory, its cancellation) never
//     depends on how the two goroutines were scheduled.
//
// Splitting each directory's stats between two goroutines does not help:
// waking the second thread for each directory costs what the stats do.
// Here each hand-off is a subtree.
const (
	// splitJobs is how many subtrees the first levels are read for.
	splitJobs = 16
	// splitLevels bounds how many levels are read to find them.
	splitLevels = 3
	// splitFiles is the most files one job of consecutive files holds.
	splitFiles = 64
	// splitAfter is how many entries the calling goroutine goes through
	// before a second one joins it.
	splitAfter = 1000
)

// walkSplit tunes a split walk.
type walkSplit struct {
	after int64 // entries gone through before a second goroutine starts
	// force starts the second goroutine even where GOMAXPROCS stays 1
	// (tests, so that they split on any machine).
	force bool
	// done, if set, is called by the calling goroutine after each job it
	// did (tests, to cancel a walk midway).
	done func()
}

// walkJob is one piece of a split walk: the subtree of one directory entry
// of d, or a run of file entries of d (es), d being the directory at dir.
// The scope itself is a job whose directory is already open (open).
type walkJob struct {
	d    *confine.Dir
	dir  string
	es   []entry
	open *confine.Dir
}

// inventoryFile returns the fn of eachFile that appends to files the
// served files w finds, each with its identity: a file with more than one
// link is watched, then stat'ed again (see inventoryScope).
func (w *Walk) inventoryFile(files *[]File) func(d *confine.Dir, path, name string, st *confine.Identity) error {
	return func(d *confine.Dir, path, name string, st *confine.Identity) error {
		if err := w.ctx.Err(); err != nil {
			return err
		}
		var id confine.Identity // a value: a pointer to it would escape
		have := st != nil
		if have {
			id = *st
		}
		for watched := false; ; watched = true {
			if !have {
				got, err := d.Stat(name)
				if err != nil && !gone(err) {
					return errUnreadable
				}
				if err != nil || got.Kind() != confine.KindFile {
					return nil
				}
				id, have = got, true
			}
			if watched || id.Nlink == 1 || !w.watchEntry(d, name) {
				break
			}
			have = false // stat'ed before its own watch: stat again
		}
		*files = append(*files, File{Path: path, ID: id})
		return nil
	}
}

// inventory returns every served file below the directory d at dir in
// path order, with its identity: a split walk, or after any failure of
// one, a sequential walk from the counts it started with.
func (w *Walk) inventory(d *confine.Dir, dir string, sp walkSplit) ([]File, error) {
	files0, dirs0, entries0 := w.n.files.Load(), w.n.dirs.Load(), w.n.entries.Load()
	files, _, err := w.split(d, dir, sp)
	if err == nil {
		return files, nil
	}
	w.n.files.Store(files0)
	w.n.dirs.Store(dirs0)
	w.n.entries.Store(entries0)
	files = nil
	err = w.eachFile(d, dir, w.inventoryFile(&files))
	return files, err
}

// split is the split walk of inventory; it reports whether a second
// goroutine took part. When it returns, every goroutine it started has
// ended, and w.watch is what is left of the shared set.
func (w *Walk) split(d *confine.Dir, dir string, sp walkSplit) ([]File, bool, error) {
	ctx, cancel := context.WithCancel(w.ctx)
	defer cancel()
	shared := &sharedWatch{set: w.watch}
	defer func() { w.watch = shared.set }()
	var opened []*confine.Dir
	defer func() {
		for _, o := range opened {
			o.Close()
		}
	}()
	first := &Walk{t: w.t, ctx: ctx, n: w.n, shared: shared}
	jobs, err := first.expand(d, dir, &opened)
	if err != nil {
		return nil, false, err
	}
	out := make([][]File, len(jobs))
	var next atomic.Int64
	var wg sync.WaitGroup
	var secondErr error
	tried, started := false, false
	start := func() {
		if tried || first.visited < sp.after || int(next.Load()) >= len(jobs) {
			return
		}
		tried = true
		release := procs.Raise()
		if runtime.GOMAXPROCS(0) < 2 && !sp.force {
			release()
			return
		}
		started = true
		second := &Walk{t: w.t, ctx: ctx, n: w.n, shared: shared}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer release()
			if secondErr = second.runJobs(jobs, out, &next, nil); secondErr != nil {
				cancel()
			}
		}()
	}
	between := start
	if sp.done != nil {
		between = func() { sp.done(); start() }
	}
	firstErr := first.runJobs(jobs, out, &next, between)
	if firstErr != nil {
		cancel()
	}
	wg.Wait()
	if err := errors.Join(firstErr, secondErr); err != nil {
		return nil, started, err
	}
	return joinJobs(out, started), started, nil
}

// joinSplitAt is the fewest files joinJobs copies on two goroutines.
const joinSplitAt = 16384

// joinJobs concatenates the jobs' files. Its slice is fresh memory, and
// on a VM a first touch of a page can cost 15-20 µs (the 100k
// inventory's 7 MB took 50-80 ms to copy on one goroutine), so when the
// walk ran on two goroutines and the files are many, a second goroutine
// copies the second half of the jobs meanwhile.
func joinJobs(out [][]File, two bool) []File {
	n := 0
	for _, o := range out {
		n += len(o)
	}
	files := make([]File, n)
	copyJobs := func(jobs [][]File, at int) {
		for _, o := range jobs {
			at += copy(files[at:], o)
		}
	}
	if !two || n < joinSplitAt {
		copyJobs(out, 0)
		return files
	}
	half, at := 0, 0
	for half < len(out) && at < n/2 {
		at += len(out[half])
		half++
	}
	release := procs.Raise()
	defer release()
	done := make(chan struct{})
	go func() {
		defer close(done)
		copyJobs(out[half:], at)
	}()
	copyJobs(out[:half], 0)
	<-done
	return files
}

// expand reads the directory d at dir (open and charged) and the levels
// below it as eachFile would, until a level holds splitJobs directories or
// splitLevels levels are read, and returns the rest of the walk as jobs in
// path order. The directories it opens are added to opened.
func (w *Walk) expand(d *confine.Dir, dir string, opened *[]*confine.Dir) ([]walkJob, error) {
	jobs := []walkJob{{dir: dir, open: d}}
	for range splitLevels {
		subtrees := 0
		for _, j := range jobs {
			if j.open != nil || j.es[0].kind == confine.KindDir {
				subtrees++
			}
		}
		if subtrees == 0 || subtrees >= splitJobs {
			break
		}
		var next []walkJob
		for _, j := range jobs {
			if j.open == nil && j.es[0].kind != confine.KindDir {
				next = append(next, j)
				continue
			}
			sub, path := j.open, j.dir
			if sub == nil {
				var err error
				path = relpath.Join(j.dir, j.es[0].name)
				if sub, err = w.enter(j.d, path); err != nil {
					return nil, err
				}
				if sub == nil {
					continue // gone: nothing in it is there
				}
				*opened = append(*opened, sub)
			}
			w.watchWith(sub.Watch)
			es, err := w.readDir(sub, path)
			if err != nil {
				return nil, err
			}
			run := -1 // the job in next of the files being gathered
			for i, e := range es {
				if err := w.visit(); err != nil {
					return nil, err
				}
				switch {
				case e.kind == confine.KindDir:
					run = -1
					if !w.t.sel.PruneDir(relpath.Join(path, e.name)) {
						next = append(next, walkJob{d: sub, dir: path, es: es[i : i+1]})
					}
				case run >= 0 && len(next[run].es) < splitFiles:
					next[run].es = es[i-len(next[run].es) : i+1]
				default:
					run = len(next)
					next = append(next, walkJob{d: sub, dir: path, es: es[i : i+1]})
				}
			}
		}
		jobs = next
	}
	return jobs, nil
}

// runJobs does the jobs not yet taken (next is the first), one after the
// other, until none is left or one fails, putting each job's files in its
// slot of out; between two jobs it calls between, if not nil.
func (w *Walk) runJobs(jobs []walkJob, out [][]File, next *atomic.Int64, between func()) error {
	for {
		i := int(next.Add(1) - 1)
		if i >= len(jobs) {
			return nil
		}
		if err := w.runJob(jobs[i], &out[i]); err != nil {
			return err
		}
		if between != nil {
			between()
		}
	}
}

// runJob walks one job as eachFile would, appending its files to files.
func (w *Walk) runJob(j walkJob, files *[]File) error {
	fn := w.inventoryFile(files)
	if j.open != nil {
		return w.eachFile(j.open, j.dir, fn)
	}
	if j.es[0].kind == confine.KindDir {
		path := relpath.Join(j.dir, j.es[0].name)
		sub, err := w.enter(j.d, path)
		if err != nil || sub == nil {
			return err
		}
		defer sub.Close()
		return w.eachFile(sub, path, fn)
	}
	for _, e := range j.es {
		if err := w.visit(); err != nil {
			return err
		}
		if err := w.serveFile(j.d, j.dir, e.name, fn); err != nil {
			return err
		}
	}
	return nil
}
