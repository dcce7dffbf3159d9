//go:build linux

package e2e

// Walks that cannot read a directory fail the call instead of answering
// short, and names that are not UTF-8 are not served (docs/reference.md,
// Names and unreadable directories).

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// dirUnreadable is fsmcp's text for a walk that could not open or read a
// directory for a reason other than its being gone.
const dirUnreadable = "a directory could not be read"

// TestWalkLowNofile: search_files and list_directory over 160 files in 16
// nested directories, with the worker's RLIMIT_NOFILE set (prlimit(2) on
// the running worker) from what the walk needs down to what the worker
// already holds open: every answer is either all 160 files or the short error, never a
// shorter list.
func TestWalkLowNofile(t *testing.T) {
	files := map[string]string{}
	var want []string
	dir := ""
	for d := range 16 {
		dir += "d" + strconv.Itoa(d) + "/"
		for f := range 10 {
			p := dir + "f" + strconv.Itoa(f) + ".txt"
			files[p] = "x\n"
			want = append(want, p)
		}
	}
	slices.Sort(want)
	root := tree(t, files)
	cs, cmd := workerProc(t, nil, nil, root, "--include", "**")
	pid := cmd.Process.Pid
	ok(t, cs, "search_files", map[string]any{"query": "f"}) // warm up the process's descriptors

	held := openFDs(t, pid)
	var errored, complete int
	// Only lowering: raising a hard limit takes CAP_SYS_RESOURCE, which
	// the test need not have.
	for extra := 24; extra >= 0; extra-- {
		lim := unix.Rlimit{Cur: uint64(held + extra), Max: uint64(held + extra)}
		if err := unix.Prlimit(pid, unix.RLIMIT_NOFILE, &lim, nil); err != nil {
			t.Fatalf("prlimit(%d, RLIMIT_NOFILE, %d): %v", pid, held+extra, err)
		}
		r := call(t, cs, "search_files", map[string]any{"query": "f"})
		if r.isError {
			if r.text != dirUnreadable {
				t.Fatalf("nofile %d: search_files error %q, want %q", held+extra, r.text, dirUnreadable)
			}
			errored++
		} else {
			var got []string
			for _, it := range items[struct{ Path string }](t, r) {
				got = append(got, it.Path)
			}
			if !slices.Equal(got, want) || r.page.NextCursor != nil {
				t.Fatalf("nofile %d: search_files answered %d of %d paths (cursor %v)", held+extra, len(got), len(want), r.page.NextCursor)
			}
			complete++
		}
		// A listing under the deepest directories goes down 16 levels
		// to find a served file: it too answers fully or fails.
		r = call(t, cs, "list_directory", map[string]any{"path": "d0/d1"})
		if r.isError {
			if r.text != dirUnreadable {
				t.Fatalf("nofile %d: list_directory error %q", held+extra, r.text)
			}
		} else if n := len(r.page.Items); n != 11 {
			t.Fatalf("nofile %d: list_directory d0/d1 answered %d entries, want 11", held+extra, n)
		}
	}
	t.Logf("worker held %d descriptors; %d calls failed, %d answered all", held, errored, complete)
	if errored == 0 || complete == 0 {
		t.Fatalf("the limits tried gave %d failures and %d full answers; both must occur for the test to mean anything", errored, complete)
	}
}

// openFDs is the number of descriptors process pid has open.
func openFDs(t testing.TB, pid int) int {
	t.Helper()
	es, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(es)
}

