package rootproc

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"syscall"
	"time"

	"github.com/fsmcp/fsmcp/supervisor/relay"
)

// Health probes: while calls to a worker are pending, or since one of
// them ran past its timeout, the worker is sent a ping over its call
// channel every ProbeInterval, each with ProbeTimeout to be answered. A
// worker that misses MaxMissedProbes in a row is stuck (stopped, frozen, or
// too wedged to answer a ping): it is killed and restarted like a crashed
// one, and meanwhile its tools fail at once, saying it is not responding.
// A late probe does not count as missed if anything else came from the
// worker while it waited: a worker answering calls is busy, not stuck. Nor
// does one still queued behind a long request the worker was reading
// meanwhile. A probe never waits behind a request the worker does not
// read (a frozen worker's full pipe): it is dropped unsent at its timeout
// and counts as missed. A call stuck in the kernel alone does not stop
// the worker answering pings; the call's own timeout ends that call.
const (
	ProbeInterval   = 500 * time.Millisecond
	ProbeTimeout    = time.Second
	MaxMissedProbes = 3
)

// probe watches the worker behind rl until rl closes. While no call is
// pending and none timed out it sleeps until one is sent or times out, so
// an idle supervisor does not wake. A worker found stuck is sent SIGKILL
// and hung is closed, so Run replaces it even if it does not die (see
// exitWait).
func (p *Proc) probe(rl *relay.Relay, proc *os.Process, hung chan<- struct{}) {
	tick := time.NewTimer(ProbeInterval)
	defer tick.Stop()
	missed := 0
	for {
		if rl.Pending() == 0 && !p.suspect.Load() {
			missed = 0
			select {
			case <-rl.Done():
				return
			case <-rl.Sent():
			case <-p.timedOut:
			}
			tick.Reset(ProbeInterval)
		}
		select {
		case <-rl.Done():
			return
		case <-tick.C:
		}
		tick.Reset(ProbeInterval)
		if rl.Pending() == 0 && !p.suspect.Load() {
			continue
		}
		sent, wrote := time.Now(), rl.Wrote()
		ctx, cancel := context.WithTimeout(context.Background(), ProbeTimeout)
		_, err := rl.Call(ctx, "ping", json.RawMessage(`{}`))
		late := ctx.Err() != nil
		cancel()
		switch {
		case err == nil:
			missed = 0
			p.suspect.Store(false)
			continue
		case !late:
			return // the channel ended: the worker exited, Run takes over
		case rl.ReadSince(sent), errors.Is(err, relay.ErrUnsent) && rl.Wrote() > wrote:
			// Late, but the worker answered something meanwhile, or
			// read the requests queued before the probe: busy, not
			// stuck.
			missed = 0
			continue
		}
		if missed++; missed < MaxMissedProbes {
			continue
		}
		p.mu.Lock()
		current := p.relay == rl
		if current && p.state == Ready {
			p.state = NotResponding
		}
		p.mu.Unlock()
		if !current {
			return
		}
		p.cfg.Logger.Error("worker not responding; killing it", "pid", proc.Pid, "missed_probes", missed, "probe_timeout", ProbeTimeout.String())
		_ = proc.Signal(syscall.SIGKILL)
		close(hung)
		return
	}
}
