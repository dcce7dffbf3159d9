//go:build linux

package e2e

// In-process twins of the worker benchmarks, for profiling: the same
// scenarios on the same cached trees, served by fsworker.Open +
// fsworker.NewServer in this process over mcp.NewInMemoryTransports, so a
// CPU profile sees the worker's code. They skip the references (which
// would only add to the profile) and run only when -bench names InProc:
//
//	cd e2e && go test -run '^$' -bench 'InProc/search_text/files=100k' -benchtime 3x -cpuprofile cpu.out .
//	go tool pprof -top -nodecount 30 e2e.test cpu.out
//
// The stdio benchmarks in bench_worker_test.go are the figures of record.

import (
	"context"
	"testing"

	"github.com/fsmcp/fsmcp/internal/profile"
	fsworker "github.com/fsmcp/fsmcp/worker"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// benchInProcess serves a root in this process.
var benchInProcess = benchServer{open: benchInProc}

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
	ss, err := profile.Connect(ctx, fsworker.NewServer(r, nil), st)
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

func BenchmarkInProc(b *testing.B) {
	if !benchNamed("InProc") {
		b.Skip("in-process profiling twin: runs only when -bench names InProc")
	}
	b.Run("list_directory", func(b *testing.B) {
		benchEachScale(b, func(b *testing.B, t *benchTreeInfo) { benchListWalk(b, benchInProcess, t) })
	})
	b.Run("search_files", func(b *testing.B) {
		benchEachScale(b, func(b *testing.B, t *benchTreeInfo) { benchSearchFiles(b, benchInProcess, t) })
	})
	b.Run("search_text", func(b *testing.B) {
		benchEachScale(b, func(b *testing.B, t *benchTreeInfo) { benchSearchText(b, benchInProcess, t, benchTreeLimits()) })
	})
	b.Run("search_text200MB", func(b *testing.B) {
		benchSearchText(b, benchInProcess, benchTree(b, benchBigFiles, benchBigMean), benchTreeLimits())
	})
	b.Run("read12MB", func(b *testing.B) { benchRead(b, benchInProcess, benchUTF8Text(12<<20), fsworker.DefaultLimits) })
}
