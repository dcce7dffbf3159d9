package worker

import (
	"context"
	"encoding/base64"
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

// TestSecondPage pages through a tree, doing something between the first
// page and the second: the second page, its files scanned ahead, answers
// as a page that scans alone would (items, cursor, content hash, or its
// error).
func TestSecondPage(t *testing.T) {
	needle := "needle"
	cases := []struct {
		name    string
		between func(t *testing.T, dir string, r *Root, args searchArgs)
		limit   int    // the second page's limit, when not the first's
		err     string // the second page's error, if any
	}{
		{name: "follows at once"},
		{name: "another limit", limit: 7},
		{
			name: "another search between",
			between: func(t *testing.T, _ string, r *Root, args searchArgs) {
				args.Cursor, args.Query = nil, json.RawMessage(`"line 7 of"`)
				followPages(t, r, args)
			},
		},
		{
			// The cursor is used twice.
			name: "the same cursor again",
			between: func(t *testing.T, _ string, r *Root, args searchArgs) {
				if _, err := r.searchText(context.Background(), args); err != nil {
					t.Fatal(err)
				}
			},
		},
		{
			// The scope's watches report it, so the page walks again
			// and finds the same files.
			name: "an excluded directory made in scope",
			between: func(t *testing.T, dir string, _ *Root, _ searchArgs) {
				if err := os.Mkdir(filepath.Join(dir, "d1", ".git"), 0o755); err != nil {
					t.Fatal(err)
				}
			},
		},
		{
			// No watch sees a write through a link made after the walk;
			// the file's identity, checked when the page reads it, does.
			name: "a file of the second page linked outside the root and written",
			between: func(t *testing.T, dir string, _ *Root, _ searchArgs) {
				link := filepath.Join(t.TempDir(), "link")
				if err := os.Link(filepath.Join(dir, "d0", "f16.txt"), link); err != nil {
					t.Fatal(err)
				}
				f, err := os.OpenFile(link, os.O_WRONLY, 0)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				if _, err := f.WriteAt([]byte("NEEDLE"), 0); err != nil {
					t.Fatal(err)
				}
			},
			err: "the filesystem changed since this cursor was issued",
		},
		{
			name: "a file of the second page written",
			between: func(t *testing.T, dir string, _ *Root, _ searchArgs) {
				f, err := os.OpenFile(filepath.Join(dir, "d1", "f25.txt"), os.O_WRONLY|os.O_APPEND, 0)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				if _, err := f.WriteString("a needle more\n"); err != nil {
					t.Fatal(err)
				}
			},
			err: "the filesystem changed since this cursor was issued",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pagingAhead(t)
			second := func(workers int) (pageRecord, error) {
				dir, r := pageTree(t, needle)
				usePages(r, paging.Options{Workers: workers})
				args := searchArgs{Query: json.RawMessage(`"` + needle + `"`), Limit: json.RawMessage(`5`)}
				p, err := r.searchText(context.Background(), args)
				if err != nil || p.next == nil {
					t.Fatalf("first page: %v (cursor %v)", err, p != nil && p.next != nil)
				}
				args.Cursor, _ = json.Marshal(*p.next)
				if tc.between != nil {
					tc.between(t, dir, r, args)
				}
				if tc.limit != 0 {
					args.Limit = json.RawMessage(fmt.Sprint(tc.limit))
				}
				p, err = r.searchText(context.Background(), args)
				if err != nil {
					return pageRecord{}, err
				}
				return positionRecord(t, p), nil
			}
			want, wantErr := second(1)
			got, err := second(2)
			sameAsAlone(t, "second", got, want, err, wantErr, tc.err)
		})
	}
}

// sameAsAlone fails the test unless the page (the which page of a
// search) and its error are those of the page scanned alone, and its
// error is one containing wantErr (none if "").
func sameAsAlone(t *testing.T, which string, got, alone pageRecord, err, aloneErr error, wantErr string) {
	t.Helper()
	if fmt.Sprint(err) != fmt.Sprint(aloneErr) || wantErr == "" && err != nil || wantErr != "" && (err == nil || !strings.Contains(err.Error(), wantErr)) {
		t.Fatalf("%s page's error %v, alone %v, want %q", which, err, aloneErr, wantErr)
	}
	if !slices.Equal(got.items, alone.items) || got.next != alone.next || got.hash != alone.hash {
		t.Fatalf("%s page differs from the one scanned alone:\n got %v\nwant %v", which, got, alone)
	}
}

// pagingAhead sets GOMAXPROCS to 2 for the test, so that its pages scan
// ahead, and restores it once its roots have closed.
func pagingAhead(t *testing.T) {
	procs := runtime.GOMAXPROCS(2)
	t.Cleanup(func() { runtime.GOMAXPROCS(procs) })
}

