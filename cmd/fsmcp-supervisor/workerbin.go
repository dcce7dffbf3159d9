package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/fsmcp/fsmcp/internal/version"
)

// findWorker is the fsmcp-worker binary the supervisor starts: --worker's,
// else the one beside this binary, else the one on $PATH.
func findWorker(flagValue string) (string, error) {
	if flagValue != "" {
		if _, err := os.Stat(flagValue); err != nil {
			return "", fmt.Errorf("worker binary %s: %w", flagValue, errors.Unwrap(err))
		}
		return filepath.Abs(flagValue)
	}
	if cand := besideSelf(); cand != "" {
		if _, err := os.Stat(cand); err == nil {
			return cand, nil
		}
	}
	p, err := exec.LookPath("fsmcp-worker")
	if err != nil {
		return "", fmt.Errorf("cannot find fsmcp-worker next to this binary or on $PATH; pass --worker BIN")
	}
	return filepath.Abs(p)
}

// besideSelf is where the supervisor looks for the worker first: next to
// its own binary ("" if its own path is unknown).
func besideSelf() string {
	self, err := os.Executable()
	if err != nil {
		return ""
	}
	return filepath.Join(filepath.Dir(self), "fsmcp-worker")
}

// goRunExe matches where `go run` and `go tool` put the binary they run:
// a temporary work folder ($WORK/b001/exe/NAME, removed when go run exits)
// or, for a build go has cached, the build cache wherever GOCACHE points
// (CACHE/xx/HASH-d/NAME, xx being the first two digits of HASH), which go
// trims as it pleases.
var goRunExe = regexp.MustCompile(`/go-build[0-9]+/b[0-9]+/exe/[^/]+$|/([0-9a-f]{2})/([0-9a-f]{64})-d/[^/]+$`)

// goRun reports whether this binary was built and started by `go run`.
func goRun() bool {
	self, err := os.Executable()
	return err == nil && goRunPath(self)
}

// goRunPath reports whether path is where go run puts a binary.
func goRunPath(path string) bool {
	m := goRunExe.FindStringSubmatch(filepath.ToSlash(path))
	return m != nil && strings.HasPrefix(m[2], m[1])
}

// sessionWorker is the worker tools and call start. Under `go run` it is
// the worker of the same checkout, built into a temporary folder (cleanup
// removes it), so the two binaries match; otherwise findWorker's, with a
// note on stderr when that worker reports another version than this
// supervisor.
func sessionWorker(flagValue string, stderr io.Writer) (bin string, cleanup func(), err error) {
	if flagValue == "" && goRun() {
		return buildWorker()
	}
	bin, err = findWorker(flagValue)
	if err != nil {
		return "", nil, err
	}
	if v := workerVersion(bin); v != version.String() {
		fmt.Fprintf(stderr, "fsmcp-supervisor: using the worker %s, version %s; this supervisor is %s (pass --worker BIN to choose one)\n", bin, v, version.String())
	}
	return bin, func() {}, nil
}

// workerVersion is what bin --version prints, or why it printed nothing.
func workerVersion(bin string) string {
	out, err := exec.Command(bin, "--version").Output()
	if v := strings.TrimSpace(string(out)); err == nil && v != "" {
		return v
	}
	return "unknown (--version failed)"
}

// buildWorker builds fsmcp-worker from the checkout `go run` builds the
// supervisor from, into a temporary folder.
func buildWorker() (string, func(), error) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", nil, fmt.Errorf("this supervisor runs under go run, but go is not on $PATH to build the checkout's worker; go install ./cmd/... and run the installed fsmcp-supervisor")
	}
	dir, err := os.MkdirTemp("", "fsmcp-worker-")
	if err != nil {
		return "", nil, fmt.Errorf("building the checkout's worker: %w", err)
	}
	cleanup := func() { os.RemoveAll(dir) }
	bin := filepath.Join(dir, "fsmcp-worker")
	out, err := exec.Command(goBin, "build", "-o", bin, "github.com/fsmcp/fsmcp/cmd/fsmcp-worker").CombinedOutput()
	if err != nil {
		cleanup()
		return "", nil, fmt.Errorf("building the checkout's worker (go build github.com/fsmcp/fsmcp/cmd/fsmcp-worker) failed: %s", strings.TrimSpace(string(out)))
	}
	return bin, cleanup, nil
}
