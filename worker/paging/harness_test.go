package paging

import (
	"os"
	"testing"

	"github.com/fsmcp/fsmcp/worker/confine"
	"github.com/fsmcp/fsmcp/worker/walk"
)

// openScope opens dir as a root, closed with the test, and returns it and
// its files in path order with their identities, as a walk finds them.
func openScope(t *testing.T, dir string) (*confine.Root, []walk.File) {
	t.Helper()
	root, err := confine.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var files []walk.File
	for _, de := range es {
		r, id, err := root.OpenReader(de.Name())
		if err != nil {
			t.Fatal(err)
		}
		r.Close()
		files = append(files, walk.File{Path: de.Name(), ID: id})
	}
	return root, files // os.ReadDir sorts by name
}
