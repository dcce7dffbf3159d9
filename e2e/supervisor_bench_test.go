package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkSupervisorHop measures a one-chunk read_text_file round trip
// through the supervisor against the same worker serving stdio alone, in
// the same run, alternating the two, and reports the ratio.
func BenchmarkSupervisorHop(b *testing.B) {
	bins := buildSupervisorBins(b)
	file, dir := exampleManifest(b, "reader-writer.yaml", "workspace", "outbox")
	writeFile(b, filepath.Join(dir, "workspace", "page.txt"), strings.Repeat("one chunk of text\n", 40))
	sup := startSupervisor(b, file, bins.worker)
	alone := connectWorkerAlone(b, bins.worker, "--root", filepath.Join(dir, "workspace"), "--include", "**", "--tools", "read", "--name", "reader")
	args := map[string]any{"path": "page.txt"}
	once := func(s *mcp.ClientSession, tool string) time.Duration {
		start := time.Now()
		res := callTool(b, s, tool, args)
		d := time.Since(start)
		if res.IsError {
			b.Fatalf("%s: %s", tool, resultText(res))
		}
		return d
	}
	// Warm both paths.
	for range 20 {
		once(alone, "read_text_file")
		once(sup.session, "reader_read_text_file")
	}
	var direct, hop time.Duration
	b.ResetTimer()
	for range b.N {
		direct += once(alone, "read_text_file")
		hop += once(sup.session, "reader_read_text_file")
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(direct.Nanoseconds())/n, "worker-ns/call")
	b.ReportMetric(float64(hop.Nanoseconds())/n, "supervisor-ns/call")
	b.ReportMetric(float64(hop)/float64(direct), "hop-ratio")
}

// BenchmarkSupervisorReady8Roots measures the time from starting the
// supervisor on an 8-root manifest to the first tools/list answer.
func BenchmarkSupervisorReady8Roots(b *testing.B) {
	bins := buildSupervisorBins(b)
	dir := b.TempDir()
	var m strings.Builder
	m.WriteString("version: 1\nroots:\n")
	for i := range 8 {
		name := fmt.Sprintf("r%d", i)
		if err := os.Mkdir(filepath.Join(dir, name), 0o755); err != nil {
			b.Fatal(err)
		}
		tools := "read"
		if i%2 == 1 {
			tools = "all"
		}
		fmt.Fprintf(&m, "  - name: %s\n    path: %s\n    include: [\"**\"]\n    tools: %s\n", name, name, tools)
	}
	file := filepath.Join(dir, "eight.yaml")
	writeFile(b, file, m.String())
	var total time.Duration
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		p := startSupervisor(b, file, bins.worker)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		res, err := p.session.ListTools(ctx, nil)
		cancel()
		total += time.Since(start)
		if err != nil || len(res.Tools) != 4*4+4*5 {
			b.Fatalf("tools/list: %v (%d tools)", err, len(res.Tools))
		}
		b.StopTimer()
		_ = p.session.Close()
		p.session = nil
		_ = p.stdin.Close()
		p.wait(b, 10*time.Second)
		b.StartTimer()
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms-to-ready")
}
