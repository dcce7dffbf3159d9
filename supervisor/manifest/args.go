package manifest

import "fmt"

// Bounds of a worker's command line on Linux (fs/exec.c and
// include/uapi/linux/binfmts.h): execve refuses with E2BIG beyond them, so
// a root whose arguments exceed them could never start.
const (
	// maxArgStrlen is MAX_ARG_STRLEN, the longest single argument.
	maxArgStrlen = 32 * 4096
	// minArgMax is what the kernel allows whatever the stack limit.
	minArgMax = 32 * 4096
	// maxArgMax is three quarters of the 8 MiB _STK_LIM, the most it allows.
	maxArgMax = 6 << 20
	// envReserve is kept for the worker's path and the environment the
	// supervisor and go-plugin give it (a cursor key, the handshake).
	envReserve = 8192
)

// argBytes is what args take of the limit: each string with its NUL, and a
// pointer to it.
func argBytes(args []string) int {
	n := 0
	for _, a := range args {
		n += len(a) + 1 + 8
	}
	return n
}

func longestArg(args []string) int {
	n := 0
	for _, a := range args {
		n = max(n, len(a))
	}
	return n
}

// What a root costs, measured with `fsmcp-supervisor` on 1 and on 17 idle
// roots (docs/performance.md): each root is an idle fsmcp-worker process of
// about 20 MiB resident, about 5 MiB of it its own (PSS: the rest is the
// binary's pages, shared between workers), plus about 0.6 MiB in the
// supervisor.
const (
	ManyRoots         = 64
	rootRSSMiB        = 20
	rootOwnMiB        = 5
	supervisorRootKiB = 600
)

// Warning is a caution about m that is not an error, or "": more than
// ManyRoots roots, with the memory they take.
func (m *Manifest) Warning() string {
	n := len(m.Roots)
	if n <= ManyRoots {
		return ""
	}
	perRoot := float64(rootRSSMiB) + float64(supervisorRootKiB)/1024
	return fmt.Sprintf("%d roots, more than %d: each root is an idle worker process of about %d MiB resident (%d MiB of it its own) plus %d KiB in the supervisor, so these take about %.1f GiB resident (%.1f GiB not shared); consider fewer, broader roots or several manifests",
		n, ManyRoots, rootRSSMiB, rootOwnMiB, supervisorRootKiB, float64(n)*perRoot/1024, float64(n)*(float64(rootOwnMiB)+float64(supervisorRootKiB)/1024)/1024)
}
