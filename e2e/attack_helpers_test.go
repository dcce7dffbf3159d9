//go:build linux

package e2e

import (
	"crypto/rand"
	"encoding/hex"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The attack tests (attack_*_test.go) try to break fsmcp from outside: they
// run bounded loops against the built binaries and assert exact outcomes.
// Each logs what it tried as "figures:", the numbers the README's
// reliability table reports.

// plantMarker returns a unique string to plant in every byte outside a
// root: any response containing it leaked.
func plantMarker(t testing.TB) string {
	t.Helper()
	b := make([]byte, 12)
	rand.Read(b)
	return "FSMCP-OUTSIDE-" + hex.EncodeToString(b)
}

// noLeak fails the test when a result carries the marker or a host path.
func noLeak(t testing.TB, what string, r *result, marker string, hostPaths ...string) {
	t.Helper()
	text := r.text
	if r.raw != nil {
		text += string(mustJSON(r.raw))
	}
	if strings.Contains(text, marker) {
		t.Fatalf("%s returned bytes from outside the root: %.300s", what, text)
	}
	for _, p := range hostPaths {
		if r.isError && strings.Contains(r.text, p) {
			t.Fatalf("%s: error names a host path: %q", what, r.text)
		}
	}
}

// exchange atomically swaps two paths (renameat2 RENAME_EXCHANGE), so a
// racing reader sees one or the other and never a gap.
func exchange(t testing.TB, a, b string) {
	t.Helper()
	if err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE); err != nil {
		t.Fatalf("renameat2 exchange: %v", err)
	}
}

// churn runs step in a goroutine until stop is called (at most max times,
// pausing pause between steps) and returns stop, which waits for it and
// reports how many steps ran.
func churn(max int, pause time.Duration, step func(i int)) (stop func() int) {
	quit := make(chan struct{})
	var wg sync.WaitGroup
	n := 0
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ; n < max; n++ {
			select {
			case <-quit:
				return
			default:
			}
			step(n)
			if pause > 0 {
				time.Sleep(pause)
			}
		}
	}()
	var once sync.Once
	return func() int {
		once.Do(func() { close(quit) })
		wg.Wait()
		return n
	}
}

// tally counts outcomes by label, for the figures a test logs.
type tally struct {
	mu sync.Mutex
	m  map[string]int
}

func (c *tally) add(label string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]int{}
	}
	c.m[label]++
}

func (c *tally) get(label string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[label]
}

func (c *tally) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var parts []string
	for _, k := range keys(c.m) {
		parts = append(parts, k+"="+itoa(c.m[k]))
	}
	return strings.Join(parts, " ")
}
