//go:build linux

package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// escapeFixture is a root surrounded by things it must never serve, each
// holding the marker:
//
//	base/outside/...        a folder beside the root
//	base/ws-evil/...        a sibling whose name shares the root's prefix
//	root/leaf.txt           -> outside/secret.txt (link at the leaf)
//	root/anc                -> outside            (link as an ancestor)
//	root/sib, root/rel      -> base/ws-evil, ../ws-evil (into the sibling)
//	root/docs/up            -> ../..              (relative climb)
//	root/abs                -> /                  (the host root)
//	root/proc               -> /proc/self/root    (a magic link)
//	root/loop               -> loop               (a link loop)
//	root/fifo.txt           a named pipe with no writer
type escapeFixture struct {
	base, root, outside, sibling, marker string
}

func newEscapeFixture(t *testing.T) *escapeFixture {
	t.Helper()
	f := &escapeFixture{base: t.TempDir(), marker: plantMarker(t)}
	f.root = filepath.Join(f.base, "ws")
	f.outside = filepath.Join(f.base, "outside")
	f.sibling = filepath.Join(f.base, "ws-evil")
	for p, body := range map[string]string{
		"ws/docs/a.txt":        "inside a\n",
		"ws/docs/deep/b.txt":   "inside b\n",
		"ws/top.txt":           "inside top\n",
		"outside/secret.txt":   f.marker + "\n",
		"outside/target.txt":   f.marker + " target\n",
		"outside/d/inner.txt":  f.marker + " inner\n",
		"outside/b/f.txt":      f.marker + " b\n",
		"ws-evil/s.txt":        f.marker + " sibling\n",
		"ws-evil/docs/a.txt":   f.marker + " sibling docs\n",
		"ws-evil/secret.txt":   f.marker + " sibling secret\n",
		"outside/ws/docs/a.tx": f.marker,
	} {
		writeFile(t, filepath.Join(f.base, p), body)
	}
	for name, target := range map[string]string{
		"leaf.txt": filepath.Join(f.outside, "secret.txt"),
		"anc":      f.outside,
		"sib":      f.sibling,
		"rel":      "../ws-evil",
		"docs/up":  "../..",
		"abs":      "/",
		"proc":     "/proc/self/root",
		"loop":     "loop",
	} {
		if err := os.Symlink(target, filepath.Join(f.root, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := unix.Mkfifo(filepath.Join(f.root, "fifo.txt"), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// outsideDigest reads every regular file outside the root, to show at the
// end that nothing there changed.
func (f *escapeFixture) outsideDigest(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	for _, dir := range []string{f.outside, f.sibling} {
		filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				data, _ := os.ReadFile(p)
				b.WriteString(p + "\x00" + string(data) + "\x00")
			}
			return nil
		})
	}
	return sha([]byte(b.String()))
}

// The answers of the path contract: one refusal for every way out, and the
// read tool's answers for names that break no rule.
const (
	errPath        = "path is not a relative path inside the root"
	errNotServed   = "path is not served by this root"
	errNotReadable = "path is not a readable regular file"
	errWriteDest   = "destination is not a writable regular file"
	errWriteName   = "path must be one lowercase basename of letters, digits, dots, underscores, or hyphens"
)

// TestAttackEscapeSpellings sends every spelling of a way out to every tool
// that takes a path: each is refused with its documented exact error (a
// write's path breaks the name rule first), and no response carries a byte
// from outside or a host path.
func TestAttackEscapeSpellings(t *testing.T) {
	f := newEscapeFixture(t)
	before := f.outsideDigest(t)
	cs := worker(t, f.root, "--include", "**", "--max-file-bytes", "1000000")
	host := []string{f.base, f.root, f.outside, f.sibling}
	refused := []string{
		"..",
		"../",
		"../outside/secret.txt",
		"../ws-evil/s.txt",
		"docs/..",
		"docs/../..",
		"docs/../../outside/secret.txt",
		"docs/deep/../../../ws-evil/secret.txt",
		"./docs",
		"docs/.",
		"docs/./a.txt",
		"./",
		".//",
		"/",
		"/etc/passwd",
		filepath.Join(f.outside, "secret.txt"),
		filepath.Join(f.sibling, "s.txt"),
		filepath.Join(f.root, "docs", "a.txt"),
		"//server/share/x",
		"/proc/self/root/etc/passwd",
		"C:/Windows/win.ini",
		"c:secret.txt",
		"Z:",
		`..\outside\secret.txt`,
		`docs\..\..\outside`,
		`\\server\share`,
		`C:\Windows`,
		"docs/a.txt\x00",
		"\x00",
		"..\x00/x",
		strings.Repeat("a/", 512) + "a",
		strings.Repeat("../", 1400),
		strings.Repeat("é", 1025),
	}
	var calls int
	check := func(what string, r *result) {
		t.Helper()
		calls++
		noLeak(t, what, r, f.marker, host...)
	}
	for _, p := range refused {
		for _, c := range []struct {
			tool string
			args map[string]any
			want string
		}{
			{"read_text_file", map[string]any{"path": p}, errPath},
			{"list_directory", map[string]any{"path": p}, errPath},
			{"search_files", map[string]any{"query": "a", "path": p}, errPath},
			{"search_text", map[string]any{"query": "inside", "path": p}, errPath},
			{"write_text_file", map[string]any{"path": p, "content": "x"}, errWriteName},
		} {
			r := call(t, cs, c.tool, c.args)
			check(c.tool, r)
			if !r.isError || r.text != c.want {
				t.Errorf("%s(%q): isError=%v %q, want %q", c.tool, p, r.isError, r.text, c.want)
			}
		}
	}
	// Look-alikes are names, not instructions: nothing by those names is
	// served, and nothing is decoded into a climb; a long name is just a
	// name.
	for _, p := range []string{"%2e%2e/outside/secret.txt", "..%2fsecret.txt", "．．/secret.txt", "\u2025/secret.txt",
		"...", ".. ", " ..", "~", "$HOME", "..;/secret.txt", "docs/a.txt;..", "a..b/c", "file:///etc/passwd",
		"docs/" + strings.Repeat("x", 256)} {
		r := call(t, cs, "read_text_file", map[string]any{"path": p})
		check("read "+p, r)
		if r.text != errNotReadable {
			t.Errorf("read_text_file(%q) = %q, want %q", p, r.text, errNotReadable)
		}
		r = call(t, cs, "list_directory", map[string]any{"path": p})
		check("list "+p, r)
		if r.isError || len(r.page.Items) != 0 || r.page.NextCursor != nil {
			t.Errorf("list_directory(%q) = %q, want the empty page", p, r.text)
		}
	}
	// A trailing or doubled slash is dropped.
	for p, want := range map[string]string{"docs/": errNotReadable, "docs//a.txt": "", "docs/a.txt/": ""} {
		r := call(t, cs, "read_text_file", map[string]any{"path": p})
		check("read "+p, r)
		if want != "" && r.text != want || want == "" && r.isError {
			t.Errorf("read_text_file(%q) = %q, want %q", p, r.text, want)
		}
	}
	// A link at the leaf is not a readable file; one as an ancestor (into
	// the sibling, climbing, to the host root, to a magic link, in a loop)
	// makes a path this root does not serve. None is followed.
	for _, p := range []string{"leaf.txt", "loop"} {
		r := call(t, cs, "read_text_file", map[string]any{"path": p})
		check("read "+p, r)
		if r.text != errNotReadable {
			t.Errorf("read_text_file(%q) = %q, want %q", p, r.text, errNotReadable)
		}
	}
	for _, p := range []string{"anc/secret.txt", "anc/d/inner.txt", "sib/s.txt", "rel/s.txt", "rel/docs/a.txt",
		"docs/up/outside/secret.txt", "docs/up/ws-evil/s.txt", "abs/etc/passwd", "proc/etc/passwd", "loop/x"} {
		r := call(t, cs, "read_text_file", map[string]any{"path": p})
		check("read "+p, r)
		if r.text != errNotServed {
			t.Errorf("read_text_file(%q) = %q, want %q", p, r.text, errNotServed)
		}
	}
	// A listing or search under a link answers the empty page.
	for _, p := range []string{"anc", "anc/d", "sib", "rel", "docs/up", "docs/up/outside", "abs", "abs/etc", "proc", "loop"} {
		for _, tool := range []string{"list_directory", "search_files", "search_text"} {
			args := map[string]any{"path": p}
			if tool != "list_directory" {
				args["query"] = "s"
			}
			r := call(t, cs, tool, args)
			check(tool+" "+p, r)
			if r.isError || len(r.page.Items) != 0 || r.page.NextCursor != nil {
				t.Errorf("%s(%q) = %q, want the empty page", tool, p, r.text)
			}
		}
	}
	// A FIFO is refused at once rather than blocking the worker.
	start := time.Now()
	r := call(t, cs, "read_text_file", map[string]any{"path": "fifo.txt"})
	check("read fifo", r)
	if r.text != errNotReadable || time.Since(start) > 5*time.Second {
		t.Errorf("read of a FIFO: %q after %s", r.text, time.Since(start))
	}
	// A write to the leaf link is refused; the link and the outside file
	// stay.
	r = call(t, cs, "write_text_file", map[string]any{"path": "leaf.txt", "content": "mine\n"})
	check("write leaf.txt", r)
	if !r.isError || r.text != errWriteDest {
		t.Errorf("write over the leaf link: isError=%v %q, want %q", r.isError, r.text, errWriteDest)
	}
	if fi, err := os.Lstat(filepath.Join(f.root, "leaf.txt")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the leaf link was replaced or removed (%v)", err)
	}

	// Sweep everything the root serves: no listing, search or read of it
	// reaches outside.
	var dirs = []string{""}
	var files []string
	for len(dirs) > 0 {
		d := dirs[0]
		dirs = dirs[1:]
		r := ok(t, cs, "list_directory", map[string]any{"path": d, "limit": 1000})
		check("list "+d, r)
		for _, e := range items[entryItem](t, r) {
			if e.Kind == "directory" {
				dirs = append(dirs, e.Path)
			} else {
				files = append(files, e.Path)
			}
		}
	}
	if got := strings.Join(files, ","); got != "top.txt,docs/a.txt,docs/deep/b.txt" { // leaf.txt is still a link
		t.Errorf("served files %s", got)
	}
	for _, p := range files {
		check("read "+p, ok(t, cs, "read_text_file", map[string]any{"path": p}))
	}
	for _, q := range []map[string]any{
		{"query": f.marker}, {"query": "FSMCP-OUTSIDE"}, {"query": "sibling"}, {"any_of": []string{"secret", "inner", "target", "passwd", "root"}},
		{"query": "fsmcp-outside", "case_insensitive": true},
	} {
		for _, tool := range []string{"search_files", "search_text"} {
			r := ok(t, cs, tool, q)
			check(tool, r)
			if len(r.page.Items) != 0 {
				t.Errorf("%s(%v) found %s", tool, q, r.page.Items)
			}
		}
	}
	if after := f.outsideDigest(t); after != before {
		t.Error("a file outside the root changed")
	}
	t.Logf("figures: escape spellings: %d paths x 5 tools refused exactly, %d calls in all, 0 outside bytes", len(refused), calls)
}

func mustJSONString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestAttackEscapeSwapRace swaps, with renameat2(RENAME_EXCHANGE), an
// ancestor directory for a link to outside, a served file for a link to an
// outside file, and a write destination for a link to an outside target,
// while reads, listings, both searches and writes run in parallel on one
// worker: no response carries an outside byte, every refusal is one of the
// expected ones, and nothing outside changes.
func TestAttackEscapeSwapRace(t *testing.T) {
	f := newEscapeFixture(t)
	writeFile(t, filepath.Join(f.root, "a/b/f.txt"), "inside f\n")
	writeFile(t, filepath.Join(f.root, "w.txt"), "inside w\n")
	swaps := [][2]string{
		{filepath.Join(f.root, "a"), filepath.Join(f.base, "a-link")},
		{filepath.Join(f.root, "top.txt"), filepath.Join(f.base, "top-link")},
		{filepath.Join(f.root, "w.txt"), filepath.Join(f.base, "w-link")},
	}
	for i, target := range []string{f.outside, filepath.Join(f.outside, "secret.txt"), filepath.Join(f.outside, "target.txt")} {
		if err := os.Symlink(target, swaps[i][1]); err != nil {
			t.Fatal(err)
		}
	}
	before := f.outsideDigest(t)
	cs := worker(t, f.root, "--include", "**")
	host := []string{f.base, f.root, f.outside, f.sibling}

	stopSwap := churn(1<<30, 20*time.Microsecond, func(i int) {
		s := swaps[i%len(swaps)]
		exchange(t, s[0], s[1])
	})
	ops := []struct {
		tool string
		args map[string]any
	}{
		{"read_text_file", map[string]any{"path": "a/b/f.txt"}},
		{"read_text_file", map[string]any{"path": "top.txt"}},
		{"read_text_file", map[string]any{"path": "w.txt"}},
		{"list_directory", map[string]any{"path": "a"}},
		{"list_directory", map[string]any{"path": "a/b"}},
		{"list_directory", map[string]any{"path": ""}},
		{"search_files", map[string]any{"query": "f", "path": "a"}},
		{"search_text", map[string]any{"any_of": []string{"inside", f.marker}}},
		{"search_text", map[string]any{"query": "inside", "path": "a/b"}},
		{"write_text_file", map[string]any{"path": "w.txt", "content": "written\n"}},
		{"write_text_file", map[string]any{"path": "top.txt", "content": "written top\n"}},
	}
	allowed := func(text string) bool {
		switch text {
		case errNotServed, errNotReadable,
			errWriteDest: // w.txt or top.txt was a link at the check
			return true
		}
		return refusedAsChanged(text)
	}
	var counts tally
	var wg sync.WaitGroup
	deadline := time.Now().Add(2 * time.Second)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 250 && time.Now().Before(deadline); i++ {
				op := ops[(i*4+w)%len(ops)]
				r, err := tryCall(cs, op.tool, op.args)
				if err != nil {
					t.Errorf("%s: %v", op.tool, err)
					return
				}
				noLeak(t, op.tool, r, f.marker, host...)
				switch {
				case !r.isError:
					counts.add(op.tool + ":ok")
				case allowed(r.text):
					counts.add(op.tool + ":refused")
				default:
					t.Errorf("%s(%v): unexpected error %q", op.tool, op.args, r.text)
				}
			}
		}()
	}
	wg.Wait()
	nswaps := stopSwap()
	if after := f.outsideDigest(t); after != before {
		t.Fatal("a file outside the root changed (a write went through a link?)")
	}
	for _, tool := range []string{"read_text_file", "list_directory", "search_text", "write_text_file"} {
		if counts.get(tool+":ok") == 0 {
			t.Errorf("no %s call succeeded during the race: %s", tool, &counts)
		}
	}
	t.Logf("figures: swap race: %d atomic swaps, calls %s, 0 outside bytes", nswaps, &counts)
}
