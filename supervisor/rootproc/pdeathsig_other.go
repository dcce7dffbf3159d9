//go:build !linux

package rootproc

import "os/exec"

// setParentDeath has no portable equivalent outside Linux; workers there
// end when their plugin connection closes.
func setParentDeath(*exec.Cmd) {}
