package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/fsmcp/fsmcp/worker/confine"
	"github.com/fsmcp/fsmcp/worker/textscan"
)

// TestNextPageCarried pages through a tree, pausing between pages so that
// each next page is scanned ahead before it is asked for: the scan the
// second page took over is handed on to the third, which takes it over
// when it continues exactly there and then takes every outcome as
// planned (the parts of its boundary files included: nothing scanned
// again); every page equals the one scanned alone. A file of the third
// page written (through a link, which no watch sees) after the scan read
// it fails its cursor as it does alone.
func TestNextPageCarried(t *testing.T) {
	needle := "needle"
	cases := []struct {
		name string
		// between runs after the second page, before the third.
		between func(t *testing.T, dir string, third string)
		limit   int // the third page's limit, when not 5
		taken   bool
		err     string
	}{
		{name: "follows", taken: true},
		{name: "another limit", limit: 7},
		{
			name: "a file of the third page linked outside the root and written",
			between: func(t *testing.T, dir, third string) {
				writeThroughLink(t, filepath.Join(dir, third))
			},
			taken: true, err: "the filesystem changed since this cursor was issued",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pagingAhead(t, time.Second)
			third := func(workers int) (rec pageRecord, carried, taken bool, again int, err error) {
				aheadMaxWorkers = workers
				dir, r := nextPageTree(t, needle)
				args := searchArgs{Query: json.RawMessage(`"` + needle + `"`), Limit: json.RawMessage(`5`)}
				var p *pageResult
				for range 2 {
					nextPageKept = func(c bool) { carried = c }
					p, err = r.searchText(context.Background(), args)
					nextPageKept = nil
					if err != nil || p.next == nil {
						t.Fatalf("page before the third: %v (cursor %v)", err, p != nil && p.next != nil)
					}
					args.Cursor, _ = json.Marshal(*p.next)
					time.Sleep(50 * time.Millisecond) // the next page is scanned ahead
				}
				if tc.between != nil {
					tc.between(t, dir, secondFileOfPage(t, dir, *p.next))
				}
				if tc.limit != 0 {
					args.Limit = json.RawMessage(fmt.Sprint(tc.limit))
				}
				again = -1
				nextPageDone = func(ok bool) { taken = ok }
				aheadDone = func(_, ag int) { again = ag }
				defer func() { nextPageDone, aheadDone = nil, nil }()
				if p, err = r.searchText(context.Background(), args); err != nil {
					return pageRecord{}, carried, taken, again, err
				}
				return positionRecord(t, p), carried, taken, again, nil
			}
			want, _, _, _, wantErr := third(1)
			got, carried, taken, again, err := third(2)
			sameAsAlone(t, "third", got, want, err, wantErr, tc.err)
			if !carried {
				t.Fatal("the second page did not hand its scan on")
			}
			if taken != tc.taken {
				t.Fatalf("third page took the scan over: %v, want %v", taken, tc.taken)
			}
			if tc.taken && tc.err == "" && again != 0 {
				t.Fatalf("the third page scanned %d planned files itself, want none", again)
			}
		})
	}
}

// secondFileOfPage is the file after the one the page at tok starts in:
// the first the page scans from its start, by the inventory's order
// (paths sorted).
func secondFileOfPage(t *testing.T, dir, tok string) string {
	t.Helper()
	var files []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			rel, _ := filepath.Rel(dir, p)
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	sort.Strings(files)
	var f int
	if _, err := fmt.Sscanf(cursorPosition(t, tok), "map[f:%d", &f); err != nil || f+1 >= len(files) {
		t.Fatalf("cursor position %s: %v", cursorPosition(t, tok), err)
	}
	return files[f+1]
}

// TestNextPageWholeSearch pages through whole trees of small and of large
// files, at once and pausing between pages: the pages equal those
// scanned alone, the scan was handed on from page to page, and afterwards
// no descriptor is left open.
func TestNextPageWholeSearch(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files int
		size  int
		pause time.Duration
	}{
		{"small files", 400, 100, 0},
		{"small files, pauses", 400, 100, 20 * time.Millisecond},
		{"files larger than a page", 12, 40_000, 0},
		{"files larger than a page, pauses", 12, 40_000, 20 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pagingAhead(t, time.Second)
			dir := t.TempDir()
			for i := range tc.files {
				body := strings.Repeat(fmt.Sprintf("line %d, plain\n", i), tc.size/16)
				if i%9 == 4 {
					body += "a needle\n" + body + "one more needle\n"
				}
				if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%03d.txt", i)), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			// Each root is warmed up first: a search with no cursor makes
			// what a Root keeps for its life (inotify instances, the
			// /proc/self/fd directory).
			root := func() *Root {
				r := smallPageRoot(t, dir)
				followPages(t, r, searchArgs{Query: json.RawMessage(`"absent"`)})
				return r
			}
			pages := func(r *Root, workers int) ([]pageRecord, int) {
				aheadMaxWorkers = workers
				carried := 0
				nextPageKept = func(c bool) {
					if c {
						carried++
					}
				}
				defer func() { nextPageKept = nil }()
				args := searchArgs{Query: json.RawMessage(`"needle"`), Limit: json.RawMessage(`5`)}
				var recs []pageRecord
				for {
					p, err := r.searchText(context.Background(), args)
					if err != nil {
						t.Fatal(err)
					}
					recs = append(recs, positionRecord(t, p))
					if p.next == nil {
						return recs, carried
					}
					args.Cursor, _ = json.Marshal(*p.next)
					time.Sleep(tc.pause)
				}
			}
			want, _ := pages(root(), 1)
			r := root()
			fds := openFDs(t)
			got, carried := pages(r, 2)
			if !slices.EqualFunc(got, want, func(a, b pageRecord) bool {
				return slices.Equal(a.items, b.items) && a.next == b.next && a.hash == b.hash
			}) {
				t.Fatalf("pages differ from those scanned alone:\n got %v\nwant %v", got, want)
			}
			if len(got) < 3 || carried == 0 {
				t.Fatalf("%d pages, the scan handed on %d times; want several pages and some", len(got), carried)
			}
			for deadline := time.Now().Add(5 * time.Second); openFDs(t) > fds; time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("%d descriptors open after paging, %d before", openFDs(t), fds)
				}
			}
			t.Logf("%d pages, the scan handed on %d times", len(got), carried)
		})
	}
}

