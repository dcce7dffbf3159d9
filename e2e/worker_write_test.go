//go:build linux

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The write tool's texts, verbatim from docs/reference.md, Errors
// (errWriteName and errWriteDest are beside the path refusals in
// attack_escape_test.go).
const (
	errWriteExcluded  = "path matches an --exclude pattern of this root"
	errWriteNoInclude = "path matches no --include pattern of this root"
	errWriteNoTop     = "no --include pattern of this root matches a file in the root itself, so no write can be accepted; " +
		"a write names one basename and lands in the root, so add an --include pattern without a directory prefix, such as '**'"
	errWriteFailed = "write failed"
)

func TestWrite(t *testing.T) {
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "target.txt"), []byte("outside bytes"), 0o644)
	root := tree(t, map[string]string{"old.md": "old", "sub/x.md": "x", "secret.md": "s"})
	os.Symlink(filepath.Join(outside, "target.txt"), filepath.Join(root, "link.md"))
	os.Symlink("old.md", filepath.Join(root, "inner-link.md"))
	os.Link(filepath.Join(outside, "target.txt"), filepath.Join(root, "hard.md"))
	os.Mkdir(filepath.Join(root, "adir.md"), 0o755)
	os.Mkdir(filepath.Join(root, "plain"), 0o755)
	if err := syscall.Mkfifo(filepath.Join(root, "fifo.md"), 0o666); err != nil {
		t.Fatal(err)
	}
	cs := worker(t, root, "--include", "*.md", "--include", "sub/**", "--exclude", "private.md", "--exclude", "secret.md", "--max-write-bytes", "100")

	r := ok(t, cs, "write_text_file", map[string]any{"path": "new.md", "content": "héllo\n"})
	if want := "sha256:" + sha([]byte("héllo\n")); r.obj["path"] != "new.md" || r.obj["bytes"] != float64(len("héllo\n")) || r.obj["content_hash"] != want || len(r.obj) != 3 {
		t.Fatalf("write result %v, want {path: new.md, bytes: 7, content_hash: %s}", r.obj, want)
	}
	if fi, err := os.Stat(filepath.Join(root, "new.md")); err != nil || fi.Mode() != 0o600 {
		t.Errorf("new file mode %v (%v), want 0600", fi.Mode(), err)
	}
	read := ok(t, cs, "read_text_file", map[string]any{"path": "new.md"})
	// The read side's hashes take the sha256: prefix separately; compare
	// the digests.
	if "sha256:"+strings.TrimPrefix(read.page.ContentHash, "sha256:") != r.obj["content_hash"] {
		t.Error("the write's content_hash differs from the read's")
	}
	ok(t, cs, "write_text_file", map[string]any{"path": "old.md", "content": ""})
	if b, _ := os.ReadFile(filepath.Join(root, "old.md")); len(b) != 0 {
		t.Errorf("old.md = %q", b)
	}
	// The longest name the rule allows, and exactly the size limit.
	long := strings.Repeat("a", 251) + ".md"
	ok(t, cs, "write_text_file", map[string]any{"path": long, "content": strings.Repeat("x", 100)})
	// A hard link at the destination is replaced, never written through.
	ok(t, cs, "write_text_file", map[string]any{"path": "hard.md", "content": "mine"})
	if b, _ := os.ReadFile(filepath.Join(outside, "target.txt")); string(b) != "outside bytes" {
		t.Fatalf("a write went through a hard link: outside file now %q", b)
	}

	for _, tt := range []struct {
		name string
		args map[string]any
		want string
	}{
		{"directory in the name", map[string]any{"path": "sub/x.md", "content": "x"}, errWriteName},
		{"upper case", map[string]any{"path": "Upper.md", "content": "x"}, errWriteName},
		{"dot dot", map[string]any{"path": "../x.md", "content": "x"}, errWriteName},
		{"absolute", map[string]any{"path": "/tmp/x.md", "content": "x"}, errWriteName},
		{"empty", map[string]any{"path": "", "content": "x"}, errWriteName},
		{"dot", map[string]any{"path": ".", "content": "x"}, errWriteName},
		{"leading dot", map[string]any{"path": ".env", "content": "x"}, errWriteName},
		{"temporary name", map[string]any{"path": ".fsmcp-write-1.tmp", "content": "x"}, errWriteName},
		{"leading hyphen", map[string]any{"path": "-x.md", "content": "x"}, errWriteName},
		{"space", map[string]any{"path": "a b.md", "content": "x"}, errWriteName},
		{"non-ASCII", map[string]any{"path": "é.md", "content": "x"}, errWriteName},
		{"trailing slash", map[string]any{"path": "x.md/", "content": "x"}, errWriteName},
		{"256 bytes", map[string]any{"path": strings.Repeat("a", 253) + ".md", "content": "x"}, errWriteName},
		{"too large", map[string]any{"path": "big.md", "content": strings.Repeat("x", 101)}, "content exceeds the 100-byte write limit"},
		{"excluded", map[string]any{"path": "private.md", "content": "x"}, errWriteExcluded},
		{"excluded by the built-in list", map[string]any{"path": "id_rsa", "content": "x"}, errWriteExcluded},
		{"not included", map[string]any{"path": "a.txt", "content": "x"}, errWriteNoInclude},
		{"symbolic link out", map[string]any{"path": "link.md", "content": "x"}, errWriteDest},
		{"symbolic link in", map[string]any{"path": "inner-link.md", "content": "x"}, errWriteDest},
		{"directory", map[string]any{"path": "adir.md", "content": "x"}, errWriteDest},
		{"FIFO", map[string]any{"path": "fifo.md", "content": "x"}, errWriteDest},
		// The checks run in the documented order: name, size, exclude,
		// include, destination.
		{"name before size", map[string]any{"path": "Big.md", "content": strings.Repeat("x", 101)}, errWriteName},
		{"size before exclude", map[string]any{"path": "private.md", "content": strings.Repeat("x", 101)}, "content exceeds the 100-byte write limit"},
		{"exclude before include", map[string]any{"path": "id_ed25519", "content": "x"}, errWriteExcluded},
		{"exclude before destination", map[string]any{"path": "secret.md", "content": "x"}, errWriteExcluded},
		{"include before destination", map[string]any{"path": "plain", "content": "x"}, errWriteNoInclude},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := snapshot(t, root, outside)
			r := call(t, cs, "write_text_file", tt.args)
			if !r.isError || r.text != tt.want {
				t.Errorf("write_text_file(%.80v): isError=%v %q, want %q", tt.args, r.isError, r.text, tt.want)
			}
			if after := snapshot(t, root, outside); after != before {
				t.Errorf("a refused write changed the disk:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
	assertNoTemp(t, root)
}

func TestWriteNeedsTopLevelInclude(t *testing.T) {
	root := tree(t, map[string]string{"lib/a.go": "a"})
	cs := worker(t, root, "--include", "lib/**")
	fails(t, cs, "write_text_file", map[string]any{"path": "a.md", "content": "x"}, errWriteNoTop)
	cs = worker(t, root, "--include", "lib/**", "--include", "*.md")
	r := fails(t, cs, "write_text_file", map[string]any{"path": "a.txt", "content": "x"}, errWriteNoInclude)
	if r.text != errWriteNoInclude {
		t.Errorf("text %q, want exactly %q", r.text, errWriteNoInclude)
	}
	ok(t, cs, "write_text_file", map[string]any{"path": "a.md", "content": "x"})
}

func assertNoTemp(t *testing.T, root string) {
	t.Helper()
	es, _ := os.ReadDir(root)
	for _, e := range es {
		if strings.HasPrefix(e.Name(), ".fsmcp-") {
			t.Errorf("temporary file left behind: %s", e.Name())
		}
	}
}

// TestWriteKilledMidway SIGKILLs the worker while large writes are in
// flight: the file always holds the old bytes or the new ones, and no temp
// file is ever listed.
func TestWriteKilledMidway(t *testing.T) {
	oldText := strings.Repeat("o", 60000)
	root := tree(t, map[string]string{"f.txt": oldText})
	for i := range 8 {
		cmd := exec.Command(workerBin, "--root", root, "--include", "**")
		cmd.Env = []string{}
		stdin, _ := cmd.StdinPipe()
		cmd.Stdout = nil
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		newText := strings.Repeat(string(rune('a'+i)), 60000)
		req := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{` + newMeta + `,"name":"write_text_file","arguments":{"path":"f.txt","content":"` + newText + `"}}}` + "\n"
		go stdin.Write([]byte(req))
		time.Sleep(time.Duration(i) * 2 * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		b, _ := os.ReadFile(filepath.Join(root, "f.txt"))
		if string(b) != oldText && string(b) != newText {
			t.Fatalf("after kill %d the file holds %d mixed bytes", i, len(b))
		}
		oldText = string(b)
	}
	// A killed write may leave its temp file, but it is never served.
	cs := worker(t, root, "--include", "**", "--no-default-exclude")
	r := ok(t, cs, "list_directory", map[string]any{})
	if got := paths(items[entryItem](t, r)); got != "f.txt:file" {
		t.Fatalf("listing after kills: %s", got)
	}
}

func TestConfinementSymlinks(t *testing.T) {
	outside := tree(t, map[string]string{"secret.txt": "outside secret", "d/inner.txt": "outside inner"})
	root := tree(t, map[string]string{"real/a.txt": "inside"})
	os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(root, "leaf.txt"))
	os.Symlink(filepath.Join(outside, "d"), filepath.Join(root, "anc"))
	os.Symlink("real", filepath.Join(root, "rel"))
	// A sibling whose name shares the root's prefix.
	sibling := root + "-sibling"
	os.MkdirAll(sibling, 0o755)
	os.WriteFile(filepath.Join(sibling, "s.txt"), []byte("sibling"), 0o644)
	t.Cleanup(func() { os.RemoveAll(sibling) })
	os.Symlink(sibling, filepath.Join(root, "sib"))
	cs := worker(t, root, "--include", "**")
	for p, want := range map[string]string{
		"leaf.txt":      "path is not a readable regular file",
		"anc/inner.txt": "path is not served by this root",
		"rel/a.txt":     "path is not served by this root",
		"sib/s.txt":     "path is not served by this root",
	} {
		if r := fails(t, cs, "read_text_file", map[string]any{"path": p}, want); r.text != want {
			t.Errorf("read %q: %q, want exactly %q", p, r.text, want)
		}
	}
	// A listing or search under a link answers the empty page.
	for _, p := range []string{"anc", "rel", "sib"} {
		for _, c := range []struct {
			tool string
			args map[string]any
		}{
			{"list_directory", map[string]any{"path": p}},
			{"search_files", map[string]any{"query": "t", "path": p}},
		} {
			if r := ok(t, cs, c.tool, c.args); len(r.page.Items) != 0 || r.page.NextCursor != nil {
				t.Errorf("%s under the link %q: %s, want the empty page", c.tool, p, r.text)
			}
		}
	}
	r := ok(t, cs, "list_directory", map[string]any{})
	if got := paths(items[entryItem](t, r)); got != "real:directory" {
		t.Errorf("links listed: %s", got)
	}
	r = ok(t, cs, "search_files", map[string]any{"query": ".txt"})
	if got := len(r.page.Items); got != 1 {
		t.Errorf("search_files found %d files through links", got)
	}
}

// TestAncestorSwapRace swaps an ancestor directory for a symlink to an
// outside directory while reads and listings run: no outside byte is ever
// returned.
func TestAncestorSwapRace(t *testing.T) {
	outside := tree(t, map[string]string{"b/f.txt": "OUTSIDE"})
	root := tree(t, map[string]string{"a/b/f.txt": "inside"})
	cs := worker(t, root, "--include", "**")
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		a, aside := filepath.Join(root, "a"), filepath.Join(root, "a-aside")
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			os.Rename(a, aside)
			os.Symlink(outside, a)
			time.Sleep(50 * time.Microsecond)
			os.Remove(a)
			os.Rename(aside, a)
		}
	}()
	for range 300 {
		r := call(t, cs, "read_text_file", map[string]any{"path": "a/b/f.txt"})
		if strings.Contains(r.text, "OUTSIDE") {
			t.Fatal("read returned bytes from outside the root")
		}
		r = call(t, cs, "search_files", map[string]any{"query": "f"})
		if strings.Contains(r.text, "OUTSIDE") {
			t.Fatal("search returned outside content")
		}
	}
	close(stop)
	<-done
}
