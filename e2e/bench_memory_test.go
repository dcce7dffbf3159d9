//go:build linux

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkRootMemory measures what roots cost in memory, once each
// operation: an idle fsmcp-worker alone on stdio after one read, and
// fsmcp-supervisor on manifests of 1 and of memoryRoots roots (those of
// benchRootsManifest) after one read on every root. Each figure is taken
// memorySettle after the last call, summing Rss and Pss from
// /proc/PID/smaps_rollup over the supervisor and its workers. It reports,
// in MiB:
//
//	worker-rss, worker-pss     the idle worker alone
//	sup-rss                    the supervisor process with one root
//	root-rss, root-pss         what each root beyond the first adds, in all
//	                           processes (PSS counts shared pages once)
//	sup-root-rss               what each root adds to the supervisor itself
//
// The time per operation is that of starting and stopping everything; it
// is not a figure of interest.
func BenchmarkRootMemory(b *testing.B) {
	bins := buildSupervisorBins(b)
	var worker, one, many memUse
	for range b.N {
		worker = worker.add(idleWorkerMemory(b))
		one = one.add(idleSupervisorMemory(b, bins, 1))
		many = many.add(idleSupervisorMemory(b, bins, memoryRoots))
	}
	n, extra := float64(b.N), float64(memoryRoots-1)
	b.ReportMetric(worker.rss/n, "worker-rss-MiB")
	b.ReportMetric(worker.pss/n, "worker-pss-MiB")
	b.ReportMetric(one.sup/n, "sup-rss-MiB")
	b.ReportMetric((many.rss-one.rss)/n/extra, "root-rss-MiB")
	b.ReportMetric((many.pss-one.pss)/n/extra, "root-pss-MiB")
	b.ReportMetric((many.sup-one.sup)/n/extra, "sup-root-rss-MiB")
}

const (
	memoryRoots  = 17
	memorySettle = 3 * time.Second
)

// memUse is resident memory in MiB: rss and pss summed over processes,
// sup the supervisor's own rss.
type memUse struct{ rss, pss, sup float64 }

func (m memUse) add(o memUse) memUse { return memUse{m.rss + o.rss, m.pss + o.pss, m.sup + o.sup} }

func idleWorkerMemory(b *testing.B) memUse {
	root := b.TempDir()
	writeFile(b, filepath.Join(root, "a.txt"), "a\n")
	cs, cmd, _ := benchWorkerReady(b, "--root", root, "--include", "**", "--tools", "read", "--name", "r0")
	defer cs.Close()
	benchCall(b, cs, "read_text_file", map[string]any{"path": "a.txt"})
	time.Sleep(memorySettle)
	rss, pss := smapsRollup(b, cmd.Process.Pid)
	return memUse{rss: rss, pss: pss}
}

func idleSupervisorMemory(b *testing.B, bins supBins, roots int) memUse {
	_, file, _ := benchRootsManifest(b, roots)
	p := startSupervisor(b, file, bins.worker)
	defer func() {
		_ = p.session.Close()
		p.session = nil
		_ = p.stdin.Close()
		p.wait(b, 10*time.Second)
	}()
	for i := range roots {
		benchCall(b, p.session, fmt.Sprintf("r%d_read_text_file", i), map[string]any{"path": "a.txt"})
	}
	time.Sleep(memorySettle)
	pid := p.cmd.Process.Pid
	workers := childPIDs(b, pid)
	if len(workers) != roots {
		b.Fatalf("the supervisor has %d children, want %d workers", len(workers), roots)
	}
	var m memUse
	m.sup, m.pss = smapsRollup(b, pid)
	m.rss = m.sup
	for _, w := range workers {
		rss, pss := smapsRollup(b, w)
		m.rss, m.pss = m.rss+rss, m.pss+pss
	}
	return m
}

// smapsRollup is the Rss and Pss of process pid, in MiB.
func smapsRollup(t testing.TB, pid int) (rss, pss float64) {
	t.Helper()
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/smaps_rollup")
	if err != nil {
		t.Fatal(err)
	}
	var seen int
	for _, l := range strings.Split(string(data), "\n") {
		f := strings.Fields(l)
		if len(f) != 3 || f[2] != "kB" || (f[0] != "Rss:" && f[0] != "Pss:") {
			continue
		}
		kb, err := strconv.ParseFloat(f[1], 64)
		if err != nil {
			t.Fatalf("/proc/%d/smaps_rollup: %q", pid, l)
		}
		if f[0] == "Rss:" {
			rss = kb / 1024
		} else {
			pss = kb / 1024
		}
		seen++
	}
	if seen != 2 {
		t.Fatalf("/proc/%d/smaps_rollup has no Rss and Pss lines:\n%s", pid, data)
	}
	return rss, pss
}
