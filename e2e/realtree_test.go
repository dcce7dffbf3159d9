//go:build linux

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The real-tree tests page list_directory, search_files and search_text
// to the end over folders every Debian machine with Go and Node has, and
// compare the union of the pages with the oracle (realtree_oracle_test.go),
// through the worker alone and through the supervisor, at full speed and
// with random pauses. Real trees hold what generated ones lack: runs of
// compressed and binary files among text, NUL bytes on lines that are
// UTF-8, minified lines of many kilobytes, hidden files, links, thousands
// of folders.

// realTree is a system folder the tests page through: the root a
// worker serves, and the scope (the path argument of every call) in it.
type realTree struct {
	name  string // its root's name in the supervisor's manifest
	root  string // absolute, links resolved
	scope string
	text  []realSearch // search_text calls
	files []realSearch // search_files calls
	list  bool         // list_directory of the scope and every directory below it
	// pauseVia, if set, is the server ("worker" or "supervisor") through
	// which text[0] is paged with random pauses too.
	pauseVia string
	// scanBudget, if set, is the --max-scan-bytes of one more worker that
	// pages the text searches: more pages, and more of them ending inside
	// a line or among binary files.
	scanBudget int
}

// realSearch is one search's terms: a query, or any_of when there are
// several; fold is case_insensitive.
type realSearch struct {
	terms []string
	fold  bool
}

func (s realSearch) args(scope string) map[string]any {
	a := map[string]any{"path": scope}
	if len(s.terms) == 1 {
		a["query"] = s.terms[0]
	} else {
		a["any_of"] = s.terms
	}
	if s.fold {
		a["case_insensitive"] = true
	}
	return a
}

func (s realSearch) String() string {
	q := fmt.Sprintf("%q", s.terms)
	if s.fold {
		q += " folded"
	}
	return q
}

// realTrees are the folders the tests page through, each of which a fresh
// Debian machine with Go and Node has once the module's dependencies are
// downloaded and interop's client installed. The scopes keep each
// traversal within a few hundred pages.
func realTrees(t *testing.T) []realTree {
	t.Helper()
	goroot := realDir(t, goEnv(t, "GOROOT"), "the Go distribution, from `go env GOROOT`")
	modcache := realDir(t, goEnv(t, "GOMODCACHE"), "the module cache; run `go mod download` in the module")
	interopNode(t) // installs interop/node_modules if it is missing
	return []realTree{
		{
			name: "doc", root: realDir(t, "/usr/share/doc", "the documentation Debian's packages install"),
			text: []realSearch{
				{terms: []string{"copyright"}},
				{terms: []string{"GNU General Public License", "Permission is hereby granted"}},
				{terms: []string{"Warranty"}, fold: true},
			},
			files:      []realSearch{{terms: []string{"copyright"}}, {terms: []string{"README", ".GZ"}, fold: true}},
			list:       true,
			pauseVia:   "worker",
			scanBudget: 256 << 10,
		},
		{
			name: "include", root: realDir(t, "/usr/include", "apt-get install -y libc6-dev"),
			text: []realSearch{
				{terms: []string{"#include"}},
				{terms: []string{"__BEGIN_DECLS", `extern "C"`}},
			},
			files: []realSearch{{terms: []string{".h"}}},
			list:  true,
		},
		{
			name: "goroot", root: goroot, scope: "src/runtime",
			text: []realSearch{
				{terms: []string{"func "}},
				{terms: []string{"return"}},
				{terms: []string{"GOOS", "goarch"}, fold: true},
			},
			files:    []realSearch{{terms: []string{"_test.go"}}},
			list:     true,
			pauseVia: "supervisor",
		},
		{
			// The whole of GOROOT/src holding few matches: most pages
			// end on the scan budget, many with no item. Some of the
			// matches are in archives whose NUL bytes fall on lines
			// that are UTF-8: text to search_text, binary to rg.
			name: "gosrc", root: goroot, scope: "src",
			text:  []realSearch{{terms: []string{"GNU General Public License", "ustar"}}},
			files: []realSearch{{terms: []string{"testdata"}}},
		},
		{
			name: "modcache", root: modcache, scope: moduleScope(t, modcache, "golang.org/x/sys"),
			text:     []realSearch{{terms: []string{"func "}}, {terms: []string{"EPERM", "Ioctl"}, fold: true}},
			files:    []realSearch{{terms: []string{"linux"}}},
			list:     true,
			pauseVia: "worker",
		},
		{
			name: "node", root: realDir(t, filepath.Join(interopDir, "node_modules"), "installed by the interop tests' npm ci"),
			text: []realSearch{
				{terms: []string{"require(", "import "}},
				{terms: []string{"function"}},
				{terms: []string{"copyright"}, fold: true},
			},
			files:      []realSearch{{terms: []string{"index"}}},
			list:       true,
			pauseVia:   "supervisor",
			scanBudget: 64 << 10,
		},
	}
}

// realDir is dir made absolute with its links resolved (the worker refuses
// a root that is a link), or the test fails saying what provides it.
func realDir(t *testing.T, dir, what string) string {
	t.Helper()
	abs, err := filepath.Abs(dir)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	if err != nil {
		t.Fatalf("%s is missing (%s): %v", dir, what, err)
	}
	if st, err := os.Stat(abs); err != nil || !st.IsDir() {
		t.Fatalf("%s is not a directory (%s)", dir, what)
	}
	return abs
}

