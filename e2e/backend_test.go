//go:build linux

package e2e

import (
	"debug/buildinfo"
	"testing"
)

// portableBackend: the binaries under test confine with the portable
// backend (built with -tags fsmcp_portable), which has no O_TMPFILE, no
// inotify and no io_uring.
const portableBackend = buildTags == "fsmcp_portable"

// TestBinariesShareTheTestsBackend: the worker and supervisor the tests
// drive are built with the tests' own build tags, so a run with
// -tags fsmcp_portable tests the portable confinement backend (the one
// macOS runs) end to end, not the Linux one.
func TestBinariesShareTheTestsBackend(t *testing.T) {
	for _, bin := range []string{workerBin, supervisorBin} {
		info, err := buildinfo.ReadFile(bin)
		if err != nil {
			t.Fatalf("%s: %v", bin, err)
		}
		tags := ""
		for _, s := range info.Settings {
			if s.Key == "-tags" {
				tags = s.Value
			}
		}
		if tags != buildTags {
			t.Errorf("%s was built with tags %q, the tests with %q", bin, tags, buildTags)
		}
	}
}