// positionRecord is page p's record, its cursor by position alone (see
// cursorPosition).
func positionRecord(t *testing.T, p *pageResult) pageRecord {
	t.Helper()
	rec := pageRecord{hash: p.fitter.hash()}
	for _, it := range p.fitter.items {
		rec.items = append(rec.items, string(it))
	}
	if p.next != nil {
		rec.next = cursorPosition(t, *p.next)
	}
	return rec
}

// cursorPosition is the position a search_text cursor holds, without the
// state it binds (which differs between two trees written alike).
func cursorPosition(t *testing.T, tok string) string {
	t.Helper()
	parts := strings.Split(tok, ".")
	b, err := base64.RawURLEncoding.DecodeString(parts[0])
	var body struct {
		P map[string]any `json:"p"`
	}
	if err != nil || json.Unmarshal(b, &body) != nil || body.P == nil {
		t.Fatalf("cursor %q: no position (%v)", tok, err)
	}
	delete(body.P, "s")
	return fmt.Sprint(body.P)
}

// pageTree writes 40 files of 2-3 KiB in two directories, every third
// holding needle on two lines, and opens them as a root whose pages hold 5
// items and scan 16 KiB.
func pageTree(t *testing.T, needle string) (string, *Root) {
	t.Helper()
	dir := t.TempDir()
	for i := range 40 {
		body := strings.Repeat(fmt.Sprintf("line %d of plain text\n", i), 100+i)
		if i%3 == 1 {
			body += "one " + needle + "\nand a " + needle + " again\n"
		}
		p := filepath.Join(dir, fmt.Sprintf("d%d", i%2), fmt.Sprintf("f%02d.txt", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir, smallPageRoot(t, dir)
}

// smallPageRoot opens dir as a root serving everything whose search pages
// scan 16 KiB; it closes with the test.
func smallPageRoot(t *testing.T, dir string) *Root {
	t.Helper()
	lim := DefaultLimits
	lim.MaxScanBytes = 16384
	r, err := Open(Config{Root: dir, Include: []string{"**"}, Limits: lim})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// TestWholeSearch pages through whole trees of small and of large files:
// the pages equal those scanned alone, and afterwards no descriptor is
// left open.
func TestWholeSearch(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files int
		size  int
	}{
		{"small files", 400, 100},
		{"files larger than a page", 12, 40_000},
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
			pages := func(r *Root, workers int) []pageRecord {
				usePages(r, paging.Options{Workers: workers})
				args := searchArgs{Query: json.RawMessage(`"needle"`), Limit: json.RawMessage(`5`)}
				var recs []pageRecord
				for {
					p, err := r.searchText(context.Background(), args)
					if err != nil {
						t.Fatal(err)
					}
					recs = append(recs, positionRecord(t, p))
					if p.next == nil {
						return recs
					}
					args.Cursor, _ = json.Marshal(*p.next)
				}
			}
			want := pages(root(), 1)
			r := root()
			fds := openFDs(t)
			got := pages(r, 2)
			if !slices.EqualFunc(got, want, func(a, b pageRecord) bool {
				return slices.Equal(a.items, b.items) && a.next == b.next && a.hash == b.hash
			}) {
				t.Fatalf("pages differ from those scanned alone:\n got %v\nwant %v", got, want)
			}
			if len(got) < 3 {
				t.Fatalf("%d pages; want several", len(got))
			}
			for deadline := time.Now().Add(5 * time.Second); openFDs(t) > fds; time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("%d descriptors open after paging, %d before", openFDs(t), fds)
				}
			}
		})
	}
}

// TestMostlyBinary pages through a tree laid out like /usr/share/doc: in
// each package folder a compressed changelog (binary) and a license text,
// one in five of which holds the term. A binary file uses none of a page's
// byte budget, so a page reaches far past the file its budget predicts it
// ends in: every page is still answered, within its call's deadline, and
// the pages are those scanned alone.
func TestMostlyBinary(t *testing.T) {
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
	pages := func(workers int) []pageRecord {
		pagingAhead(t)
		r, err := Open(Config{Root: dir, Include: []string{"**"}, Limits: DefaultLimits})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		usePages(r, paging.Options{Workers: workers})
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
		}
	}
	want := pages(1)
	if len(want) < 3 {
		t.Fatalf("%d pages; the tree should give several", len(want))
	}
	got := pages(2)
	if !slices.EqualFunc(got, want, func(a, b pageRecord) bool {
		return slices.Equal(a.items, b.items) && a.next == b.next && a.hash == b.hash
	}) {
		t.Fatalf("pages differ from those scanned alone:\n got %v\nwant %v", got, want)
	}
}
