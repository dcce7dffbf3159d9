package paging

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/fsmcp/fsmcp/worker/confine"
	"github.com/fsmcp/fsmcp/worker/textscan"
	"github.com/fsmcp/fsmcp/worker/walk"
)

// writeFiles writes n files named by name(i) holding body(i) into a new
// directory, and returns it.
func writeFiles(t *testing.T, n int, name func(i int) string, body func(i int) string) string {
	t.Helper()
	dir := t.TempDir()
	for i := range n {
		if err := os.WriteFile(filepath.Join(dir, name(i)), []byte(body(i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

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

// testEngine is an engine over root whose pages scan scanBytes, with items
// "path:line:text" that cost their length; it closes with the test.
func testEngine(t *testing.T, root *confine.Root, scanBytes int64, opts Options) *Engine {
	item := func(path string, m textscan.Match) Item {
		b := fmt.Appendf(nil, "%s:%d:%s", path, m.Line, m.Text)
		return Item{JSON: b, Hashed: b}
	}
	cost := func(b []byte) int { return len(b) }
	e := New(root, Config{ScanBytes: scanBytes, ResultBytes: 1 << 20, Item: item, Cost: cost}, opts)
	t.Cleanup(e.Close)
	return e
}

// testResult is a page of items costing their length, up to room.
type testResult struct {
	items []Item
	room  int
}

func (r *testResult) Add(it Item) bool {
	if len(it.JSON) > r.room {
		return false
	}
	r.room -= len(it.JSON)
	r.items = append(r.items, it)
	return true
}

func (r *testResult) Len() int  { return len(r.items) }
func (r *testResult) Room() int { return r.room }

// keptAlways is an inventory that stays current.
type keptAlways struct{}

func (keptAlways) Current() bool { return true }

// matcher is the matcher of term.
func matcher(t *testing.T, term string) *textscan.Matcher {
	t.Helper()
	m, err := textscan.NewMatcher([]string{term}, false)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// onePage answers the page req asks for, and hands its scan on to the
// page after it, which it returns the request of (nil at the scope's
// end); that request's token names its position.
func onePage(t *testing.T, e *Engine, req Request) (*testResult, *Request) {
	t.Helper()
	p := e.Start(context.Background(), req)
	defer p.End()
	out := &testResult{room: 1 << 20}
	if err := p.Fill(out); err != nil {
		t.Fatal(err)
	}
	next, more := p.Next()
	if !more {
		return out, nil
	}
	tok := fmt.Sprintf("%d/%+v", next.File, next.At)
	p.HandOn(tok)
	after := req
	after.From, after.Token = next, tok
	return out, &after
}

// openFDs counts the process's open descriptors but its io_uring
// instances: a root keeps a few idle rings (confine's ring pool), one more
// once more goroutines than before have opened files at the same time.
func openFDs(t *testing.T) int {
	t.Helper()
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range es {
		if l, err := os.Readlink("/proc/self/fd/" + e.Name()); err != nil || l != "anon_inode:[io_uring]" {
			n++
		}
	}
	return n
}
