package confine

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestSyncsAreFull: every flush in this package goes through fullSync, and
// macOS's fullSync asks for F_FULLFSYNC, since a plain fsync there leaves
// a write in the drive's cache. The files of every platform are read,
// whatever this test is built for, so a Linux run checks macOS's code: a
// call to fsync or (*os.File).Sync outside os_*.go would make a write on
// macOS no longer durable without any test there failing.
func TestSyncsAreFull(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	fullfsync := false
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		perOS := strings.HasPrefix(file, "os_")
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				name := n.Sel.Name
				if file == "os_darwin.go" && name == "F_FULLFSYNC" {
					fullfsync = true
				}
				if !perOS && (name == "Fsync" || name == "Fdatasync" || name == "Sync") {
					t.Errorf("%s: %s flushes without fullSync", fset.Position(n.Pos()), name)
				}
			}
			return true
		})
	}
	if !fullfsync {
		t.Error("os_darwin.go does not use F_FULLFSYNC")
	}
}
