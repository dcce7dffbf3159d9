//go:build darwin || freebsd

package manifest

import "golang.org/x/sys/unix"

// argLimit is the room for a worker's arguments: the kernel's kern.argmax
// (what sysconf(_SC_ARG_MAX) reports; 1 MiB on macOS), less envReserve.
func argLimit() int {
	limit := uint32(minArgMax)
	if n, err := unix.SysctlUint32("kern.argmax"); err == nil && n > limit {
		limit = n
	}
	return int(limit) - envReserve
}
