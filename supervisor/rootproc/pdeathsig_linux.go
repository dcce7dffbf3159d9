//go:build !fsmcp_portable

package rootproc

import (
	"os/exec"
	"syscall"
)

// setParentDeath asks the kernel to SIGKILL the worker when the supervisor
// dies, so no worker outlives a killed supervisor. The worker also gets its
// own process group, so a signal sent to the supervisor's group (a host
// stopping it, a terminal's Ctrl-C) reaches the supervisor alone, which then
// lets calls in flight finish before it stops the workers.
func setParentDeath(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}
