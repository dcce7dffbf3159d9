package paging

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fsmcp/fsmcp/worker/confine"
	"github.com/fsmcp/fsmcp/worker/walk"
)

// TestPageOpensSideBySide: while one goroutine opens a group, another
// whose file is in that group opens the next group meanwhile instead of
// waiting for it; both then get their files, and a group is opened once.
func TestPageOpensSideBySide(t *testing.T) {
	dir := t.TempDir()
	var files []walk.File
	for i := range 3 * confine.BatchSize {
		name := fmt.Sprintf("f%03d.txt", i)
		if err := os.WriteFile(filepath.Join(dir, name), []byte("text\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, walk.File{Path: name})
	}
	root, _ := openScope(t, dir)
	began := make(chan int, 8)
	release := make(chan struct{})
	opening := func(g int) {
		began <- g
		if g == 0 {
			<-release // group 0's open lasts until the test ends it
		}
	}
	o := newPageOpens(context.Background(), root, files, opening)
	defer o.close()

	type took struct {
		k  int
		op confine.Opened
	}
	got := make(chan took, 2)
	take := func(k int) { got <- took{k, o.take(k)} }
	go take(0)
	if g := <-began; g != 0 {
		t.Fatalf("the first take opened group %d first, want 0", g)
	}
	go take(1) // its group is being opened
	select {
	case g := <-began:
		if g != 1 {
			t.Fatalf("while group 0 opens, the second take opened group %d, want 1", g)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("while group 0 opened, the second take waited instead of opening group 1")
	}
	close(release)
	for range 2 {
		tk := <-got
		if tk.op.Err != nil || tk.op.R == nil {
			t.Fatalf("take(%d) = %v, want its open file", tk.k, tk.op.Err)
		}
		o.closer.Close(tk.op.R)
	}
	// The first take opens group 2 after its own (group 1 is begun).
	if g := <-began; g != 2 {
		t.Fatalf("then group %d opened, want 2", g)
	}
	select {
	case g := <-began:
		t.Fatalf("group %d opened twice", g)
	case <-time.After(100 * time.Millisecond):
	}
}
