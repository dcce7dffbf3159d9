package worker

import (
	"runtime"
	"sync"
	"time"
)

// searchProcs is how many goroutines a search page may scan on while it
// scans ahead, where the process runs with fewer Ps (SetSearchProcs).
var searchProcs struct {
	mu     sync.Mutex
	want   int // scanning goroutines; below 2: leave GOMAXPROCS alone
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

// SetSearchProcs lets each search_text page scan on n goroutines (at most
// the number of CPUs) while it scans files ahead, with GOMAXPROCS raised to
// one more than that; it is set back procsLinger after the last such page
// ends. A worker runs with one P (see cmd/fsmcp-worker); this lets its
// searches use a second core.
//
// The P beyond the scanning goroutines is the connection's. Its reader
// waits for the next request on the runtime's network poller, which a P
// only polls when it has nothing else to run (or the system monitor, after
// 10 ms): were every P scanning, a request that arrives while the next page
// is scanned ahead would wait until the scans ran out of files, a page or
// two later. A P left over sits in the poller and takes it at once.
func SetSearchProcs(n int) {
	searchProcs.mu.Lock()
	defer searchProcs.mu.Unlock()
	searchProcs.want = min(n, runtime.NumCPU())
}

// raiseProcs raises GOMAXPROCS as SetSearchProcs allows, for as long as
// the returned func is not called (and procsLinger after). scanners is how
// many goroutines a page may scan on meanwhile: SetSearchProcs's count
// where it raised GOMAXPROCS, else GOMAXPROCS.
func raiseProcs() (release func(), scanners int) {
	p := &searchProcs
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.raised {
		cur := runtime.GOMAXPROCS(0)
		if p.want < 2 || p.want+1 <= cur {
			return func() {}, cur
		}
		p.base, p.raised = cur, true
		runtime.GOMAXPROCS(p.want + 1)
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
	}, p.want
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
