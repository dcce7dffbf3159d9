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
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fsmcp/fsmcp/worker/paging"
)

// TestNextPage pages through a tree, doing something between the first
// page and the second: the second page takes over the next page scanned
// ahead exactly when it continues the first (same cursor, same limit, the
// scope unchanged and within the engine's hold), and in every case answers as a
// page that scans alone would (items, cursor, content hash, or its error).
func TestNextPage(t *testing.T) {
	needle := "needle"
	const hold = 100 * time.Millisecond
	cases := []struct {
		name    string
		between func(t *testing.T, dir string, r *Root, args searchArgs)
		limit   int // the second page's limit, when not the first's
		taken   bool
		err     string // the second page's error, if any
	}{
		{name: "follows at once", taken: true},
		{name: "another limit", limit: 7},
		{
			name: "another search between",
			between: func(t *testing.T, _ string, r *Root, args searchArgs) {
				args.Cursor, args.Query = nil, json.RawMessage(`"line 7 of"`)
				followPages(t, r, args)
			},
		},
		{
			// The cursor is used twice: the page after it has handed
			// the scan on to the one after that, which the second use
			// must not take.
			name: "the same cursor again",
			between: func(t *testing.T, _ string, r *Root, args searchArgs) {
				if _, err := r.searchText(context.Background(), args); err != nil {
					t.Fatal(err)
				}
			},
		},
		{
			// The scope's watches report it, so the page walks again:
			// the same files, but another inventory than the one the
			// next page was planned on.
			name: "an excluded directory made in scope",
			between: func(t *testing.T, dir string, _ *Root, _ searchArgs) {
				if err := os.Mkdir(filepath.Join(dir, "d1", ".git"), 0o755); err != nil {
					t.Fatal(err)
				}
			},
		},
		{
			// No watch sees a write through a link made after the walk;
			// the file's identity, checked again when the page takes
			// it, does.
			name: "a file of the next page linked outside the root and written",
			between: func(t *testing.T, dir string, _ *Root, _ searchArgs) {
				time.Sleep(20 * time.Millisecond) // let the next page be read
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
			taken: true, err: "the filesystem changed since this cursor was issued",
		},
		{
			name:    "after the hold",
			between: func(*testing.T, string, *Root, searchArgs) { time.Sleep(3 * hold) },
		},
		{
			name: "a file of the next page written",
			between: func(t *testing.T, dir string, _ *Root, _ searchArgs) {
				time.Sleep(20 * time.Millisecond) // let the next page be read
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
			var outcomes, again int // the second page's (PageEnded)
			second := func(workers int) (pageRecord, bool, bool, error) {
				dir, r := nextPageTree(t, needle)
				// What the second page decides, once it is asked for.
				asked, found, taken := false, false, false
				usePages(r, paging.Options{Workers: workers, Hold: hold,
					TakenOver: func(ok bool) {
						if asked {
							found, taken = true, ok
						}
					},
					PageEnded: func(tk, ag int) {
						if asked {
							outcomes, again = tk, ag
						}
					},
				})
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
				asked = true
				p, err = r.searchText(context.Background(), args)
				if err != nil {
					return pageRecord{}, found, taken, err
				}
				return positionRecord(t, p), found, taken, nil
			}
			want, _, _, wantErr := second(1)
			got, found, taken, err := second(2)
			sameAsAlone(t, "second", got, want, err, wantErr, tc.err)
			if want := tc.taken && canWatch; taken != want {
				t.Fatalf("next page taken over: %v (one kept then: %v), want %v", taken, found, want)
			}
			// A page taken over uses what was scanned for it: every file
			// it reaches was planned, and none needs scanning again.
			if taken && tc.err == "" && (outcomes == 0 || again != 0) {
				t.Fatalf("the page took %d outcomes scanned ahead and scanned %d files again, want some and none", outcomes, again)
			}
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

// writeThroughLink links the file at path from outside the root and
// rewrites it through that link, which no watch of the root sees.
func writeThroughLink(t *testing.T, path string) {
	t.Helper()
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Link(path, link); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(link, []byte("a NEEDLE"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeThroughMapping changes the first byte of the file at path through a
// shared memory mapping, which no inotify watch reports.
func writeThroughMapping(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	m, err := unix.Mmap(int(f.Fd()), 0, 1, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return err
	}
	m[0] = 'A'
	return unix.Munmap(m)
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

// nextPageTree writes 40 files of 2-3 KiB in two directories, every third
// holding needle on two lines, and opens them as a root whose pages hold 5
// items and scan 16 KiB.
func nextPageTree(t *testing.T, needle string) (string, *Root) {
	t.Helper()
	dir := t.TempDir()
	for i := range 40 {
		body := strings.Repeat(fmt.Sprintf("line %d of plain text\n", i), 100+i)
		if i%3 == 1 {
			body += "one " + needle + "\nand a " + needle + " again\n"
		}
		writeFile(t, filepath.Join(dir, fmt.Sprintf("d%d", i%2), fmt.Sprintf("f%02d.txt", i)), []byte(body))
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

// TestNextPageReadAfterAsked: a file of a next page opened before the
// page is asked for but read after (the group opened past
// nextPageEarlyFiles) is checked by the read's own identity check, during
// the call: written through a link made after the walk before the page is
// asked for, it fails the page's cursor as it does a page scanned alone;
// unwritten, its outcome is taken without scanning it again.
func TestNextPageReadAfterAsked(t *testing.T) {
	// 400 files of 100 bytes: a 16 KiB page ends in f163, so the next
	// page scans f163 to f226 before it is asked for and has f227 to
	// f242 open; f235 holds the needle.
	const target = "f235.txt"
	tests := []struct {
		name string
		// write: f235 is written through a link before the page is
		// asked for; betweenOpenAndRead: through a shared mapping after
		// its group was opened, before the page reads it (once asked
		// for). No watch reports a write through a mapping; only the
		// identity check after the read sees it (the write fault sets
		// mtime).
		write, betweenOpenAndRead bool
	}{
		{"not written", false, false},
		{"written before the ask", true, false},
		{"written through a mapping between its open and its read", true, true},
	}
	for _, tt := range tests {
		write := tt.write
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for i := range 400 {
				body := strings.Repeat("x", 99) + "\n"
				if name := fmt.Sprintf("f%03d.txt", i); name == target {
					body = "a needle" + body[8:]
				}
				if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%03d.txt", i)), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			r := smallPageRoot(t, dir)
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
			// Set before the scan starts, armed once the page is asked for.
			var armed atomic.Bool
			var hookErr error
			hooked := false
			taken, again := false, -1
			opts := paging.Options{
				TakenOver: func(ok bool) {
					if armed.Load() {
						taken = ok
					}
				},
				PageEnded: func(_, ag int) {
					if armed.Load() {
						again = ag
					}
				},
			}
			if tt.betweenOpenAndRead {
				opts.ReadAhead = func(path string) {
					if path == target && armed.Load() && !hooked {
						hooked = true
						hookErr = writeThroughMapping(filepath.Join(dir, target))
					}
				}
			}
			usePages(r, opts)
			args := searchArgs{Query: json.RawMessage(`"needle"`)}
			p, err := r.searchText(context.Background(), args)
			if err != nil || p.next == nil || len(p.fitter.items) != 0 {
				t.Fatalf("first page: %v, %d items, cursor %v; want none and a cursor", err, len(p.fitter.items), p != nil && p.next != nil)
			}
			time.Sleep(100 * time.Millisecond) // the next page scans what it may
			if write && !tt.betweenOpenAndRead {
				writeThroughLink(t, filepath.Join(dir, target))
			}
			armed.Store(true)
			args.Cursor, _ = json.Marshal(*p.next)
			p, err = r.searchText(context.Background(), args)
			if taken != canWatch {
				t.Fatalf("the second page took its next page over: %v, want %v", taken, canWatch)
			}
			if !canWatch {
				// No page was scanned ahead: the second is scanned when
				// asked, so no read ahead wrote through the mapping, and
				// a write before the ask is what its cursor sees change.
				wrote := write && !tt.betweenOpenAndRead
				if hooked || (err != nil) != wrote || !wrote && len(p.fitter.items) != 1 {
					t.Fatalf("second page, %s written before the ask %v, read ahead %v: %v, %d items; want the cursor refused after a write, else 1 item", target, wrote, hooked, err, len(p.fitter.items))
				}
				return
			}
			if tt.betweenOpenAndRead && (!hooked || hookErr != nil) {
				t.Fatalf("%s was not read after the ask from a group opened before it (hooked %v, %v)", target, hooked, hookErr)
			}
			switch {
			case write && (err == nil || !strings.Contains(err.Error(), "the filesystem changed since this cursor was issued")):
				t.Fatalf("second page after %s was written: %v; want the cursor refused", target, err)
			case !write && (err != nil || len(p.fitter.items) != 1 || again != 0):
				t.Fatalf("second page: %v, %d items, %d files scanned again; want 1 item, none again", err, len(p.fitter.items), again)
			}
		})
	}
}
