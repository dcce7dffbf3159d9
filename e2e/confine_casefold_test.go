//go:build linux

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fsmcp/fsmcp/e2e/internal/fusefs"
)

// On a filesystem that folds case, a name a client gives must still be the
// entry's exact name: include and exclude rules are judged on the name
// given, so a path spelled otherwise would reach what they exclude.

// casefoldFiles is the tree every case-insensitive test serves.
var casefoldFiles = map[string]string{
	"private/key.txt":   "key-material-7f3a\n",
	"Secret.md":         "secret-material-91c2\n",
	"public/readme.txt": "public words\n",
	"notes.txt":         "plain notes\n",
}

// checkExactSpelling runs the cases on root, a directory whose filesystem
// folds case, holding casefoldFiles.
func checkExactSpelling(t *testing.T, root string) {
	// The filesystem must fold, or the cases below prove nothing.
	if b, err := os.ReadFile(filepath.Join(root, "PRIVATE", "KEY.TXT")); err != nil || string(b) != casefoldFiles["private/key.txt"] {
		t.Fatalf("the test filesystem does not fold case: reading PRIVATE/KEY.TXT gave %q, %v", b, err)
	}
	cs := worker(t, root, "--include", "**", "--exclude", "private/**", "--exclude", "Secret.md")
	secrets := []string{"key-material-7f3a", "secret-material-91c2"}
	noSecret := func(what string, r *result) {
		t.Helper()
		raw := r.text + string(mustJSON(r.raw.StructuredContent))
		for _, s := range secrets {
			if strings.Contains(raw, s) {
				t.Errorf("%s: the answer holds excluded content %q: %s", what, s, raw)
			}
		}
	}

	// Reads of another spelling get the answer a missing file gets.
	missingRead := call(t, cs, "read_text_file", map[string]any{"path": "nosuch/key.txt"})
	if !missingRead.isError {
		t.Fatal("reading a missing file succeeded")
	}
	for _, path := range []string{"PRIVATE/key.txt", "Private/KEY.TXT", "private/KEY.txt", "SECRET.MD", "secret.md", "PUBLIC/readme.txt", "public/README.TXT", "NOTES.txt"} {
		r := call(t, cs, "read_text_file", map[string]any{"path": path})
		noSecret("read "+path, r)
		want := missingRead.text
		if strings.HasPrefix(path, "private/") {
			// The name given matches --exclude private/**, and the
			// contract matches excludes on the name given, before any
			// filesystem call.
			want = "path matches an --exclude pattern of this root"
		}
		if !r.isError || r.text != want {
			t.Errorf("read %s: error %v %q, want %q", path, r.isError, r.text, want)
		}
	}
	// The exact spellings: served, or refused by the rules.
	if r := ok(t, cs, "read_text_file", map[string]any{"path": "public/readme.txt"}); !strings.Contains(string(mustJSON(r.page.Items)), "public words") {
		t.Errorf("public/readme.txt read %s", mustJSON(r.page.Items))
	}
	for _, path := range []string{"private/key.txt", "Secret.md"} {
		r := call(t, cs, "read_text_file", map[string]any{"path": path})
		noSecret("read "+path, r)
		if !r.isError || r.text == missingRead.text {
			t.Errorf("read %s: %v %q, want the exclusion's refusal", path, r.isError, r.text)
		}
	}

	// Listings and searches under another spelling: the empty page a
	// missing directory gets.
	for _, tc := range []struct {
		tool string
		args map[string]any
	}{
		{"list_directory", map[string]any{"path": "PRIVATE"}},
		{"list_directory", map[string]any{"path": "Private"}},
		{"list_directory", map[string]any{"path": "PUBLIC"}},
		{"search_text", map[string]any{"query": "material", "path": "PRIVATE"}},
		{"search_text", map[string]any{"query": "material", "path": "SECRET.MD"}},
		{"search_text", map[string]any{"query": "material"}},
		{"search_files", map[string]any{"query": "key", "path": "PRIVATE"}},
		{"search_files", map[string]any{"query": "secret", "case_insensitive": true}},
	} {
		r := call(t, cs, tc.tool, tc.args)
		noSecret(tc.tool+" "+string(mustJSON(tc.args)), r)
		if !r.isError && len(r.page.Items) != 0 {
			t.Errorf("%s %s: items %s, want none", tc.tool, mustJSON(tc.args), mustJSON(r.page.Items))
		}
		missing := map[string]any{}
		for k, v := range tc.args {
			missing[k] = v
		}
		if _, ok := missing["path"]; ok {
			missing["path"] = "nosuch"
			m := call(t, cs, tc.tool, missing)
			if r.isError != m.isError || (r.isError && r.text != strings.ReplaceAll(m.text, "nosuch", tc.args["path"].(string))) {
				t.Errorf("%s %s: %v %q, a missing path's answer is %v %q", tc.tool, mustJSON(tc.args), r.isError, r.text, m.isError, m.text)
			}
		}
	}
	if r := ok(t, cs, "list_directory", map[string]any{"path": "public"}); len(r.page.Items) != 1 {
		t.Errorf("list public: %s, want readme.txt", mustJSON(r.page.Items))
	}

	// A write whose name folds to an excluded entry must not replace it.
	before, _ := os.ReadFile(filepath.Join(root, "Secret.md"))
	r := call(t, cs, "write_text_file", map[string]any{"path": "secret.md", "content": "overwritten\n"})
	if !r.isError {
		t.Errorf("writing secret.md over Secret.md succeeded: %s", r.text)
	}
	after, _ := os.ReadFile(filepath.Join(root, "Secret.md"))
	if string(after) != string(before) || string(after) != casefoldFiles["Secret.md"] {
		t.Errorf("Secret.md holds %q after the write, want %q", after, before)
	}
	es, _ := os.ReadDir(root)
	for _, e := range es {
		if strings.EqualFold(e.Name(), "secret.md") && e.Name() != "Secret.md" {
			t.Errorf("the refused write left %s", e.Name())
		}
	}
}

