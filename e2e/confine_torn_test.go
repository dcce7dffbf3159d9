//go:build linux

package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fsmcp/fsmcp/e2e/internal/fusefs"
)

// tornVersions are the states of the rewritten file: the same length and
// layout, each line "line:" and 58 copies of the version's letter, so any
// page that mixes two versions holds two letters.
func tornVersions() [][]byte {
	var vs [][]byte
	for c := byte('a'); c <= 'z'; c++ {
		line := "line:" + strings.Repeat(string(c), 58) + "\n"
		vs = append(vs, []byte(strings.Repeat(line, 1024))) // 64 KiB, 4 read pages
	}
	return vs
}

// TestNoTornPageUnderSameLengthRewrites rewrites one file in place, the
// same length every time, in a tight loop for 10 s while read_text_file
// pages through it and search_text searches it. Every page served must be
// bytes of one version at their offsets; a page a write overlapped is
// refused ("filesystem changed while reading"), never served torn. It runs
// on the test's temporary directory and on a FUSE mount whose timestamps have
// whole-second granularity (as FAT's and SMB's do), where most rewrites
// leave size, mtime and ctime as they were.
func TestNoTornPageUnderSameLengthRewrites(t *testing.T) {
	for _, tc := range []struct {
		name  string
		mount func(t *testing.T, host string) string
	}{
		{"local filesystem", func(t *testing.T, host string) string { return host }},
		{"FUSE, 1 s timestamps", func(t *testing.T, host string) string {
			mnt := t.TempDir()
			fusefs.Mount(t, mnt, fusefs.NewCoarseTimes(host))
			return mnt
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := tc.mount(t, tree(t, map[string]string{"f.txt": string(tornVersions()[0])}))
			checkNoTornPages(t, root)
		})
	}
}

func checkNoTornPages(t *testing.T, root string) {
	const run = 10 * time.Second
	vs := tornVersions()
	path := filepath.Join(root, "f.txt")
	cs := worker(t, root, "--include", "**")

	stop := make(chan struct{})
	var writes atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			t.Error(err)
			return
		}
		defer f.Close()
		for i := 1; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := f.WriteAt(vs[i%len(vs)], 0); err != nil {
				t.Error(err)
				return
			}
			writes.Add(1)
		}
	}()

	type tally struct{ served, refused, torn, mixedTraversals int }
	var read, search tally
	deadline := time.Now().Add(run)
	var readers sync.WaitGroup
	readers.Add(2)
	go func() { // read_text_file, page by page
		defer readers.Done()
		cursor, letters := "", map[byte]bool{}
		for time.Now().Before(deadline) {
			args := map[string]any{"path": "f.txt"}
			if cursor != "" {
				args["cursor"] = cursor
			}
			r, err := tryCall(cs, "read_text_file", args)
			if err != nil {
				t.Error(err)
				return
			}
			if r.isError {
				if !refusedAsChanged(r.text) {
					t.Errorf("read refused with %q", r.text)
					return
				}
				read.refused++
				cursor, letters = "", map[byte]bool{}
				continue
			}
			read.served++
			var page []byte
			var off int64 = -1
			for _, raw := range r.page.Items {
				var c struct {
					ByteOffset int64  `json:"byte_offset"`
					Text       string `json:"text"`
				}
				json.Unmarshal(raw, &c)
				if off < 0 {
					off = c.ByteOffset
				}
				page = append(page, c.Text...)
			}
			if !oneVersion(vs, off, page) {
				read.torn++
				t.Errorf("torn read page at offset %d: %q ... %q", off, page[:min(len(page), 80)], page[max(0, len(page)-80):])
			}
			if len(page) > 5 {
				letters[page[bytes.IndexByte(page, ':')+1]] = true
			}
			cursor = ""
			if r.page.NextCursor != nil {
				cursor = *r.page.NextCursor
			} else {
				if len(letters) > 1 {
					read.mixedTraversals++
				}
				letters = map[byte]bool{}
			}
		}
	}()
	go func() { // search_text, whole-file pages
		defer readers.Done()
		for time.Now().Before(deadline) {
			r, err := tryCall(cs, "search_text", map[string]any{"query": "line:", "limit": 200})
			if err != nil {
				t.Error(err)
				return
			}
			if r.isError {
				if !refusedAsChanged(r.text) {
					t.Errorf("search refused with %q", r.text)
					return
				}
				search.refused++
				continue
			}
			search.served++
			var texts []string
			for _, h := range items[textHit](t, r) {
				texts = append(texts, h.Text)
			}
			if len(texts) == 0 {
				t.Error("search page with no hits")
				continue
			}
			want := texts[0]
			if len(want) != 63 || !strings.HasPrefix(want, "line:") || want[5:] != strings.Repeat(want[5:6], 58) {
				search.torn++
				t.Errorf("torn search hit %q", want)
			}
			for _, s := range texts {
				if s != want {
					search.torn++
					t.Errorf("search page mixes versions: %q and %q", want, s)
					break
				}
			}
		}
	}()
	readers.Wait()
	close(stop)
	wg.Wait()
	t.Logf("%d same-length rewrites in %v; read_text_file: %d pages served, %d refused, %d torn, %d completed traversals mixing versions across pages; search_text: %d pages served, %d refused, %d torn",
		writes.Load(), run, read.served, read.refused, read.torn, read.mixedTraversals, search.served, search.refused, search.torn)
	if read.served == 0 || search.served == 0 {
		t.Errorf("no page served at all (read %d, search %d): the check proves nothing", read.served, search.served)
	}
	if writes.Load() < 1000 {
		t.Errorf("only %d rewrites: the writer did not race the readers", writes.Load())
	}
}

// oneVersion reports whether page equals the bytes at off of some version.
func oneVersion(vs [][]byte, off int64, page []byte) bool {
	for _, v := range vs {
		if off >= 0 && off+int64(len(page)) <= int64(len(v)) && bytes.Equal(v[off:off+int64(len(page))], page) {
			return true
		}
	}
	return false
}
