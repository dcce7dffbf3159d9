package rootproc

import (
	"os/exec"
	"syscall"
)

// setParentDeath asks the kernel to SIGKILL the worker when the supervisor
// dies, so no worker outlives a killed supervisor.
func setParentDeath(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
