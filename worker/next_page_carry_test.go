//go:build linux && !fsmcp_portable

package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/fsmcp/fsmcp/worker/paging"
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
			pagingAhead(t)
			third := func(workers int) (rec pageRecord, carried, taken bool, again int, err error) {
				dir, r := nextPageTree(t, needle)
				// The first two pages tell what they keep; the third,
				// what it takes.
				asked := false
				usePages(r, paging.Options{Workers: workers, Hold: time.Second,
					NextKept: func(c bool) {
						if !asked {
							carried = c
						}
					},
					TakenOver: func(ok bool) {
						if asked {
							taken = ok
						}
					},
					PageEnded: func(_, ag int) {
						if asked {
							again = ag
						}
					},
				})
				args := searchArgs{Query: json.RawMessage(`"` + needle + `"`), Limit: json.RawMessage(`5`)}
				var p *pageResult
				for range 2 {
					p, err = r.searchText(context.Background(), args)
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
				again, asked = -1, true
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
			pagingAhead(t)
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
				carried := 0
				usePages(r, paging.Options{Workers: workers, Hold: time.Second, NextKept: func(c bool) {
					if c {
						carried++
					}
				}})
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
		pagingAhead(t)
		r, err := Open(Config{Root: dir, Include: []string{"**"}, Limits: DefaultLimits})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		usePages(r, paging.Options{Workers: workers, Hold: time.Second})
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
