//go:build linux

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

var (
	copyRelayOnce sync.Once
	copyRelayPath string
	copyRelayErr  error
)

// copyRelayBin builds testdata/copyrelay.c, the copy-only relay in C, once
// per test process, with the C compiler $CC names (cc by default). Without
// one the benchmark fails with the command that would build it: the
// reference is part of the figure, never left out.
func copyRelayBin(t testing.TB) string {
	t.Helper()
	copyRelayOnce.Do(func() {
		dir, err := os.MkdirTemp(filepath.Dir(workerBin), "copyrelay-")
		if err != nil {
			copyRelayErr = err
			return
		}
		cc := os.Getenv("CC")
		if cc == "" {
			cc = "cc"
		}
		out := filepath.Join(dir, "copyrelay")
		args := []string{"-O2", "-pthread", "-o", out, filepath.Join("testdata", "copyrelay.c")}
		if b, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
			copyRelayErr = &commandError{cmd: append([]string{cc}, args...), dir: "e2e", err: err, out: string(b)}
			return
		}
		copyRelayPath = out
	})
	if copyRelayErr != nil {
		t.Fatal(copyRelayErr)
	}
	return copyRelayPath
}
