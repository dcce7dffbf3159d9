package gopool

import (
	"runtime"
	"sync"
	"testing"
	"time"
)

// waitIdle waits until p has n goroutines waiting.
func waitIdle(t *testing.T, p *Pool, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for p.Idle() != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines waiting, want %d", p.Idle(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestPoolRunsEveryFunction(t *testing.T) {
	for _, tc := range []struct {
		name          string
		maxIdle, runs int
		concurrent    bool
		wantIdle      int
	}{
		{"keeps none", 0, 10, false, 0},
		// Each waits for the one before to be kept waiting, so one
		// goroutine runs them all.
		{"one after another", 2, 100, false, 1},
		{"more at once than kept", 2, 50, true, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := New(tc.maxIdle)
			var wg sync.WaitGroup
			var mu sync.Mutex
			ran := map[int]bool{}
			release := make(chan struct{})
			for i := range tc.runs {
				wg.Add(1)
				p.Go(func() {
					defer wg.Done()
					if tc.concurrent {
						<-release // all of them run at once
					}
					mu.Lock()
					ran[i] = true
					mu.Unlock()
				})
				if !tc.concurrent {
					wg.Wait()
					waitIdle(t, p, tc.wantIdle)
				}
			}
			close(release)
			wg.Wait()
			if len(ran) != tc.runs {
				t.Fatalf("%d functions ran, want %d", len(ran), tc.runs)
			}
			waitIdle(t, p, tc.wantIdle)
		})
	}
}

// A goroutine kept waiting runs the next function: no new one starts.
func TestPoolReusesWaitingGoroutine(t *testing.T) {
	p := New(1)
	done := make(chan struct{})
	p.Go(func() { close(done) })
	<-done
	waitIdle(t, p, 1)
	waiting := make(chan int)
	p.Go(func() { waiting <- p.Idle() })
	// Run by a new goroutine, it would see the kept one still waiting.
	if n := <-waiting; n != 0 {
		t.Fatalf("%d goroutines wait while the next function runs, want 0", n)
	}
	waitIdle(t, p, 1)
}

// A goroutine kept waiting does not keep what its last function referred
// to: a page's scan refers to the page's whole inventory.
func TestPoolLetsGoOfLastFunction(t *testing.T) {
	p := New(1)
	freed := make(chan struct{})
	done := make(chan struct{})
	func() {
		big := new([1 << 20]byte)
		runtime.SetFinalizer(big, func(*[1 << 20]byte) { close(freed) })
		p.Go(func() {
			big[0] = 1
			close(done)
		})
	}()
	<-done
	waitIdle(t, p, 1)
	deadline := time.After(5 * time.Second)
	for {
		runtime.GC()
		select {
		case <-freed:
			return
		case <-deadline:
			t.Fatal("what the last function referred to is still reachable")
		case <-time.After(10 * time.Millisecond):
		}
	}
}
