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

// Exact refusals of the path contract, shared by every tool that takes a
// path.
const (
	errDots     = "path must not contain . or .. segments"
	errAbs      = "path must be relative to the root, not absolute"
	errDrive    = "path must be relative to the root, not a drive path"
	errBackslsh = "path contains a backslash; use forward slashes"
	errNUL      = "path contains a NUL byte"
	errEmptySeg = "path has an empty segment (a doubled or trailing slash)"
	errLong     = "path is longer than 4096 bytes"
	errLongSeg  = "path has a segment longer than 255 bytes"
	viaLink     = " goes through a symbolic link, which this server does not follow"
)

// The write tool's refusals: any path that is not one lowercase basename,
// and a destination that is a link or another non-regular file.
const (
	errWriteName = "path must be one lowercase basename of letters, digits, dots, underscores, or hyphens"
	errWriteDest = "destination is not a writable regular file"
)

// TestAttackEscapeSpellings sends every spelling of a way out to every tool
// that takes a path: each is refused with the contract's exact error, and
// no response carries a byte from outside or a host path.
func TestAttackEscapeSpellings(t *testing.T) {
	f := newEscapeFixture(t)
	before := f.outsideDigest(t)
	cs := worker(t, f.root, "--include", "**", "--max-file-bytes", "1000000")
	host := []string{f.base, f.root, f.outside, f.sibling}
	refused := []struct{ path, want string }{
		{"..", errDots},
		{"../", errDots},
		{"../outside/secret.txt", errDots},
		{"../ws-evil/s.txt", errDots},
		{"docs/..", errDots},
		{"docs/../..", errDots},
		{"docs/../../outside/secret.txt", errDots},
		{"docs/deep/../../../ws-evil/secret.txt", errDots},
		{"./docs", errDots},
		{"docs/.", errDots},
		{"docs/./a.txt", errDots},
		{"./", errDots},
		{"/", errAbs},
		{"/etc/passwd", errAbs},
		{filepath.Join(f.outside, "secret.txt"), errAbs},
		{filepath.Join(f.sibling, "s.txt"), errAbs},
		{filepath.Join(f.root, "docs", "a.txt"), errAbs},
		{"//server/share/x", errAbs},
		{"/proc/self/root/etc/passwd", errAbs},
		{"C:/Windows/win.ini", errDrive},
		{"c:secret.txt", errDrive},
		{"Z:", errDrive},
		{`..\outside\secret.txt`, errBackslsh},
		{`docs\..\..\outside`, errBackslsh},
		{`\\server\share`, errBackslsh},
		{`C:\Windows`, errBackslsh},
		{"docs/a.txt\x00", errNUL},
		{"\x00", errNUL},
		{"..\x00/x", errNUL},
		{"docs//a.txt", errEmptySeg},
		{"docs/", errEmptySeg},
		{"docs/a.txt/", errEmptySeg},
		{"file:///etc/passwd", errEmptySeg},
		{strings.Repeat("a/", 2048) + "a", errLong},
		{strings.Repeat("../", 1400), errLong},
		{"docs/" + strings.Repeat("x", 256), errLongSeg},
	}
	var calls int
	check := func(what string, r *result) {
		t.Helper()
		calls++
		noLeak(t, what, r, f.marker, host...)
	}
	for _, tc := range refused {
		for _, c := range []struct {
			tool string
			args map[string]any
		}{
			{"read_text_file", map[string]any{"path": tc.path}},
			{"list_directory", map[string]any{"path": tc.path}},
			{"search_files", map[string]any{"query": "a", "path": tc.path}},
			{"search_text", map[string]any{"query": "inside", "path": tc.path}},
			{"write_text_file", map[string]any{"path": tc.path, "content": "x"}},
		} {
			r := call(t, cs, c.tool, c.args)
			check(c.tool, r)
			want := tc.want
			if c.tool == "write_text_file" {
				want = errWriteName
			}
			if !r.isError || r.text != want {
				t.Errorf("%s(%q): isError=%v %q, want %q", c.tool, tc.path, r.isError, r.text, want)
			}
		}
	}
	// Look-alikes are names, not instructions: nothing by those names is
	// served, and nothing is decoded into a climb.
	for _, p := range []string{"%2e%2e/outside/secret.txt", "..%2fsecret.txt", "．．/secret.txt", "\u2025/secret.txt",
		"...", ".. ", " ..", "~", "$HOME", "..;/secret.txt", "docs/a.txt;..", "a..b/c"} {
		r := call(t, cs, "read_text_file", map[string]any{"path": p})
		check("read "+p, r)
		if want := `no served file at ` + mustJSONString(p); r.text != want {
			t.Errorf("read_text_file(%q) = %q, want %q", p, r.text, want)
		}
		r = call(t, cs, "list_directory", map[string]any{"path": p})
		check("list "+p, r)
		if want := `no served directory at ` + mustJSONString(p); r.text != want {
			t.Errorf("list_directory(%q) = %q, want %q", p, r.text, want)
		}
	}
	// Links at the leaf, as ancestors, into the sibling, climbing, to the
	// host root, to a magic link, in a loop: all refused by name.
	for _, p := range []string{"leaf.txt", "anc/secret.txt", "anc/d/inner.txt", "sib/s.txt", "rel/s.txt", "rel/docs/a.txt",
		"docs/up/outside/secret.txt", "docs/up/ws-evil/s.txt", "abs/etc/passwd", "proc/etc/passwd", "loop", "loop/x"} {
		r := call(t, cs, "read_text_file", map[string]any{"path": p})
		check("read "+p, r)
		if want := mustJSONString(p) + viaLink; r.text != want {
			t.Errorf("read_text_file(%q) = %q, want %q", p, r.text, want)
		}
	}
	for _, p := range []string{"anc", "anc/d", "sib", "rel", "docs/up", "docs/up/outside", "abs", "abs/etc", "proc", "loop"} {
		for _, tool := range []string{"list_directory", "search_files", "search_text"} {
			args := map[string]any{"path": p}
			if tool != "list_directory" {
				args["query"] = "s"
			}
			r := call(t, cs, tool, args)
			check(tool+" "+p, r)
			if want := mustJSONString(p) + viaLink; r.text != want {
				t.Errorf("%s(%q) = %q, want %q", tool, p, r.text, want)
			}
		}
	}
	// A FIFO is refused at once rather than blocking the worker.
	start := time.Now()
	r := call(t, cs, "read_text_file", map[string]any{"path": "fifo.txt"})
	check("read fifo", r)
	if r.text != `no served file at "fifo.txt"` || time.Since(start) > 5*time.Second {
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
		switch {
		case strings.HasSuffix(text, viaLink),
			strings.HasPrefix(text, "no served file at "),
			strings.HasPrefix(text, "no served directory at "),
			text == errWriteDest, // w.txt or top.txt was a link at the check
			refusedAsChanged(text):
			return true
		}
		return false
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