// TestNextPageWindow: a client that follows the cursor widens the window
// the scan may run ahead of its page, but the files it holds open stay
// within the window's files (at most runMaxWindowFiles), the groups opened
// past them, the two parts and the closes queued for the next batch.
func TestNextPageWindow(t *testing.T) {
	dir := t.TempDir()
	for i := range 1500 {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%04d.txt", i)), []byte(strings.Repeat("plain text\n", 9)+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := smallPageRoot(t, dir)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	if p, err := r.searchText(context.Background(), searchArgs{Query: json.RawMessage(`"absent"`), Path: "f0000.txt"}); err != nil || p.next != nil {
		t.Fatalf("warm-up search: %v", err)
	}
	fds := openFDs(t)
	args := searchArgs{Query: json.RawMessage(`"needle"`)}
	for page := range 8 {
		p, err := r.searchText(context.Background(), args)
		if err != nil || p.next == nil {
			t.Fatalf("page %d: %v", page, err)
		}
		time.Sleep(50 * time.Millisecond) // the scan runs as far as it may
		r.next.mu.Lock()
		a := r.next.p.ahead
		r.next.mu.Unlock()
		held := openFDs(t) - fds
		// The files claimed, the rest of their last group and the group
		// after it opened, the two parts, and closes queued for the next
		// batch.
		if most := min(int(a.window.Load())*nextPageEarlyFiles, runMaxWindowFiles) + 3*confine.BatchSize + 2; held > most {
			t.Fatalf("page %d: the scan ahead holds %d descriptors, want at most %d", page, held, most)
		}
		args.Cursor, _ = json.Marshal(*p.next)
	}
	r.next.mu.Lock()
	w := r.next.p.ahead.window.Load()
	r.next.mu.Unlock()
	if w != runMaxWindow {
		t.Fatalf("window after 8 pages followed: %d pages, want %d", w, runMaxWindow)
	}
}

// TestRunBudgets plans runs: files after the first whole, those a page is
// predicted to end inside left to the pages (-1).
func TestRunBudgets(t *testing.T) {
	sizes := func(s ...int64) []scopedFile {
		fs := make([]scopedFile, len(s))
		for i := range s {
			fs[i].id.Size = s[i]
		}
		return fs
	}
	for _, tc := range []struct {
		name  string
		files []scopedFile
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

// TestNextPageMostlyBinary pages through a tree laid out like
// /usr/share/doc: in each package folder a compressed changelog (binary)
// and a license text, one in five of which holds the term. A binary file
// uses none of a page's byte budget, so a page reaches far past the file
// its budget predicts it ends in, and past the scan's window: every page
// is still answered, within its call's deadline, and the pages are those
// scanned alone.
func TestNextPageMostlyBinary(t *testing.T) {
	dir := t.TempDir()
	for i := range 1200 {
		d := filepath.Join(dir, fmt.Sprintf("pkg%04d", i))
		text := strings.Repeat("some license text here and there\n", 100+i*37%300)
		if i%5 == 0 {
			text += "copyright 2020\n"
		}
		changelog := "\x1f\x8b\x00" + strings.Repeat("zzzzzzzzzzzzzz\n", 300+i*53%500)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, body := range map[string]string{"copyright": text, "changelog.Debian.gz": changelog} {
			if err := os.WriteFile(filepath.Join(d, name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	pages := func(workers int, pause time.Duration) []pageRecord {
		pagingAhead(t, time.Second)
		aheadMaxWorkers = workers
		r, err := Open(Config{Root: dir, Include: []string{"**"}, Limits: DefaultLimits})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		args := searchArgs{Query: json.RawMessage(`"copyright"`)}
		var recs []pageRecord
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			p, err := r.searchText(ctx, args)
			cancel()
			if err != nil {
				t.Fatalf("%d goroutines, page %d: %v", workers, len(recs)+1, err)
			}
			recs = append(recs, positionRecord(t, p))
			if p.next == nil {
				return recs
			}
			args.Cursor, _ = json.Marshal(*p.next)
			time.Sleep(pause)
		}
	}
	want := pages(1, 0)
	if len(want) < 3 {
		t.Fatalf("%d pages; the tree should give several", len(want))
	}
	for _, pause := range []time.Duration{0, 5 * time.Millisecond} {
		got := pages(2, pause)
		if !slices.EqualFunc(got, want, func(a, b pageRecord) bool {
			return slices.Equal(a.items, b.items) && a.next == b.next && a.hash == b.hash
		}) {
			t.Fatalf("pause %v: pages differ from those scanned alone:\n got %v\nwant %v", pause, got, want)
		}
	}
}
