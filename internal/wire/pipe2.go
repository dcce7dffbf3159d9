//go:build linux || freebsd

package wire

import "syscall"

// pipeCloexec makes a pipe whose ends are closed on exec.
func pipeCloexec(p []int) error { return syscall.Pipe2(p, syscall.O_CLOEXEC) }