func TestExactSpellingOnCaseFoldingFUSE(t *testing.T) {
	host := tree(t, casefoldFiles)
	mnt := t.TempDir()
	fusefs.Mount(t, mnt, fusefs.NewCasefold(host))
	checkExactSpelling(t, mnt)
}

// TestExactSpellingOnExt4Casefold runs the same cases in an ext4 casefold
// directory (chattr +F) of a loop-mounted image, where the kernel can fold
// case on ext4 at all.
func TestExactSpellingOnExt4Casefold(t *testing.T) {
	if _, err := os.Stat("/sys/fs/ext4/features/casefold"); err != nil {
		// Not a set-up failure a command can fix: the running kernel
		// was built without CONFIG_UNICODE. The FUSE test above covers
		// the same cases.
		t.Skipf("this kernel cannot fold case on ext4 (/sys/fs/ext4/features/casefold: %v); boot a kernel built with CONFIG_UNICODE=y to run this test", err)
	}
	for _, tool := range []string{"mkfs.ext4", "chattr", "mount", "umount"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is missing: run `apt-get update && apt-get install -y e2fsprogs mount`", tool)
		}
	}
	dir := t.TempDir()
	img, mnt := filepath.Join(dir, "fs.img"), filepath.Join(dir, "mnt")
	run := func(name string, args ...string) {
		t.Helper()
		if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
			t.Fatalf("%s %s: %v: %s (the test needs root and a free loop device: `modprobe loop`, in a container --privileged)", name, strings.Join(args, " "), err, out)
		}
	}
	run("truncate", "-s", "32M", img)
	run("mkfs.ext4", "-q", "-O", "casefold", img)
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	run("mount", "-o", "loop", img, mnt)
	t.Cleanup(func() { exec.Command("umount", mnt).Run() })
	root := filepath.Join(mnt, "folded")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	run("chattr", "+F", root)
	for p, body := range casefoldFiles {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	checkExactSpelling(t, root)
}

// The exact spelling costs nothing where no directory folds: the same
// names on an ordinary filesystem are served as before.
func TestExactSpellingOnOrdinaryFilesystem(t *testing.T) {
	root := tree(t, casefoldFiles)
	var cs *mcp.ClientSession = worker(t, root, "--include", "**", "--exclude", "private/**")
	ok(t, cs, "read_text_file", map[string]any{"path": "Secret.md"})
	ok(t, cs, "read_text_file", map[string]any{"path": "public/readme.txt"})
	fails(t, cs, "read_text_file", map[string]any{"path": "SECRET.MD"}, "")
}
