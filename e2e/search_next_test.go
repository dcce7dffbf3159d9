package e2e

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestSearchTextNextPageDropped: a search_text page that hands out a
// cursor scans the next page ahead of its request (worker/next_page.go).
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
