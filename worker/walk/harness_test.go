package walk

import (
	"os"
	"path/filepath"
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

// writeTree makes below dir the files paths name (slash-separated), each
// holding body, and the directories on their way; a path ending in "/" is
// a directory, made empty.
func writeTree(tb testing.TB, dir, body string, paths ...string) {
	tb.Helper()
	for _, p := range paths {
		full := filepath.Join(dir, p)
		if strings.HasSuffix(p, "/") {
			if err := os.MkdirAll(full, 0o755); err != nil {
				tb.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(body), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
}
