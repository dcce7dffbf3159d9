package manifest

import "golang.org/x/sys/unix"

// argLimit is the room for a worker's arguments: a quarter of this
// process's stack limit (what sysconf(_SC_ARG_MAX) reports), within the
// kernel's bounds, less envReserve. The supervisor's workers inherit its
// limit, so check measures with its own.
func argLimit() int {
	limit := uint64(maxArgMax)
	var rl unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_STACK, &rl) == nil && rl.Cur != unix.RLIM_INFINITY {
		limit = min(limit, rl.Cur/4)
	}
	return int(max(limit, minArgMax)) - envReserve
}