// goEnv is `go env name`, run in the module.
func goEnv(t *testing.T, name string) string {
	t.Helper()
	cmd := exec.Command("go", "env", name)
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil || strings.TrimSpace(string(out)) == "" {
		t.Fatalf("go env %s (in the module): %v", name, err)
	}
	return strings.TrimSpace(string(out))
}

// moduleScope is the folder of module, as the module requires it, relative
// to the module cache: a downloaded module's files never change.
func moduleScope(t *testing.T, modcache, module string) string {
	t.Helper()
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", module)
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -m -f {{.Dir}} %s (in the module): %v; run `go mod download`", module, err)
	}
	dir := realDir(t, strings.TrimSpace(string(out)), "run `go mod download` in the module")
	rel, err := filepath.Rel(modcache, dir)
	if err != nil || strings.HasPrefix(rel, "..") {
		t.Fatalf("%s is not in the module cache %s", dir, modcache)
	}
	return filepath.ToSlash(rel)
}

// TestRealTrees pages every tree's searches and listings through the worker
// and the supervisor, at full speed and (a search of most trees) with
// random pauses, and compares each whole traversal with the oracle. With
// -short, each tree's first search of each tool only.
func TestRealTrees(t *testing.T) {
	ripgrep(t)
	trees := realTrees(t)
	var roots []rootSpec
	for _, tr := range trees {
		roots = append(roots, rootSpec{name: tr.name, path: tr.root})
	}
	sup := startSupervisor(t, writeManifest(t, roots...), buildSupervisorBins(t).worker)
	for i, tr := range trees {
		t.Run(tr.name, func(t *testing.T) {
			servers := []*realServer{realWorker(t, tr.root), supervisedRoot(t, sup, tr.name)}
			served := servedFiles(runFind(t, tr.root, tr.scope))
			if len(served) == 0 {
				t.Fatalf("%s/%s serves no file", tr.root, tr.scope)
			}
			text, files := tr.text, tr.files
			if testing.Short() {
				text, files = text[:1], files[:1]
			}
			searchers := servers
			if tr.scanBudget != 0 {
				s := realWorker(t, tr.root, "--max-scan-bytes", strconv.Itoa(tr.scanBudget))
				s.kind = fmt.Sprintf("worker with --max-scan-bytes %d", tr.scanBudget)
				searchers = append(searchers, s)
			}
			for j, q := range text {
				paused := ""
				if j == 0 {
					paused = tr.pauseVia
				}
				checkTextSearch(t, tr, q, searchers, paused, uint64(i+1))
			}
			for _, q := range files {
				want := wantFoundPaths(served, q.terms, q.fold)
				for _, s := range servers {
					got := followPages[pathHit](t, s, "search_files", q.args(tr.scope), fullSpeed)
					sameItems(t, fmt.Sprintf("search_files %v through the %s", q, s.kind), got.items, want)
					t.Logf("figures: realtree %s %s search_files %v: %d pages, %d items, %v", tr.name, s.kind, q, got.pages, len(got.items), got.took.Round(time.Millisecond))
				}
			}
			for _, s := range servers {
				if tr.list {
					began := time.Now()
					dirs, got := listTree(t, s, served, tr.scope)
					t.Logf("figures: realtree %s %s list_directory of every directory: %d directories, %d pages, %d items, %v", tr.name, s.kind, dirs, got.pages, len(got.items), time.Since(began).Round(time.Millisecond))
				}
			}
		})
	}
}

// checkTextSearch pages search_text for q over tr through each server at
// full speed, and through the server named paused with random pauses too
// (drawn from seed), comparing each traversal with the oracle.
func checkTextSearch(t *testing.T, tr realTree, q realSearch, servers []*realServer, paused string, seed uint64) {
	t.Helper()
	rg := runRipgrep(t, tr.root, tr.scope, q.terms, q.fold)
	want := wantTextHits(t, rg.lines, func(rel string) ([]byte, int64, error) { return fileHead(filepath.Join(tr.root, rel)) })
	for _, s := range servers {
		paces := []pacing{fullSpeed}
		if s.kind == paused {
			paces = append(paces, pacing{name: "random pauses", seed: seed})
		}
		for _, pace := range paces {
			got := followPages[textHit](t, s, "search_text", q.args(tr.scope), pace)
			sameItems(t, fmt.Sprintf("search_text %v through the %s at %s", q, s.kind, pace.name), got.items, want)
			t.Logf("figures: realtree %s %s search_text %v at %s: %d pages, %d items, %v; rg %v", tr.name, s.kind, q, pace.name, got.pages, len(got.items), got.took.Round(time.Millisecond), rg.took.Round(time.Millisecond))
		}
	}
}

// listTree lists dir and every directory below it that the listings
// name, each paged to the end and compared with the oracle's listing. It
// returns the number of directories listed and every page's items.
func listTree(t *testing.T, s *realServer, served []string, dir string) (int, traversal[entryItem]) {
	t.Helper()
	got := followPages[entryItem](t, s, "list_directory", map[string]any{"path": dir}, fullSpeed)
	sameItems(t, fmt.Sprintf("list_directory %q through the %s", dir, s.kind), got.items, wantListing(served, dir))
	dirs := 1
	for _, e := range slices.Clone(got.items) {
		if e.Kind == "directory" {
			n, sub := listTree(t, s, served, e.Path)
			dirs += n
			got.pages += sub.pages
			got.items = append(got.items, sub.items...)
		}
	}
	return dirs, got
}
