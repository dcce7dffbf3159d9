//go:build linux

package e2e

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A torn page is one that mixes two states of the filesystem. These tests
// page through every tool while writers keep changing what is paged, and
// check every page against the states the tree can be in: each page must
// continue one state the previous pages agree with, or be refused with
// the changed-state error; a traversal that completes reproduces one
// state exactly.

// pager follows one tool's traversals against its possible states.
type pager struct {
	name   string
	tool   string
	args   map[string]any
	states map[string][]string // state -> every item of a traversal, canonical JSON

	off      int
	cands    []string
	pages    int
	refused  int
	complete tally
}

func canonical(raw json.RawMessage) string {
	var v any
	json.Unmarshal(raw, &v)
	return string(mustJSON(v))
}

// step serves one page: the next of the current traversal, or the first
// of a new one. It reports what broke the rules; it is called from
// goroutines, so it does not end the test itself.
func (p *pager) step(cs *mcp.ClientSession, cursor *string) error {
	args := map[string]any{}
	for k, v := range p.args {
		args[k] = v
	}
	if *cursor != "" {
		args["cursor"] = *cursor
	} else {
		p.off, p.cands = 0, keys(p.states)
	}
	r, err := tryCall(cs, p.tool, args)
	if err != nil {
		return err
	}
	if r.isError {
		if !refusedAsChanged(r.text) {
			return fmt.Errorf("%s: page refused with %q, want only the changed-state error", p.name, r.text)
		}
		// A first page too: the tree changed under the call itself.
		p.refused++
		*cursor = ""
		return nil
	}
	p.pages++
	var page []string
	for _, it := range r.page.Items {
		page = append(page, canonical(it))
	}
	var kept []string
	for _, s := range p.cands {
		want := p.states[s]
		if p.off+len(page) <= len(want) && slices.Equal(want[p.off:p.off+len(page)], page) {
			kept = append(kept, s)
		}
	}
	if len(kept) == 0 {
		return fmt.Errorf("%s: torn page at item %d (states %v): %s", p.name, p.off, p.cands, strings.Join(page, " "))
	}
	p.cands, p.off = kept, p.off+len(page)
	if r.page.NextCursor != nil {
		*cursor = *r.page.NextCursor
		return nil
	}
	*cursor = ""
	var done []string
	for _, s := range p.cands {
		if len(p.states[s]) == p.off {
			done = append(done, s)
		}
	}
	if len(done) == 0 {
		return fmt.Errorf("%s: traversal ended after %d items, matching no state's length", p.name, p.off)
	}
	p.complete.add(strings.Join(done, "|"))
	return nil
}

func (p *pager) String() string {
	return fmt.Sprintf("%s: %d pages, %d changed-state refusals, completed %s", p.name, p.pages, p.refused, &p.complete)
}

// tornTree writes one state of the directory d at dir: 40 files in both
// states plus 5 more in "beta", each with padding and one needle line, and
// a subdirectory or two. It returns the items list_directory,
// search_files and search_text should report for that state.
func tornTree(t *testing.T, dir, state string) (list, files, hits []string) {
	t.Helper()
	pad := strings.Repeat("padding that makes the scan budget cut pages\n", 100)
	names := []string{"sub/x.txt"}
	for i := range 40 {
		names = append(names, fmt.Sprintf("n%02d.txt", i))
	}
	if state == "beta" {
		names = append(names, "sub2/y.txt", "m00.txt", "m01.txt", "m02.txt", "m03.txt", "m04.txt")
	}
	slices.Sort(names)
	seenDir := map[string]bool{}
	var entries []string
	for _, n := range names {
		writeFile(t, filepath.Join(dir, n), pad+state+" needle "+n+"\n"+pad[:500])
		path := "d/" + n
		files = append(files, string(mustJSON(map[string]any{"path": path})))
		hits = append(hits, string(mustJSON(map[string]any{"path": path, "line": 101, "text": state + " needle " + n})))
		if sub, _, ok := strings.Cut(n, "/"); ok {
			if !seenDir[sub] {
				seenDir[sub] = true
				entries = append(entries, sub+"/")
			}
			continue
		}
		entries = append(entries, n)
	}
	// Listings sort by name alone.
	slices.SortFunc(entries, func(a, b string) int { return strings.Compare(strings.TrimSuffix(a, "/"), strings.TrimSuffix(b, "/")) })
	for _, e := range entries {
		if name, ok := strings.CutSuffix(e, "/"); ok {
			list = append(list, string(mustJSON(map[string]any{"name": name, "kind": "directory", "path": "d/" + name})))
		} else {
			list = append(list, string(mustJSON(map[string]any{"name": e, "kind": "file", "path": "d/" + e})))
		}
	}
	return list, files, hits
}

