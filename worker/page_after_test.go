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
)

// TestPageAfter pages through a tree with pauses, so that each next page is
// all scanned before it is asked for and the page after it is started:
// every page equals the one scanned alone, and the page after is kept as
// a next page exactly when the page before it ends where it was planned,
// over the same scope with the same limit. A file of the page after that
// is written (through a link, which no watch sees) between pages fails its
// cursor as it does alone.
func TestPageAfter(t *testing.T) {
	needle := "needle"
	cases := []struct {
		name string
		// between runs after the second page, before the third.
		between func(t *testing.T, dir string, third string)
		limit   int // the third page's limit, when not 5
		kept    bool
		err     string
	}{
		{name: "follows", kept: true},
		{name: "another limit", limit: 7, kept: true},
		{
			name: "a file of the third page linked outside the root and written",
			between: func(t *testing.T, dir, third string) {
				writeThroughLink(t, filepath.Join(dir, third))
			},
			kept: true, err: "the filesystem changed since this cursor was issued",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pagingAhead(t, time.Second)
			third := func(workers int) (pageRecord, []bool, error) {
				aheadMaxWorkers = workers
				dir, r := nextPageTree(t, needle)
				var kept []bool
				nextPageAfter = func(ok bool) { kept = append(kept, ok) }
				defer func() { nextPageAfter = nil }()
				args := searchArgs{Query: json.RawMessage(`"` + needle + `"`), Limit: json.RawMessage(`5`)}
				var p *pageResult
				var err error
				for i := range 2 {
					if p, err = r.searchText(context.Background(), args); err != nil || p.next == nil {
						t.Fatalf("page before the third: %v (cursor %v)", err, p != nil && p.next != nil)
					}
					args.Cursor, _ = json.Marshal(*p.next)
					// The next page is all scanned and the page after it
					// started (scanning alone, neither is).
					if workers > 1 && i == 0 && !waitAfter(r, 5*time.Second) {
						t.Fatal("no page after was started within 5 s")
					}
				}
				if tc.between != nil {
					tc.between(t, dir, secondFileOfPage(t, dir, *p.next))
				}
				if tc.limit != 0 {
					args.Limit = json.RawMessage(fmt.Sprint(tc.limit))
				}
				p, err = r.searchText(context.Background(), args)
				if err != nil {
					return pageRecord{}, kept, err
				}
				return positionRecord(t, p), kept, nil
			}
			want, _, wantErr := third(1)
			got, kept, err := third(2)
			if fmt.Sprint(err) != fmt.Sprint(wantErr) || tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("third page's error %v, alone %v, want %q", err, wantErr, tc.err)
			}
			if !slices.Equal(got.items, want.items) || got.next != want.next || got.hash != want.hash {
				t.Fatalf("third page differs from the one scanned alone:\n got %v\nwant %v", got, want)
			}
			// The second page ends where its page after was planned to
			// start, so it keeps it (whatever the third page asks).
			if len(kept) == 0 || kept[0] != tc.kept {
				t.Fatalf("pages after kept: %v, want the first %v", kept, tc.kept)
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

// TestPageAfterWholeSearch pages through a whole tree, pausing between
// pages: the pages equal those scanned alone, and pages after were kept.
func TestPageAfterWholeSearch(t *testing.T) {
	pagingAhead(t, time.Second)
	pages := func(workers int) ([]pageRecord, int) {
		aheadMaxWorkers = workers
		_, r := nextPageTree(t, "needle")
		kept := 0
		nextPageAfter = func(ok bool) {
			if ok {
				kept++
			}
		}
		defer func() { nextPageAfter = nil }()
		args := searchArgs{Query: json.RawMessage(`"needle"`), Limit: json.RawMessage(`5`)}
		var recs []pageRecord
		for {
			p, err := r.searchText(context.Background(), args)
			if err != nil {
				t.Fatal(err)
			}
			recs = append(recs, positionRecord(t, p))
			if p.next == nil {
				return recs, kept
			}
			args.Cursor, _ = json.Marshal(*p.next)
			if workers > 1 {
				waitAfter(r, 200*time.Millisecond) // none after the page before the last
			}
		}
	}
	want, _ := pages(1)
	got, kept := pages(2)
	if !slices.EqualFunc(got, want, func(a, b pageRecord) bool {
		return slices.Equal(a.items, b.items) && a.next == b.next && a.hash == b.hash
	}) {
		t.Fatalf("pages differ from those scanned alone:\n got %v\nwant %v", got, want)
	}
	if kept == 0 {
		t.Fatalf("no page after was kept in %d pages", len(got))
	}
	t.Logf("%d pages, %d pages after kept", len(got), kept)
}

// TestTakeAfter: the page after kept becomes the next page only for the
// page that ends exactly where it starts, over the same inventory with the
// same limit; any other drops it (its scan stops).
func TestTakeAfter(t *testing.T) {
	_, r := nextPageTree(t, "needle")
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	args := searchArgs{Query: json.RawMessage(`"needle"`), Limit: json.RawMessage(`5`)}
	if p, err := r.searchText(context.Background(), args); err != nil || p.next == nil || r.next.p == nil {
		t.Fatalf("first page: %v; want a cursor and a next page", err)
	}
	next := r.next.p
	// No page after of the search's own from now on: the next page goes.
	r.next.close()
	start := textCursor{File: 3, Offset: 100, Line: 4, LineStart: 90}
	other := &inventory{files: next.inv.files}
	cases := []struct {
		name  string
		inv   *inventory
		limit int
		pos   textCursor
		kept  bool
	}{
		{"where it starts", next.inv, 5, start, true},
		{"another inventory", other, 5, start, false},
		{"another limit", next.inv, 6, start, false},
		{"another file", next.inv, 5, textCursor{File: 4, Offset: 100, Line: 4, LineStart: 90}, false},
		{"another offset", next.inv, 5, textCursor{File: 3, Offset: 101, Line: 4, LineStart: 90}, false},
		{"another line", next.inv, 5, textCursor{File: 3, Offset: 100, Line: 5, LineStart: 90}, false},
		{"skipping", next.inv, 5, textCursor{File: 3, Offset: 100, Line: 4, LineStart: 90, Skip: true}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q := &nextPage{inv: next.inv, limit: 5, m: next.m, start: start}
			q.guards = &pageGuards{sg: r.dir.NewScanGuard()}
			q.ahead = r.newAhead(context.Background(), &search{limit: 5, m: next.m}, next.inv.files, start.File, start.position(), q.guards, 2, nil)
			q.timer = time.AfterFunc(time.Hour, func() {})
			r.next.mu.Lock()
			r.next.after = q
			r.next.mu.Unlock()
			got := r.next.takeAfter(tc.inv, tc.limit, tc.pos)
			if (got == q) != tc.kept || got != nil && got != q {
				t.Fatalf("takeAfter gave %p, want %p kept %v", got, q, tc.kept)
			}
			r.next.mu.Lock()
			after := r.next.after
			r.next.mu.Unlock()
			if after != nil {
				t.Fatal("the page after is still kept after takeAfter")
			}
			if dropped := q.ahead.ctx.Err() != nil; dropped == tc.kept {
				t.Fatalf("its scan stopped: %v, want %v", dropped, !tc.kept)
			}
			q.drop()
		})
	}
}

// waitAfter waits up to d for r to keep a page after; false if it keeps
// none by then.
func waitAfter(r *Root, d time.Duration) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(time.Millisecond) {
		r.next.mu.Lock()
		ok := r.next.after != nil
		r.next.mu.Unlock()
		if ok {
			return true
		}
	}
	return false
}
