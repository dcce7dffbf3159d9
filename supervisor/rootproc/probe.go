package rootproc

import (
	"context"
	"encoding/json"
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
// worker while it waited: a worker answering calls is busy, not stuck.
// A call stuck in the kernel alone does not stop the worker answering
// pings; the call's own timeout ends that call.
const (
	ProbeInterval   = 500 * time.Millisecond
	ProbeTimeout    = time.Second
	MaxMissedProbes = 3
)

// probe watches the worker behind rl until rl closes. While no call is
// pending and none timed out it sleeps until one is sent or times out, so
// an idle supervisor does not wake.
func (p *Proc) probe(rl *relay.Relay, proc *os.Process) {
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
		sent := time.Now()
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
		case rl.ReadSince(sent):
			// Late, but the worker answered something meanwhile: busy,
			// not stuck.
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
		return
	}
}