// TestAttackTornListings pages through list_directory, search_files and
// search_text over a directory that a writer keeps exchanging atomically
// between two states, while another writer rewrites a file outside the
// paged scope through write_text_file; in default and deterministic mode.
func TestAttackTornListings(t *testing.T) {
	for _, mode := range []string{"default", "deterministic"} {
		t.Run(mode, func(t *testing.T) {
			base := t.TempDir()
			root, alt := filepath.Join(base, "ws"), filepath.Join(base, "alt")
			la, fa, ha := tornTree(t, filepath.Join(root, "d"), "alpha")
			lb, fb, hb := tornTree(t, alt, "beta")
			writeFile(t, filepath.Join(root, "log.md"), "start\n")
			args := []string{"--include", "**", "--max-scan-bytes", "16384"}
			var cs *mcp.ClientSession
			if mode == "deterministic" {
				cs = detWorker(t, root, newKey(t, 32), args[2:]...)
			} else {
				cs = worker(t, root, args...)
			}
			pagers := []*pager{
				{name: "list_directory", tool: "list_directory", args: map[string]any{"path": "d", "limit": 7}, states: map[string][]string{"alpha": la, "beta": lb}},
				{name: "search_files", tool: "search_files", args: map[string]any{"query": ".txt", "path": "d", "limit": 6}, states: map[string][]string{"alpha": fa, "beta": fb}},
				{name: "search_text", tool: "search_text", args: map[string]any{"query": "needle", "path": "d", "limit": 9}, states: map[string][]string{"alpha": ha, "beta": hb}},
			}
			// Fast and slow phases, so traversals both tear and complete.
			stopSwap := churn(1<<30, 0, func(i int) {
				exchange(t, filepath.Join(root, "d"), alt)
				time.Sleep([]time.Duration{time.Millisecond, 2 * time.Millisecond, 60 * time.Millisecond}[i%3])
			})
			stopWrite := churn(1<<30, 3*time.Millisecond, func(i int) {
				r, err := tryCall(cs, "write_text_file", map[string]any{"path": "log.md", "content": strings.Repeat("line\n", i%50)})
				if err != nil || r.isError {
					t.Errorf("write: %v %+v", err, r)
				}
			})
			t.Cleanup(func() { stopSwap(); stopWrite() })
			var wg sync.WaitGroup
			deadline := time.Now().Add(1200 * time.Millisecond)
			for _, p := range pagers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					var cursor string
					for i := 0; i < 2000 && time.Now().Before(deadline) && !t.Failed(); i++ {
						if err := p.step(cs, &cursor); err != nil {
							t.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			swaps, writes := stopSwap(), stopWrite()
			// Quiet now: one more traversal of each completes.
			for _, p := range pagers {
				before := p.complete.String()
				for cursor, i := "", 0; i == 0 || cursor != ""; i++ {
					if err := p.step(cs, &cursor); err != nil {
						t.Fatal(err)
					}
				}
				if p.complete.String() == before {
					t.Errorf("%s never completed", p)
				}
				t.Logf("figures: torn %s: %s (%d swaps, %d writes meanwhile)", mode, p, swaps, writes)
			}
		})
	}
}

// TestAttackTornRead pages through read_text_file while write_text_file
// keeps replacing the file with one of two texts (each twice in a row, so
// deterministic cursors also meet identical rewrites): every page is a
// slice of one text at its byte_offset, continuing the text the previous
// pages came from, or the changed-state error.
func TestAttackTornRead(t *testing.T) {
	texts := map[string]string{
		"A": strings.Repeat("alpha é line of text\n", 3000), // 66 KB
		"B": strings.Repeat("beta ✓ other text\n", 4000),    // 80 KB
	}
	for _, mode := range []string{"default", "deterministic"} {
		t.Run(mode, func(t *testing.T) {
			root := tree(t, map[string]string{"f.txt": texts["A"]})
			args := []string{"--include", "**", "--max-write-bytes", "100000", "--max-read-bytes", "12000"}
			var cs *mcp.ClientSession
			if mode == "deterministic" {
				cs = detWorker(t, root, newKey(t, 32), args[2:]...)
			} else {
				cs = worker(t, root, args...)
			}
			stop := churn(1<<30, 0, func(i int) {
				r, err := tryCall(cs, "write_text_file", map[string]any{"path": "f.txt", "content": texts[[]string{"A", "A", "B", "B"}[i%4]]})
				if err != nil || r.isError {
					t.Errorf("write: %v %+v", err, r)
				}
				time.Sleep([]time.Duration{time.Millisecond, 80 * time.Millisecond}[i%2])
			})
			t.Cleanup(func() { stop() })
			var pages, refused, completed, writes int
			var complete tally
			var cursor string
			var cands []string
			var got strings.Builder
			deadline := time.Now().Add(1200 * time.Millisecond)
			stopped, atStop := false, 0
			for i := 0; ; i++ {
				if !stopped && (i >= 3000 || time.Now().After(deadline)) {
					writes, stopped, atStop = stop(), true, completed
				}
				if stopped && cursor == "" && completed > atStop {
					break // quiet now, and a traversal completed since
				}
				if i > 10000 {
					t.Fatal("no traversal completed once the writer stopped")
				}
				a := map[string]any{"path": "f.txt"}
				if cursor != "" {
					a["cursor"] = cursor
				} else {
					cands, got = []string{"A", "B"}, strings.Builder{}
				}
				r := call(t, cs, "read_text_file", a)
				if r.isError {
					// A first page too: the file changed under the call.
					if !refusedAsChanged(r.text) {
						t.Fatalf("page refused with %q", r.text)
					}
					refused++
					cursor = ""
					continue
				}
				pages++
				for _, c := range items[readChunk](t, r) {
					if int(c.ByteOffset) != got.Len() {
						t.Fatalf("chunk at byte_offset %d, want %d", c.ByteOffset, got.Len())
					}
					got.WriteString(c.Text)
				}
				var kept []string
				for _, s := range cands {
					if strings.HasPrefix(texts[s], got.String()) {
						kept = append(kept, s)
					}
				}
				if len(kept) == 0 {
					t.Fatalf("torn read: %d bytes match neither text", got.Len())
				}
				cands, cursor = kept, ""
				if r.page.NextCursor != nil {
					cursor = *r.page.NextCursor
					continue
				}
				var done []string
				for _, s := range cands {
					if texts[s] == got.String() {
						done = append(done, s)
					}
				}
				if len(done) == 0 {
					t.Fatalf("read ended after %d bytes, matching neither text whole", got.Len())
				}
				complete.add(strings.Join(done, "|"))
				completed++
			}
			t.Logf("figures: torn read %s: %d pages, %d changed-state refusals, completed %s (%d writes meanwhile)", mode, pages, refused, &complete, writes)
		})
	}
}

type readChunk struct {
	ByteOffset int64  `json:"byte_offset"`
	Text       string `json:"text"`
}
