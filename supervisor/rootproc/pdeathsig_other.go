//go:build !linux || fsmcp_portable

package rootproc

import (
	"os/exec"
	"syscall"
)

// setParentDeath gives the worker its own process group, so a signal sent
// to the supervisor's group (a host stopping it, a terminal's Ctrl-C)
// reaches the supervisor alone. There is no parent-death signal outside
// Linux: a worker stops with its supervisor when its call channel's
// requests end, which the system makes happen when the supervisor dies
// (wire.Serve).
func setParentDeath(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}
