package paging

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fsmcp/fsmcp/worker/confine"
	"github.com/fsmcp/fsmcp/worker/textscan"
	"github.com/fsmcp/fsmcp/worker/walk"
)

// TestNextPageEarlyFiles: a next page of many small files scans at most
// nextPageEarlyFiles of them before it is asked for, so the descriptors
// it holds open meanwhile (those files', to check them again, and the
// next group's) stay few; asked for, it scans the rest and answers as a
// page alone does.
func TestNextPageEarlyFiles(t *testing.T) {
	dir := writeFiles(t, 400, func(i int) string { return fmt.Sprintf("f%03d.txt", i) }, func(int) string { return "a needle\n" })
	root, files := openScope(t, dir)
	taken := false
	e := testEngine(t, root, 16384, Options{TakenOver: func(ok bool) { taken = ok }})
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	// A first page makes what a root keeps for its life (the inotify
	// instances, the /proc/self/fd directory).
	if _, next := onePage(t, e, Request{Matcher: matcher(t, "absent"), Limit: 200, Files: files, Kept: keptAlways{}}); next != nil {
		t.Fatal("warm-up search: more than one page")
	}
	fds := openFDs(t)
	_, next := onePage(t, e, Request{Matcher: matcher(t, "needle"), Limit: 5, Files: files, Kept: keptAlways{}})
	if next == nil {
		t.Fatal("first page: no next page")
	}
	time.Sleep(100 * time.Millisecond) // the next page scans what it may
	if held, most := openFDs(t)-fds, nextPageEarlyFiles+confine.BatchSize; held > most {
		t.Fatalf("a next page not asked for holds %d descriptors, want at most %d", held, most)
	}
	out, _ := onePage(t, e, *next)
	if len(out.items) != 5 || !taken {
		t.Fatalf("second page: %d items, taken over %v; want 5 items from a page taken over", len(out.items), taken)
	}
}

// TestNextPageWindow: a client that follows the cursor widens the window
// the scan may run ahead of its page, but the files it holds open stay
// within the window's files (at most runMaxWindowFiles), the groups opened
// past them, the two parts and the closes queued for the next batch.
func TestNextPageWindow(t *testing.T) {
	dir := writeFiles(t, 1500, func(i int) string { return fmt.Sprintf("f%04d.txt", i) }, func(int) string { return strings.Repeat("plain text\n", 9) + "\n" })
	root, files := openScope(t, dir)
	e := testEngine(t, root, 16384, Options{})
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	if _, next := onePage(t, e, Request{Matcher: matcher(t, "absent"), Limit: 200, Files: files[:1]}); next != nil {
		t.Fatal("warm-up search: more than one page")
	}
	fds := openFDs(t)
	req := &Request{Matcher: matcher(t, "needle"), Limit: 200, Files: files, Kept: keptAlways{}}
	window := func() int64 {
		e.next.mu.Lock()
		defer e.next.mu.Unlock()
		return e.next.p.ahead.window.Load()
	}
	for page := range 8 {
		if _, req = onePage(t, e, *req); req == nil {
			t.Fatalf("page %d: no next page", page)
		}
		time.Sleep(50 * time.Millisecond) // the scan runs as far as it may
		held := openFDs(t) - fds
		// The files claimed, the rest of their last group and the group
		// after it opened, the two parts, and closes queued for the next
		// batch.
		if most := min(int(window())*nextPageEarlyFiles, runMaxWindowFiles) + 3*confine.BatchSize + 2; held > most {
			t.Fatalf("page %d: the scan ahead holds %d descriptors, want at most %d", page, held, most)
		}
	}
	if w := window(); w != runMaxWindow {
		t.Fatalf("window after 8 pages followed: %d pages, want %d", w, runMaxWindow)
	}
}

// TestRunBudgets plans runs: files after the first whole, those a page is
// predicted to end inside left to the pages (-1).
func TestRunBudgets(t *testing.T) {
	sizes := func(s ...int64) []walk.File {
		fs := make([]walk.File, len(s))
		for i := range s {
			fs[i].ID.Size = s[i]
		}
		return fs
	}
	for _, tc := range []struct {
		name  string
		files []walk.File
		first int
		pos   textscan.Position
		want  []int64
	}{
		{"all within a page", sizes(10, 20, 30), 0, textscan.Position{}, []int64{100, 100, 100}},
		{"a page ends inside a file", sizes(60, 30, 30, 80, 10), 0, textscan.Position{}, []int64{100, 100, -1, 100, 100}},
		{"a file over several pages", sizes(10, 250, 40, 20), 0, textscan.Position{}, []int64{100, -1, 100, 100}},
		{"less than a term left ends the page", sizes(50, 47, 90, 30), 0, textscan.Position{}, []int64{100, 100, 100, -1}},
		{"from inside the first", sizes(500, 150, 40, 40), 0, textscan.Position{Offset: 450, Line: 9, LineStart: 440}, []int64{100, -1, 100, 100}},
		{"from a later file", sizes(5, 5, 90, 20), 2, textscan.Position{}, []int64{100, -1}},
		{"a budget below a term", sizes(5), 0, textscan.Position{}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			budget := int64(100)
			if tc.want == nil {
				budget = 3
			}
			if got := runBudgets(tc.files, tc.first, tc.pos, budget, 4); !slices.Equal(got, tc.want) {
				t.Fatalf("plan %v, want %v", got, tc.want)
			}
		})
	}
}
