//go:build linux

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestSearchTextNextPageDropped: a search_text page that hands out a
// cursor scans the next page ahead of its request (worker/paging/next_page.go).
// A client that never asks for it costs nothing lasting: once the hold
// and the idle time of kept watches (FSMCP_TEST_WATCH_IDLE, test-only)
// have passed, the worker holds the descriptors it held before the search
// and no inotify watch; and the cursor, followed then, still leads to
// every match.
func TestSearchTextNextPageDropped(t *testing.T) {
	files := map[string]string{}
	for i := range 30 {
		files["d"+strconv.Itoa(i%3)+"/f"+strconv.Itoa(i)+".txt"] = strings.Repeat("plain text line\n", 400) + "a needle " + strconv.Itoa(i) + "\n"
	}
	root := tree(t, files)
	cs, cmd := workerProc(t, []string{"FSMCP_TEST_WATCH_IDLE=300ms"}, nil, root, "--include", "**", "--max-scan-bytes", "16384")
	pid := cmd.Process.Pid
	// One file's search opens what the worker then keeps for its life
	// (the /proc/self/fd directory it reopens files through).
	ok(t, cs, "search_text", map[string]any{"query": "needle", "path": "d0/f0.txt"})
	held := plainFDs(t, pid)

	first := ok(t, cs, "search_text", map[string]any{"query": "needle"})
	if first.page.NextCursor == nil {
		t.Fatal("the first page holds every match: the case needs several pages")
	}
	deadline := time.Now().Add(10 * time.Second)
	for plainFDs(t, pid) != held || inotifyWatches(t, pid) != 0 {
		if time.Now().After(deadline) {
			out, _ := exec.Command("ls", "-l", "/proc/"+strconv.Itoa(pid)+"/fd/").CombinedOutput()
			t.Logf("%s", out)
			t.Fatalf("10 s after a page nobody followed, the worker holds %d descriptors (%d before) and %d inotify watches", plainFDs(t, pid), held, inotifyWatches(t, pid))
		}
		time.Sleep(50 * time.Millisecond)
	}
	hits, _, _ := searchAll(t, cs, map[string]any{"query": "needle", "cursor": *first.page.NextCursor}, 1<<20)
	if got := len(items[textHit](t, first)) + len(hits); got != 30 {
		t.Fatalf("the first page and those after its cursor hold %d matches, want 30", got)
	}
}

// plainFDs is the number of descriptors process pid has open, but its
// io_uring and inotify instances (which a worker keeps for its life once
// made).
func plainFDs(t testing.TB, pid int) int {
	t.Helper()
	dir := "/proc/" + strconv.Itoa(pid) + "/fd/"
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range es {
		l, err := os.Readlink(dir + e.Name())
		if err == nil && (l == "anon_inode:[io_uring]" || l == "anon_inode:inotify") {
			continue
		}
		n++
	}
	return n
}

// TestSearchTextPagesAheadSame pages through a tree with two workers, one
// with GOMAXPROCS=1 (which scans every page's files one after the other,
// when asked) and one as launched (whose scan of a next page, started
// before it is asked for, carries on through the pages after it), pausing
// between pages so that pages are scanned ahead: every page, items and
// content_hash, is the same.
func TestSearchTextPagesAheadSame(t *testing.T) {
	files := map[string]string{}
	for i := range 90 {
		body := strings.Repeat("plain text line "+strconv.Itoa(i)+"\n", 150+7*i)
		if i%4 == 1 {
			body += "one needle here\n" + strings.Repeat("more text\n", 20) + "and a needle there\n"
		}
		files["d"+strconv.Itoa(i%3)+"/f"+strconv.Itoa(i)+".txt"] = body
	}
	root := tree(t, files)
	type page struct {
		items []string
		hash  string
	}
	pages := func(env []string) []page {
		cs, _ := workerProc(t, env, nil, root, "--include", "**", "--max-scan-bytes", "16384")
		args := map[string]any{"query": "needle", "limit": 3}
		var got []page
		for range 1000 {
			r := ok(t, cs, "search_text", args)
			p := page{hash: r.page.ContentHash}
			for _, it := range r.page.Items {
				p.items = append(p.items, string(it))
			}
			got = append(got, p)
			if r.page.NextCursor == nil {
				return got
			}
			args = map[string]any{"query": "needle", "limit": 3, "cursor": *r.page.NextCursor}
			time.Sleep(30 * time.Millisecond) // the next pages are scanned ahead
		}
		t.Fatal("no last page after 1000")
		return nil
	}
	alone := pages([]string{"GOMAXPROCS=1"})
	ahead := pages(nil)
	if len(alone) < 10 {
		t.Fatalf("%d pages: the case needs more", len(alone))
	}
	if len(ahead) != len(alone) {
		t.Fatalf("%d pages scanning ahead, %d alone", len(ahead), len(alone))
	}
	for i := range alone {
		if ahead[i].hash != alone[i].hash || strings.Join(ahead[i].items, "\n") != strings.Join(alone[i].items, "\n") {
			t.Fatalf("page %d differs:\nahead %v %s\nalone %v %s", i+1, ahead[i].items, ahead[i].hash, alone[i].items, alone[i].hash)
		}
	}
}

// inotifyWatches is the number of inotify watches process pid holds, from
// /proc/<pid>/fdinfo.
func inotifyWatches(t testing.TB, pid int) int {
	t.Helper()
	dir := "/proc/" + strconv.Itoa(pid) + "/fdinfo"
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range es {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			continue // closed meanwhile
		}
		n += strings.Count(string(b), "\ninotify wd:")
	}
	return n
}
