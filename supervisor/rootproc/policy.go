package rootproc

import "time"

// policy is the restart policy of one root: exponential backoff from
// BackoffMin to BackoffMax, reset once a worker has stayed up for
// HealthyAfter, and failure after more than MaxCrashes crashes within
// CrashWindow.
type policy struct {
	backoff time.Duration
	crashes []time.Time
}

// crash records a crash at now of a worker that had been up for up. It
// returns how long to wait before restarting, or failed with the number of
// crashes in the window.
func (p *policy) crash(now time.Time, up time.Duration) (delay time.Duration, failed bool, n int) {
	if p.backoff == 0 || up >= HealthyAfter {
		p.backoff = BackoffMin
	}
	kept := p.crashes[:0]
	for _, t := range p.crashes {
		if now.Sub(t) < CrashWindow {
			kept = append(kept, t)
		}
	}
	p.crashes = append(kept, now)
	if len(p.crashes) > MaxCrashes {
		return 0, true, len(p.crashes)
	}
	delay = p.backoff
	p.backoff = min(p.backoff*2, BackoffMax)
	return delay, false, len(p.crashes)
}

// startFailure returns how long to wait before trying again to start a
// worker that could not be started at all (its binary is missing or not
// executable). It backs off like a crash but is not counted as one: the
// root is never marked failed for it.
func (p *policy) startFailure() time.Duration {
	if p.backoff == 0 {
		p.backoff = BackoffMin
	}
	delay := p.backoff
	p.backoff = min(p.backoff*2, BackoffMax)
	return delay
}
