package e2e

// In-process twins of the worker benchmarks, for profiling: the same
// server (fsworker.Open + fsworker.NewServer) and the same go-sdk client, over
// mcp.NewInMemoryTransports, so `go test -cpuprofile` sees the worker's
// code. The stdio benchmarks in bench_worker_test.go are the figures of
// record; these exist to find where that time goes:
//
//	go test -run '^$' -bench 'InProc' -benchtime 5x -cpuprofile cpu.out ./e2e
//	go tool pprof -top e2e.test cpu.out

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	fsworker "github.com/fsmcp/fsmcp/worker"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// benchSkipInProcShort skips a profiling twin under -short: the stdio
// benchmarks are the smoke run.
func benchSkipInProcShort(b *testing.B) {
	if testing.Short() {
		b.Skip("in-process profiling aid; skipped under -short")
	}
}

// benchInProc serves root in this process and returns a connected client.
func benchInProc(b *testing.B, root string, limits fsworker.Limits) *mcp.ClientSession {
	b.Helper()
	r, err := fsworker.Open(fsworker.Config{Root: root, Include: []string{"**"}, Limits: limits})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { r.Close() })
	st, ct := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := fsworker.NewServer(r, nil).Connect(ctx, st, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "fsmcp-bench", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close() })
	return cs
}

func BenchmarkInProcRead12MB(b *testing.B) {
	benchSkipInProcShort(b)
	body := benchUTF8Text(12 << 20)
	root := b.TempDir()
	benchWriteFile(b, filepath.Join(root, "big.txt"), body)
	cs := benchInProc(b, root, fsworker.DefaultLimits)
	b.SetBytes(int64(len(body)))
	b.ResetTimer()
	for range b.N {
		if got, _ := benchReadWhole(b, cs, "big.txt"); len(got) != len(body) {
			b.Fatalf("read %d bytes", len(got))
		}
	}
}

func BenchmarkInProcListFolder(b *testing.B) {
	benchSkipInProcShort(b)
	root := b.TempDir()
	for i := range 100 {
		benchWriteFile(b, filepath.Join(root, "big", fmt.Sprintf("file%03d.go", i)), []byte("package big\n"))
	}
	for i := range 20 {
		for j := range 5 {
			benchWriteFile(b, filepath.Join(root, "big", fmt.Sprintf("sub%02d", i), "deep", fmt.Sprintf("f%d.txt", j)), []byte("x\n"))
		}
	}
	for i := range 1800 {
		benchWriteFile(b, filepath.Join(root, "other", fmt.Sprintf("d%02d", i/30), fmt.Sprintf("f%02d.txt", i%30)), []byte("y\n"))
	}
	cs := benchInProc(b, root, fsworker.DefaultLimits)
	b.ResetTimer()
	for range b.N {
		if r := ok(b, cs, "list_directory", map[string]any{"path": "big"}); len(r.page.Items) != 120 {
			b.Fatalf("%d entries", len(r.page.Items))
		}
	}
}

func BenchmarkInProcSearchText(b *testing.B) {
	benchSkipInProcShort(b)
	root := b.TempDir()
	total := benchCodeTree(b, root, 2000, 100<<10)
	cs := benchInProc(b, root, fsworker.DefaultLimits)
	b.SetBytes(total)
	b.ResetTimer()
	for range b.N {
		if m, _ := benchFollow[benchMatch](b, cs, "search_text", map[string]any{"query": benchNeedle}); len(m) != benchNeedleFiles {
			b.Fatalf("%d matches", len(m))
		}
	}
}

func BenchmarkInProcSearchFiles(b *testing.B) {
	benchSkipInProcShort(b)
	root := b.TempDir()
	for i := range 20000 {
		name := fmt.Sprintf("file%05d.txt", i)
		if i%200 == 0 {
			name = fmt.Sprintf("widget_%05d.txt", i)
		}
		benchWriteFile(b, filepath.Join(root, fmt.Sprintf("d%02d", i/200), fmt.Sprintf("s%d", i%200/20), name), []byte("z\n"))
	}
	cs := benchInProc(b, root, fsworker.DefaultLimits)
	b.ResetTimer()
	for range b.N {
		if m, _ := benchFollow[benchPath](b, cs, "search_files", map[string]any{"query": "widget_"}); len(m) != 100 {
			b.Fatalf("%d paths", len(m))
		}
	}
}

// BenchmarkInProcRead12MBLargePages is the spec's large-page setting.
func BenchmarkInProcRead12MBLargePages(b *testing.B) {
	benchSkipInProcShort(b)
	body := benchUTF8Text(12 << 20)
	root := b.TempDir()
	benchWriteFile(b, filepath.Join(root, "big.txt"), body)
	lim := fsworker.DefaultLimits
	lim.MaxReadBytes, lim.MaxResultBytes = 500000, 1000000
	cs := benchInProc(b, root, lim)
	b.SetBytes(int64(len(body)))
	b.ResetTimer()
	for range b.N {
		if got, _ := benchReadWhole(b, cs, "big.txt"); len(got) != len(body) {
			b.Fatalf("read %d bytes", len(got))
		}
	}
}
