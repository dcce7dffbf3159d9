// Package procs lets a process that runs Go code on fewer Ps than it has
// cores take more while work that splits across goroutines goes on (a
// search page scanning files ahead, a walk on two goroutines): Allow says
// how many, Raise holds them for as long as the work lasts, and the count
// goes back Linger after the last holder lets go.
package procs

import (
	"runtime"
	"sync"
	"time"
)

// Linger is how long GOMAXPROCS stays raised after the last holder lets
// go: the pages of one search follow each other closely, and changing
// GOMAXPROCS stops the world (20-150 us a change on a 2-core VM under
// load), so a search pays it about once, not twice a page.
const Linger = 50 * time.Millisecond

// state is the process's one raise: GOMAXPROCS is process-wide.
var state struct {
	mu     sync.Mutex
	want   int // 0: leave GOMAXPROCS alone
	users  int // holders of the raise
	raised bool
	base   int         // GOMAXPROCS before it was raised
	lower  *time.Timer // sets base back once no holder has used it for Linger
}

// Allow lets each Raise take GOMAXPROCS to n (at most the number of
// CPUs); 0 lets it change nothing.
func Allow(n int) {
	state.mu.Lock()
	defer state.mu.Unlock()
	state.want = min(n, runtime.NumCPU())
}

// Raise raises GOMAXPROCS as Allow lets it, for as long as the returned
// func is not called (and Linger after). Where GOMAXPROCS is already as
// high, it changes nothing.
func Raise() (release func()) {
	p := &state
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.raised {
		cur := runtime.GOMAXPROCS(0)
		if p.want <= cur {
			return func() {}
		}
		p.base, p.raised = cur, true
		runtime.GOMAXPROCS(p.want)
	}
	if p.lower != nil {
		p.lower.Stop()
		p.lower = nil
	}
	p.users++
	return func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.users--; p.users == 0 {
			p.lower = time.AfterFunc(Linger, lower)
		}
	}
}

// lower sets GOMAXPROCS back once no holder uses the raised count.
func lower() {
	p := &state
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.users == 0 && p.raised && p.lower != nil {
		runtime.GOMAXPROCS(p.base)
		p.raised, p.lower = false, nil
	}
}
