//go:build linux && !fsmcp_portable

package e2e

// Kept search inventories and the user's inotify watches: one
// worker holds at most an eighth of the user's watch limit, and gives its
// watches back when idle. The portable backend has no watches and keeps no
// inventory.

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// userNSWatchLimit runs a command in a new user namespace (mapped to root)
// whose inotify watch limit (user.max_inotify_watches) is 800, so the
// machine-wide fs.inotify.max_user_watches is left alone.
var userNSWatchLimit = []string{"unshare", "--user", "--map-root-user", "sh", "-c",
	`echo 800 > /proc/sys/user/max_inotify_watches && exec "$@"`, "sh"}

// TestWatchLimitAndIdle: under a watch limit of 800 (so a cap of 100), a
// small scope is kept with its watches, reads keep some watches idle within
// the same cap and give them back when a scope needs them, a scope needing
// more than the cap is searched by walking (same answers), the worker never
// holds more than 100 watches, and after the idle time
// (FSMCP_TEST_WATCH_IDLE, test-only) it holds none, and searches on.
func TestWatchLimitAndIdle(t *testing.T) {
	if out, err := exec.Command(userNSWatchLimit[0], append(userNSWatchLimit[1:], "cat", "/proc/sys/user/max_inotify_watches")...).CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "800" {
		t.Fatalf("cannot run a command in a user namespace with its own inotify watch limit (%v: %s); this needs unshare(1) from util-linux (apt-get install util-linux) and a kernel with user namespaces (sysctl -w user.max_user_namespaces=15000)", err, out)
	}
	files := map[string]string{}
	for i := range 20 {
		files["small/f"+strconv.Itoa(i)+".txt"] = "needle small " + strconv.Itoa(i) + "\n"
	}
	// One watch a directory: 120 directories are over the cap.
	for d := range 120 {
		for i := range 3 {
			files["big/d"+strconv.Itoa(d)+"/f"+strconv.Itoa(i)+".txt"] = "hay\n"
		}
	}
	files["big/d99/f2.txt"] = "needle big\n"
	// 80 directories fit in the cap beside the small scope, but not
	// beside the reads' idle watches as well: those give way.
	for d := range 80 {
		files["mid/d"+strconv.Itoa(d)+"/f.txt"] = "hay\n"
	}
	files["mid/d7/f.txt"] = "needle mid\n"
	root := tree(t, files)
	cs, cmd := workerProc(t, []string{"FSMCP_TEST_WATCH_IDLE=2s"}, userNSWatchLimit, root, "--include", "**")
	pid := cmd.Process.Pid
	const limit = 800 / 8

	search := func(path string, want int) {
		t.Helper()
		hits, _, _ := searchAll(t, cs, map[string]any{"query": "needle", "path": path}, 1<<20)
		if len(hits) != want {
			t.Fatalf("search_text in %q: %d hits, want %d", path, len(hits), want)
		}
		if n := inotifyWatches(t, pid); n > limit {
			t.Fatalf("after searching %q the worker holds %d inotify watches, over an eighth (%d) of its limit", path, n, limit)
		}
	}
	search("small", 20)
	kept := inotifyWatches(t, pid)
	if kept == 0 {
		t.Fatal("the small scope's inventory holds no watches: it is not kept")
	}
	// Reads keep some of their watches idle (the next read of the same
	// file then skips adding one), inside the same cap.
	for i := range 20 {
		ok(t, cs, "read_text_file", map[string]any{"path": "small/f" + strconv.Itoa(i) + ".txt"})
	}
	for d := range 30 {
		ok(t, cs, "read_text_file", map[string]any{"path": "big/d" + strconv.Itoa(d) + "/f0.txt"})
	}
	reads := inotifyWatches(t, pid)
	if reads > limit {
		t.Fatalf("after 50 reads the worker holds %d inotify watches, over an eighth (%d) of its limit", reads, limit)
	}
	if reads <= kept {
		t.Fatalf("after 50 reads the worker holds %d inotify watches, no more than the small scope's %d: the reads keep none idle", reads, kept)
	}
	// The mid scope is kept: its watches are had back from the idle ones.
	search("mid", 1)
	if n := inotifyWatches(t, pid); n < kept+80 {
		t.Fatalf("after searching mid the worker holds %d inotify watches, fewer than the small and mid scopes need (%d + 80): mid is not kept", n, kept)
	}
	search("big", 1)
	search("", 22)
	// The big scope is walked on every page: a file added there is
	// found at once.
	if err := os.WriteFile(filepath.Join(root, "big", "d0", "new.txt"), []byte("needle new\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	search("big", 2)
	search("small", 20)
	ok(t, cs, "read_text_file", map[string]any{"path": "small/f0.txt"})
	if inotifyWatches(t, pid) == 0 {
		t.Fatal("no watches held right after a search")
	}

	deadline := time.Now().Add(15 * time.Second)
	for inotifyWatches(t, pid) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the worker still holds %d watches 15 s after its last search (idle time 2 s)", inotifyWatches(t, pid))
		}
		time.Sleep(100 * time.Millisecond)
	}
	search("small", 20)
	if inotifyWatches(t, pid) == 0 {
		t.Fatal("a search after the idle time keeps nothing")
	}
}
