package rootproc

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fsmcp/fsmcp/internal/toolset"
	"github.com/fsmcp/fsmcp/supervisor/manifest"
)

// buildWorker builds the real fsmcp-worker for this test, with the build
// tags this test was built with: under fsmcp_portable the worker it starts
// is the portable one.
func buildWorker(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the worker")
	}
	tags := ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "-tags" {
				tags = s.Value
			}
		}
	}
	out := t.TempDir()
	cmd := exec.Command("go", "build", "-tags="+tags, "-o", out+string(filepath.Separator), "./cmd/fsmcp-worker")
	cmd.Dir = filepath.Join("..", "..")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	return filepath.Join(out, "fsmcp-worker")
}

// settle waits for the goroutine count to drop to at most n and returns
// the last count seen.
func settle(n int, within time.Duration) int {
	deadline := time.Now().Add(within)
	for {
		got := runtime.NumGoroutine()
		if got <= n || time.Now().After(deadline) {
			return got
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// children lists the processes whose parent is this test process and
// whether each is a zombie.
func children(t *testing.T) (live, zombies int) {
	t.Helper()
	es, _ := os.ReadDir("/proc")
	me := strconv.Itoa(os.Getpid())
	for _, e := range es {
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) < 2 || f[1] != me {
			continue
		}
		if f[0] == "Z" {
			zombies++
		} else {
			live++
		}
	}
	return live, zombies
}

// TestRestartsLeakNothing kills a root's worker again and again: each
// restart serves calls, the goroutine count does not grow from one restart
// to the next, the sixth crash marks the root failed, and once it is
// failed, and again once Run is stopped, the goroutines and processes of
// all those workers are gone.
func TestRestartsLeakNothing(t *testing.T) {
	bin := buildWorker(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	base := runtime.NumGoroutine()
	p := New(Config{
		Root:      manifest.Root{Name: "leak", Path: dir, Include: []string{"**"}, DefaultExclude: true, Tools: toolset.Mask(toolset.All)},
		WorkerBin: bin,
		Stderr:    io.Discard,
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	ran := make(chan error, 1)
	go func() { ran <- p.Run(ctx) }()

	serve := func() {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			s, err := p.Session()
			if err == nil {
				cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
				res, err := s.CallTool(cctx, &mcp.CallToolParams{Name: "read_text_file", Arguments: map[string]any{"path": "a.txt"}})
				ccancel()
				if err == nil && !res.IsError {
					return
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("the worker did not come back: %v", err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	var counts []int
	for kill := 1; kill <= MaxCrashes+1; kill++ {
		serve()
		counts = append(counts, settle(0, 200*time.Millisecond))
		pid := p.PID()
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(10 * time.Second); p.PID() == pid && kill <= MaxCrashes; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("no restart after a kill")
			}
		}
	}
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(errString(p.StateError()), "failed after 6 crashes"); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not failed after %d crashes: %v", MaxCrashes+1, p.StateError())
		}
	}
	// Serving one worker costs a fixed number of goroutines; restarts must
	// not add to it.
	if first, last := counts[0], counts[len(counts)-1]; last > first+2 {
		t.Errorf("goroutines while serving, restart by restart: %v", counts)
	}
	failed := settle(base+1, 5*time.Second) // Run itself is still going
	if failed > base+1 {
		t.Errorf("failed root: %d goroutines, %d before the first start (restarts: %v)", failed, base, counts)
	}
	if live, zombies := children(t); live != 0 || zombies != 0 {
		t.Errorf("failed root: %d live and %d zombie worker processes", live, zombies)
	}
	cancel()
	select {
	case err := <-ran:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	if end := settle(base, 5*time.Second); end > base {
		t.Errorf("after Run: %d goroutines, %d before", end, base)
	}
	t.Logf("figures: rootproc: %d SIGKILLs, goroutines while serving %v, %d before start and %d after, 0 worker processes left", MaxCrashes+1, counts, base, runtime.NumGoroutine())
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
