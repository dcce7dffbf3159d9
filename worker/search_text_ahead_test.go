package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fsmcp/fsmcp/worker/paging"
)

// pageRecord is one search_text page as a client sees it.
type pageRecord struct {
	items []string
	next  string
	hash  string
}

// followPages follows search_text's cursors from the start with args and
// returns every page.
func followPages(t *testing.T, r *Root, args searchArgs) []pageRecord {
	t.Helper()
	var pages []pageRecord
	for range 10000 {
		p, err := r.searchText(context.Background(), args)
		if err != nil {
			t.Fatal(err)
		}
		rec := pageRecord{hash: p.fitter.hash()}
		for _, it := range p.fitter.items {
			rec.items = append(rec.items, string(it))
		}
		if p.next != nil {
			rec.next = *p.next
		}
		pages = append(pages, rec)
		if p.next == nil {
			return pages
		}
		args.Cursor, _ = json.Marshal(*p.next)
	}
	t.Fatal("no end after 10000 pages")
	return nil
}

// usePages gives r a paging engine built with opts, closing the one it
// had (and so dropping any next page it kept).
func usePages(r *Root, opts paging.Options) {
	r.pages.Close()
	r.pages = r.newPages(opts)
}

// TestScanAheadSamePages pages through trees whose pages end inside files,
// before binary files, on a match that does not fit (by count or by size),
// with terms of several lengths, once with each page scanning its files
// one after the other and once scanning them ahead on more goroutines: the
// pages (items, cursors, content hashes) are the same, and scanning ahead
// was taken and, where the plan cannot hold, done again.
func TestScanAheadSamePages(t *testing.T) {
	needle := "needle"
	plain := func(n int) []byte { return []byte(strings.Repeat("just some text, nothing to see\n", n)) }
	matching := func(n, width int) []byte {
		var b []byte
		for i := range n {
			b = append(b, fmt.Sprintf("%s %d %s\n", strings.Repeat("w", width), i, needle)...)
		}
		return b
	}
	binary := append([]byte("bin\x00\xff\xfe "+needle+"\n"), plain(300)...)
	type file struct {
		name string
		body []byte
	}
	cases := []struct {
		name   string
		files  []file
		scan   int64 // --max-scan-bytes
		args   map[string]any
		again  bool // some file must be scanned again by the page
		minTak int  // outcomes taken at least
	}{
		{
			name: "small files, pages end inside files",
			files: func() (fs []file) {
				for i := range 40 {
					body := plain(20 + 37*i%200)
					if i%7 == 3 {
						body = append(body, matching(2, 10)...)
					}
					fs = append(fs, file{fmt.Sprintf("d%d/f%02d.txt", i%3, i), body})
				}
				return fs
			}(),
			scan: 16384, args: map[string]any{"query": needle}, minTak: 20,
		},
		{
			name: "binary files break the plan",
			files: func() (fs []file) {
				for i := range 30 {
					body := append(plain(100), matching(1, 5)...)
					if i%4 == 1 {
						body = binary
					}
					fs = append(fs, file{fmt.Sprintf("f%02d.txt", i), body})
				}
				return fs
			}(),
			scan: 16384, args: map[string]any{"query": needle}, again: true, minTak: 10,
		},
		{
			name: "limit reached inside a file",
			files: func() (fs []file) {
				for i := range 12 {
					fs = append(fs, file{fmt.Sprintf("f%02d.txt", i), append(plain(10), matching(3+i%4, 3)...)})
				}
				return fs
			}(),
			scan: 1 << 20, args: map[string]any{"query": needle, "limit": 5}, again: true, minTak: 5,
		},
		{
			name: "result ceiling reached inside a file",
			files: func() (fs []file) {
				for i := range 10 {
					fs = append(fs, file{fmt.Sprintf("f%02d.txt", i), matching(20, 900)})
				}
				return fs
			}(),
			scan: 1 << 20, args: map[string]any{"query": needle, "limit": 200}, again: true, minTak: 1,
		},
		{
			name: "empty, tiny and large files, folded terms of several lengths",
			files: func() (fs []file) {
				for i := range 24 {
					var body []byte
					switch i % 4 {
					case 0:
					case 1:
						body = []byte("ne")
					case 2:
						body = append(plain(1500), []byte("a NEEDLE here\nand a longer-term too\n")...)
					case 3:
						body = append(matching(2, 1), plain(50)...)
					}
					fs = append(fs, file{fmt.Sprintf("d/f%02d.txt", i), body})
				}
				return fs
			}(),
			scan: 16384, args: map[string]any{"any_of": []string{needle, "longer-term", "ee"}, "case_insensitive": true}, minTak: 10,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, f := range tc.files {
				writeFile(t, filepath.Join(dir, filepath.FromSlash(f.name)), f.body)
			}
			lim := DefaultLimits
			lim.MaxScanBytes = tc.scan
			r, err := Open(Config{Root: dir, Include: []string{"**"}, Limits: lim})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { r.Close() })
			b, _ := json.Marshal(tc.args)
			var args searchArgs
			if err := json.Unmarshal(b, &args); err != nil {
				t.Fatal(err)
			}

			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
			usePages(r, paging.Options{Workers: 1})
			want := followPages(t, r, args)
			taken, again, nextTaken := 0, 0, 0
			counting := true // pages' outcomes, while paging the second time
			usePages(r, paging.Options{Workers: 2,
				PageEnded: func(tk, ag int) {
					if counting {
						taken += tk
						again += ag
					}
				},
				TakenOver: func(ok bool) {
					if ok {
						nextTaken++
					}
				},
			})
			got := followPages(t, r, args)
			// Paging again leaves no descriptor open: every file opened
			// ahead is closed, taken or not, even by a goroutine still
			// scanning after its page ended.
			counting = false
			fds := openFDs(t)
			followPages(t, r, args)
			for deadline := time.Now().Add(5 * time.Second); openFDs(t) > fds; time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("%d descriptors open after paging again, %d before", openFDs(t), fds)
				}
			}

			if len(want) < 2 {
				t.Fatalf("%d pages: the case should take several", len(want))
			}
			if !slices.EqualFunc(got, want, func(a, b pageRecord) bool {
				return slices.Equal(a.items, b.items) && a.next == b.next && a.hash == b.hash
			}) {
				t.Fatalf("pages scanned ahead differ:\n got %v\nwant %v", got, want)
			}
			if taken < tc.minTak {
				t.Errorf("%d outcomes scanned ahead taken, want at least %d", taken, tc.minTak)
			}
			if tc.again && again == 0 {
				t.Error("no file was scanned again, though the plan cannot hold here")
			}
			if (nextTaken > 0) != canWatch {
				t.Errorf("%d pages took over their next page scanned ahead; want some where the backend watches (%v), else none", nextTaken, canWatch)
			}
			t.Logf("%d pages, %d outcomes taken, %d files scanned again, %d next pages taken over", len(want), taken, again, nextTaken)
		})
	}
}

// openFDs counts the process's open descriptors but its io_uring
// instances: a Root keeps a few idle rings (confine's ring pool), one more
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
