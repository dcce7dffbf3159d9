package rootproc

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fsmcp/fsmcp/internal/toolset"
	"github.com/fsmcp/fsmcp/supervisor/manifest"
)

// TestWorkersOutliveForkingThreads: a worker's parent-death signal fires
// when the thread that forked it ends, not only the supervisor. Roots are
// started, and restarted, from many goroutines that each end their own
// thread when they return (they exit while locked to it); every worker
// must still be running and serving afterwards.
func TestWorkersOutliveForkingThreads(t *testing.T) {
	bin := buildWorker(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const roots = 6
	procs := make([]*Proc, roots)
	for i := range procs {
		procs[i] = New(Config{
			Root:      manifest.Root{Name: "r" + string(rune('a'+i)), Path: dir, Include: []string{"**"}, DefaultExclude: true, Tools: toolset.Mask(toolset.All)},
			WorkerBin: bin,
			Stderr:    io.Discard,
		})
	}
	t.Cleanup(func() {
		for _, p := range procs {
			p.Stop()
		}
	})
	// onDyingThread runs f on a goroutine whose thread ends with it.
	onDyingThread := func(f func()) {
		var wg sync.WaitGroup
		for range procs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
				f()
			}()
		}
		wg.Wait()
	}
	errs := make(chan error, roots)
	var next sync.Mutex
	i := 0
	onDyingThread(func() {
		next.Lock()
		p := procs[i]
		i++
		next.Unlock()
		errs <- p.Start(ctx)
	})
	for range roots {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	check := func(when string) {
		t.Helper()
		time.Sleep(500 * time.Millisecond)
		for _, p := range procs {
			pid := p.PID()
			if pid == 0 || syscall.Kill(pid, 0) != nil || !running(pid) {
				t.Fatalf("%s: the worker of %s (pid %d) died with the thread that forked it", when, p.Name(), pid)
			}
			rl, err := p.Relay()
			if err != nil {
				t.Fatalf("%s: %v", when, err)
			}
			cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
			_, err = rl.Call(cctx, "ping", []byte(`{}`))
			ccancel()
			if err != nil {
				t.Fatalf("%s: %s does not answer: %v", when, p.Name(), err)
			}
		}
	}
	check("after starts")
	// Restarts (what Run does after a crash), again from dying threads.
	i = 0
	onDyingThread(func() {
		next.Lock()
		p := procs[i]
		i++
		next.Unlock()
		p.kill()
		errs <- p.launch(ctx)
	})
	for range roots {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	check("after restarts")
}

// running reports whether pid is a live process (not a zombie).
func running(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	for j := len(s) - 1; j >= 0; j-- {
		if s[j] == ')' {
			return len(s) > j+2 && s[j+2] != 'Z'
		}
	}
	return false
}
