package rootproc

import (
	"os/exec"
	"syscall"
	"time"

	"github.com/hashicorp/go-plugin"
)

// exitWait bounds how long a killed worker is waited for before the
// supervisor goes on without it. SIGKILL ends a running or stopped
// (SIGSTOP) process at once; a process in a frozen cgroup v1 freezer
// (`docker pause` on such a host) takes it only once its cgroup is thawed,
// and waits in the kernel until then. Its root is not held for it: a new
// worker starts, and the old process is reaped in the background when it
// goes.
const exitWait = 500 * time.Millisecond

// kill ends the current worker, if any, and reports the process it ended:
// its pid and how it exited ("" when there was none).
func (p *Proc) kill() (pid int, status string) {
	p.mu.Lock()
	client, session, rl, cmd, release := p.client, p.session, p.relay, p.cmd, p.release
	p.client, p.session, p.relay, p.release = nil, nil, nil, nil
	p.mu.Unlock()
	if client == nil {
		return 0, ""
	}
	// SIGKILL first: go-plugin's Kill would send a shutdown RPC to a
	// worker that may be frozen and wait for it; a dead one answers
	// nothing and is reaped at once. Workers keep no state to save.
	killProcess(cmd)
	pid = cmd.Process.Pid
	// Closing the call channel fails the calls waiting on it and ends a
	// write the worker does not read.
	_ = rl.Close()
	status = "killed, not yet gone (a frozen cgroup holds it until thawed)"
	if reap(client, release, func() { _ = session.Close() }) && cmd.ProcessState != nil {
		status = cmd.ProcessState.String()
	}
	return pid, status
}

// reap ends go-plugin's client of a worker already sent SIGKILL, after
// first (the closing of what else the supervisor holds of it, or nil): it
// waits up to exitWait for the process to be gone, then lets go of the
// thread that forked it (see clientOnOwnThread). A process not gone by
// then is left to finish all that in the background; reap reports whether
// it was gone, so that cmd.ProcessState may be read.
func reap(client *plugin.Client, release func(), first func()) bool {
	gone := make(chan struct{})
	go func() {
		if first != nil {
			first()
		}
		// Kill returns once go-plugin's wait on the process is over.
		client.Kill()
		release()
		close(gone)
	}()
	select {
	case <-gone:
		return true
	case <-time.After(exitWait):
		return false
	}
}

// killProcess sends SIGKILL to cmd's process, if it was started.
func killProcess(cmd *exec.Cmd) {
	if cmd != nil && cmd.Process != nil {
		_ = cmd.Process.Signal(syscall.SIGKILL)
	}
}

func (p *Proc) stop() {
	p.mu.Lock()
	if p.state != Failed {
		p.state = Stopped
	}
	p.mu.Unlock()
	if pid, status := p.kill(); pid != 0 {
		p.cfg.Logger.Info("worker stopped", "pid", pid, "status", status)
	}
}

// KillNow sends SIGKILL to the current worker and waits for nothing: the
// last step of a stop that ran out of time.
func (p *Proc) KillNow() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.client != nil {
		killProcess(p.cmd)
	}
}

// Stop ends the worker without restarting it (used when startup of another
// root fails before Run).
func (p *Proc) Stop() { p.stop() }