// TestNamesNotUTF8: entries whose names are not valid UTF-8 are not served
// by any tool: a file so named is not listed or searched, a directory so
// named is not listed or entered (its files are neither), and a directory
// holding only such names is not listed; the name's U+FFFD spelling reads
// nothing.
func TestNamesNotUTF8(t *testing.T) {
	root := tree(t, map[string]string{
		"ok.txt":                "needle ok\n",
		"bad\xff.txt":           "needle bad\n",
		"dir\xfe/inner.txt":     "needle inner\n",
		"mixed/good.txt":        "needle good\n",
		"mixed/x\xc3.txt":       "needle x\n",
		"only/\xe2\x82.txt":     "needle only\n",
		"deep/ok/\xf0sub/a.txt": "needle deep\n", // deep holds no served file
	})
	cs := worker(t, root, "--include", "**")

	var listed []string
	for _, dir := range []string{"", "mixed"} {
		r := ok(t, cs, "list_directory", map[string]any{"path": dir})
		for _, it := range items[struct{ Path string }](t, r) {
			listed = append(listed, it.Path)
		}
	}
	if want := []string{"mixed", "ok.txt", "mixed/good.txt"}; !slices.Equal(listed, want) {
		t.Fatalf("listed %q, want %q", listed, want)
	}

	r := ok(t, cs, "search_files", map[string]any{"query": ".txt"})
	var found []string
	for _, it := range items[struct{ Path string }](t, r) {
		found = append(found, it.Path)
	}
	if want := []string{"mixed/good.txt", "ok.txt"}; !slices.Equal(found, want) {
		t.Fatalf("search_files found %q, want %q", found, want)
	}

	hits, _, _ := searchAll(t, cs, map[string]any{"query": "needle"}, 1<<20)
	sameHits(t, hits, []textHit{{"mixed/good.txt", 1, "needle good"}, {"ok.txt", 1, "needle ok"}})

	for _, p := range []string{"bad\ufffd.txt", "dir\ufffd/inner.txt", "mixed/x\ufffd.txt"} {
		r := call(t, cs, "read_text_file", map[string]any{"path": p})
		if !r.isError {
			t.Fatalf("read_text_file %q answered %q", p, r.text)
		}
		if strings.Contains(r.text, root) {
			t.Fatalf("read_text_file %q error names the host path: %q", p, r.text)
		}
	}
	// The files are there on disk under their real names.
	if _, err := os.Stat(filepath.Join(root, "dir\xfe", "inner.txt")); err != nil {
		t.Fatal(err)
	}
}

// TestWalkUnreadableDir: a directory the worker's user may not open
// (EACCES, worker as uid 65534) is not served, the same way by every tool:
// not listed, not searched, nothing under it read; the calls around it
// succeed rather than fail.
func TestWalkUnreadableDir(t *testing.T) {
	needRoot(t)
	root := reachableDir(t, 0, 0, 0o755)
	for p, body := range map[string]string{
		"open/a.txt":         "needle a\n",
		"locked/b.txt":       "needle b\n",
		"mixed/c.txt":        "needle c\n",
		"mixed/locked/d.txt": "needle d\n",
	} {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{"locked", "mixed/locked"} {
		if err := os.Chmod(filepath.Join(root, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	cs := workerAs(t, nobody, nobody, root, "--include", "**")

	var listed []string
	for _, dir := range []string{"", "mixed"} {
		for _, it := range items[struct{ Path string }](t, ok(t, cs, "list_directory", map[string]any{"path": dir})) {
			listed = append(listed, it.Path)
		}
	}
	if want := []string{"mixed", "open", "mixed/c.txt"}; !slices.Equal(listed, want) {
		t.Fatalf("listed %q, want %q", listed, want)
	}
	var found []string
	for _, it := range items[struct{ Path string }](t, ok(t, cs, "search_files", map[string]any{"query": ".txt"})) {
		found = append(found, it.Path)
	}
	if want := []string{"mixed/c.txt", "open/a.txt"}; !slices.Equal(found, want) {
		t.Fatalf("search_files found %q, want %q", found, want)
	}
	hits, _, _ := searchAll(t, cs, map[string]any{"query": "needle"}, 1<<20)
	sameHits(t, hits, []textHit{{"mixed/c.txt", 1, "needle c"}, {"open/a.txt", 1, "needle a"}})
	for _, p := range []string{"locked/b.txt", "mixed/locked/d.txt"} {
		if r := call(t, cs, "read_text_file", map[string]any{"path": p}); !r.isError {
			t.Fatalf("read_text_file %q answered %q", p, r.text)
		}
	}
}
