package walk

import (
	"strings"
	"testing"

	"github.com/fsmcp/fsmcp/internal/glob"
	"github.com/fsmcp/fsmcp/internal/limits"
	"github.com/fsmcp/fsmcp/worker/confine"
)

// openTree opens dir as a root serving every file but the built-in
// excludes, as fsmcp-worker --include '**' does, walked within lim; the
// root closes with the test.
func openTree(tb testing.TB, dir string, lim limits.Limits) *Tree {
	tb.Helper()
	sel, err := glob.NewSelector(glob.Options{
		Include:        []string{"**"},
		DefaultExclude: true,
		Hidden:         func(p string) bool { return !strings.Contains(p, "/") && confine.IsTempName(p) },
	})
	if err != nil {
		tb.Fatal(err)
	}
	root, err := confine.Open(dir)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { root.Close() })
	return New(root, sel, lim)
}
