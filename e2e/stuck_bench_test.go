//go:build linux

package e2e

// Benchmarks of a stuck root (reads that never return, from a FUSE file
// system mounted by the benchmark; a worker frozen with SIGSTOP):
//
//	BenchmarkStuckRoot/healthy-latency  healthy-root call latency while another root has 64 calls stuck, against an idle supervisor
//	BenchmarkStuckRoot/timeout-error    time from a stuck call to its call_timeout (500ms) tool error
//	BenchmarkStuckRoot/exit-idle        end of input to exit, nothing in flight
//	BenchmarkStuckRoot/exit-frozen      SIGTERM to exit, a frozen worker with a call in flight, --grace 500ms

import (
	"context"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func BenchmarkStuckRoot(b *testing.B) {
	b.Run("healthy-latency", benchHealthyLatency)
	b.Run("timeout-error", benchTimeoutError)
	b.Run("exit-idle", func(b *testing.B) { benchExit(b, false) })
	b.Run("exit-frozen", func(b *testing.B) { benchExit(b, true) })
}

// benchHealthyLatency: one-chunk reads of a healthy root, alternating
// between a supervisor whose other root (on a FUSE file system) has 64
// calls stuck and one whose same root is idle. Reports both p50 and p99
// and the p99 ratio (target: within 2x).
func benchHealthyLatency(b *testing.B) {
	bins := buildSupervisorBins(b)
	dir, s := stuckMount(b)
	ws := tree(b, map[string]string{"a.txt": "one chunk of text\n"})
	file := writeManifest(b, rootSpec{name: "share", path: dir}, rootSpec{name: "healthy", path: ws})
	idle := startSupervisor(b, file, bins.worker)
	busy := startSupervisor(b, file, bins.worker)
	for range 64 {
		go func() { _, _ = readCall(busy.session, "share", "stuck.txt", time.Hour) }()
	}
	for deadline := time.Now().Add(20 * time.Second); s.Blocked.Load() < 64; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			b.Fatalf("%d of 64 calls reached the file system", s.Blocked.Load())
		}
	}
	one := func(p *supervisorProc) time.Duration {
		start := time.Now()
		res, err := readCall(p.session, "healthy", "a.txt", 20*time.Second)
		if err != nil || res.IsError {
			b.Fatalf("healthy call: %v %s", err, resultText(res))
		}
		return time.Since(start)
	}
	for range 20 {
		one(idle)
		one(busy)
	}
	var idleT, busyT []time.Duration
	b.ResetTimer()
	for range b.N {
		for range 100 {
			idleT = append(idleT, one(idle))
			busyT = append(busyT, one(busy))
		}
	}
	b.StopTimer()
	pi, pb := percentile(idleT, 0.99), percentile(busyT, 0.99)
	b.ReportMetric(float64(percentile(idleT, 0.5).Microseconds()), "idle-p50-us")
	b.ReportMetric(float64(pi.Microseconds()), "idle-p99-us")
	b.ReportMetric(float64(percentile(busyT, 0.5).Microseconds()), "stuck-p50-us")
	b.ReportMetric(float64(pb.Microseconds()), "stuck-p99-us")
	b.ReportMetric(float64(pb)/float64(pi), "p99-x-idle")
}

func percentile(d []time.Duration, q float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

// benchTimeoutError: a read blocked in the kernel, with call_timeout 500ms.
func benchTimeoutError(b *testing.B) {
	bins := buildSupervisorBins(b)
	dir, _ := stuckMount(b)
	file := writeManifest(b, rootSpec{name: "share", path: dir, extra: "call_timeout: 500ms"})
	p := startSupervisor(b, file, bins.worker)
	var total time.Duration
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		res, err := readCall(p.session, "share", "stuck.txt", 20*time.Second)
		total += time.Since(start)
		if err != nil || !res.IsError {
			b.Fatalf("stuck call: %v %+v", err, res)
		}
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms-to-error")
}

// benchExit: a two-root supervisor stopped by end of input with nothing in
// flight, or by SIGTERM with one worker frozen and a call to it in flight.
func benchExit(b *testing.B, frozen bool) {
	bins := buildSupervisorBins(b)
	ws := tree(b, map[string]string{"a.txt": "a\n"})
	file := writeManifest(b, rootSpec{name: "one", path: ws}, rootSpec{name: "two", path: ws})
	var total time.Duration
	for range b.N {
		b.StopTimer()
		p := startSupervisorArgs(b, []string{"--manifest", file, "--worker", bins.worker, "--grace", "500ms"})
		pids := p.workerPIDs(b)
		if frozen {
			freeze(b, p.workerOf(b, "one"))
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				_, _ = p.session.CallTool(ctx, &mcp.CallToolParams{Name: "one_read_text_file", Arguments: map[string]any{"path": "a.txt"}})
			}()
			time.Sleep(50 * time.Millisecond)
		}
		b.StartTimer()
		start := time.Now()
		if frozen {
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
		} else {
			_ = p.stdin.Close()
		}
		p.wait(b, 20*time.Second)
		for _, pid := range pids {
			for alive(pid) {
				time.Sleep(time.Millisecond)
			}
		}
		total += time.Since(start)
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms-to-exit")
}
