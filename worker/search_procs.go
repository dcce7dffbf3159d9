package worker

import (
	"runtime"
	"sync"
	"time"
)

// searchProcs is how many Ps a search page may run on while it scans ahead,
// where the process runs with fewer (SetSearchProcs).
var searchProcs struct {
	mu     sync.Mutex
	want   int // 0: leave GOMAXPROCS alone
	users  int // pages scanning ahead
	raised bool
	base   int         // GOMAXPROCS before it was raised
	lower  *time.Timer // sets base back once no page has used it for procsLinger
}

// procsLinger is how long GOMAXPROCS stays raised after the last page that
// scanned ahead: the pages of one search follow each other closely, and
// changing GOMAXPROCS stops the world (20-150 us a change on the 2-core VM
// under load), so a search pays it about once, not twice a page.
const procsLinger = 50 * time.Millisecond

// SetSearchProcs lets each search_text page raise GOMAXPROCS to n (at most
// the number of CPUs) while it scans files ahead; it is set back
// procsLinger after the last such page ends. A worker launched by the
// supervisor runs with one P (see cmd/fsmcp-worker); this lets its
// searches use a second core.
func SetSearchProcs(n int) {
	searchProcs.mu.Lock()
	defer searchProcs.mu.Unlock()
	searchProcs.want = min(n, runtime.NumCPU())
}

// raiseProcs raises GOMAXPROCS as SetSearchProcs allows, for as long as
// the returned func is not called (and procsLinger after).
func raiseProcs() func() {
	p := &searchProcs
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
			p.lower = time.AfterFunc(procsLinger, lowerProcs)
		}
	}
}

// lowerProcs sets GOMAXPROCS back once no page uses the raised count.
func lowerProcs() {
	p := &searchProcs
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.users == 0 && p.raised && p.lower != nil {
		runtime.GOMAXPROCS(p.base)
		p.raised, p.lower = false, nil
	}
}
