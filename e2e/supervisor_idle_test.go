//go:build linux

package e2e

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// contextSwitches is how many times process pid's threads have been
// switched out so far (voluntarily or not), from /proc/PID/task/*/status.
func contextSwitches(t *testing.T, pid int) int {
	t.Helper()
	sum := 0
	for _, b := range taskFiles(t, pid, "status") {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "voluntary_ctxt_switches:"); ok {
				n, _ := strconv.Atoi(strings.TrimSpace(v))
				sum += n
			} else if v, ok := strings.CutPrefix(line, "nonvoluntary_ctxt_switches:"); ok {
				n, _ := strconv.Atoi(strings.TrimSpace(v))
				sum += n
			}
		}
	}
	return sum
}

// TestSupervisorIdleDoesNotWake: a supervisor with nothing to do sleeps,
// like its workers. Its health probes run only while a call is pending or
// after one timed out; before, each root's probe ticked twice a second
// whether or not there was anything to probe (about ten wake-ups a second
// with two roots).
func TestSupervisorIdleDoesNotWake(t *testing.T) {
	bins := buildSupervisorBins(t)
	file, dir := exampleManifest(t, "reader-writer.yaml", "workspace", "outbox")
	writeFile(t, filepath.Join(dir, "workspace", "a.txt"), "a\n")
	p := startSupervisor(t, file, bins.worker)
	if res := callTool(t, p.session, "reader_read_text_file", map[string]any{"path": "a.txt"}); res.IsError {
		t.Fatalf("read: %s", resultText(res))
	}
	if res := callTool(t, p.session, "writer_write_text_file", map[string]any{"path": "w.md", "content": "w"}); res.IsError {
		t.Fatalf("write: %s", resultText(res))
	}
	// The probes look once more an interval after the last call.
	time.Sleep(1500 * time.Millisecond)
	pids := append([]int{p.cmd.Process.Pid}, p.workerPIDs(t)...)
	before := make([]int, len(pids))
	for i, pid := range pids {
		before[i] = contextSwitches(t, pid)
	}
	const idle = 3 * time.Second
	time.Sleep(idle)
	var counts []string
	for i, pid := range pids {
		what := "worker"
		if i == 0 {
			what = "supervisor"
		}
		n := contextSwitches(t, pid) - before[i]
		counts = append(counts, fmt.Sprintf("%s %d", what, n))
		if n > 3 {
			t.Errorf("the idle %s (pid %d) was switched out %d times in %s, want at most 3", what, pid, n, idle)
		}
	}
	t.Logf("figures: context switches in %s idle: %s", idle, strings.Join(counts, ", "))
}
