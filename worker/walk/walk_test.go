package walk

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/fsmcp/fsmcp/internal/limits"
	"github.com/fsmcp/fsmcp/worker/confine"
)

// TestWalkCancelled: a walk whose context ends stops within cancelEvery
// entries with the context's error, in a directory of many entries and
// across many small directories; one cancelled before it starts reads
// nothing.
func TestWalkCancelled(t *testing.T) {
	dir := t.TempDir()
	for i := range 5000 {
		sub := filepath.Join(dir, "flat")
		if i >= 2500 {
			sub = filepath.Join(dir, "nested", "d"+strconv.Itoa(i/10))
		}
		if err := os.MkdirAll(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(sub, "f"+strconv.Itoa(i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := openTree(t, dir, limits.Default)
	for _, scope := range []string{"flat", "nested"} {
		for _, after := range []int{0, 1, 700} {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if after == 0 {
				cancel()
			}
			w := r.Walk(ctx)
			sc, err := w.OpenScope(scope, false)
			d := sc.D
			if after == 0 {
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("%s: a walk cancelled before it started: %v", scope, err)
				}
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			seen := 0
			err = w.eachFile(d, scope, func(*confine.Dir, string, string, *confine.Identity) error {
				if seen++; seen == after {
					cancel()
				}
				return nil
			})
			d.Close()
			cancel()
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("%s: walk cancelled after %d files ended with %v", scope, after, err)
			}
			if seen > after+cancelEvery {
				t.Fatalf("%s: %d files handed out after the cancellation at %d", scope, seen-after, after)
			}
		}
	}
}
