//go:build linux

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// callManifest writes a manifest with a reader root over files and an
// empty writer root; it returns the manifest and the writer's folder.
func callManifest(t *testing.T, files map[string]string, extra string) (string, string) {
	t.Helper()
	dir := t.TempDir()
	for p, body := range files {
		writeFile(t, filepath.Join(dir, "ws", p), body)
	}
	os.Mkdir(filepath.Join(dir, "out"), 0o755)
	file := filepath.Join(dir, "fsmcp.yaml")
	writeFile(t, file, "version: 1\nroots:\n  - name: reader\n    path: ws\n    include: ['**']\n    tools: read\n"+extra+
		"  - name: writer\n    path: out\n    include: ['*.md']\n    tools: write\n")
	return file, filepath.Join(dir, "out")
}

// TestSupervisorToolsCommand: tools lists what a host would see, one line
// per tool with its effect, or the tools/list entries with --json.
func TestSupervisorToolsCommand(t *testing.T) {
	manifest, _ := callManifest(t, map[string]string{"a.md": "a\n"}, "")
	code, out, errOut := cliRun(t, "", []string{}, supervisorBin, "tools", "--manifest", manifest)
	if code != 0 || errOut != "" {
		t.Fatalf("tools: exit %d: %s", code, errOut)
	}
	want := map[string]string{
		"reader_list_directory": "read", "reader_read_text_file": "read", "reader_search_files": "read",
		"reader_search_text": "read", "writer_write_text_file": "write",
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != len(want) {
		t.Fatalf("tools printed %q", out)
	}
	for _, line := range lines {
		f := strings.Fields(line)
		if len(f) < 3 || want[f[0]] != f[1] || f[2] != "["+strings.SplitN(f[0], "_", 2)[0]+"]" {
			t.Errorf("tools line %q", line)
		}
	}
	code, out, errOut = cliRun(t, "", []string{}, supervisorBin, "tools", "--json", "--manifest", manifest)
	var list []struct {
		Name        string         `json:"name"`
		InputSchema map[string]any `json:"inputSchema"`
	}
	if err := json.Unmarshal([]byte(out), &list); code != 0 || err != nil || len(list) != len(want) || list[0].InputSchema["type"] != "object" {
		t.Errorf("tools --json: exit %d, %v: %.300s%s", code, err, out, errOut)
	}
}

// TestSupervisorCallCommand: call makes one call and prints its
// structuredContent; --all follows next_cursor to the end; writes land.
func TestSupervisorCallCommand(t *testing.T) {
	files := map[string]string{}
	for i := range 7 {
		files[fmt.Sprintf("f%d.md", i)] = fmt.Sprintf("file %d\n", i)
	}
	manifest, out := callManifest(t, files, "")
	callJSON := func(v any, args ...string) {
		t.Helper()
		code, stdout, stderr := cliRun(t, "", []string{}, supervisorBin, append([]string{"call", "--manifest", manifest}, args...)...)
		if code != 0 || stderr != "" {
			t.Fatalf("call %v: exit %d: %s", args, code, stderr)
		}
		if !strings.HasPrefix(stdout, "{\n  \"") {
			t.Errorf("call %v printed %q, want indented JSON", args, stdout)
		}
		if err := json.Unmarshal([]byte(stdout), v); err != nil {
			t.Fatalf("call %v printed %q: %v", args, stdout, err)
		}
	}
	type page struct {
		Items      []struct{ Path string }
		NextCursor *string `json:"next_cursor"`
	}
	var one page
	callJSON(&one, "reader_list_directory", `{"path": "", "limit": 3}`)
	if len(one.Items) != 3 || one.NextCursor == nil {
		t.Errorf("one page of 3: %+v", one)
	}
	// The page is printed in the tool's key order, as the worker sent it.
	_, stdout, _ := cliRun(t, "", []string{}, supervisorBin, "call", "--manifest", manifest, "reader_list_directory", `{"path": "", "limit": 1}`)
	order := regexp.MustCompile(`(?s)^\{\s*"items": \[\s*\{\s*"name": "f0\.md",\s*"kind": "file",\s*"path": "f0\.md"\s*\}\s*\],\s*"next_cursor": "[^"]+",\s*"content_hash": "sha256:[0-9a-f]{64}"\s*\}\n$`)
	if !order.MatchString(stdout) {
		t.Errorf("call printed %q, want items, next_cursor, content_hash in that order", stdout)
	}
	// --all prints each page on a line of its own, as it arrives.
	code, stdout, stderr := cliRun(t, "", []string{}, supervisorBin, "call", "--manifest", manifest, "reader_list_directory", `{"path": "", "limit": 3}`, "--all")
	if code != 0 || stderr != "" {
		t.Fatalf("call --all: exit %d: %s", code, stderr)
	}
	var paths []string
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	for i, line := range lines {
		var p page
		if err := json.Unmarshal([]byte(line), &p); err != nil {
			t.Fatalf("--all line %d %q: %v", i+1, line, err)
		}
		if (p.NextCursor == nil) != (i == len(lines)-1) {
			t.Errorf("--all line %d has next_cursor %v", i+1, p.NextCursor)
		}
		for _, it := range p.Items {
			paths = append(paths, it.Path)
		}
	}
	if len(lines) != 3 || !slices.Equal(paths, []string{"f0.md", "f1.md", "f2.md", "f3.md", "f4.md", "f5.md", "f6.md"}) {
		t.Errorf("--all: %d pages, paths %v", len(lines), paths)
	}
	var wrote struct{ Path string }
	callJSON(&wrote, "writer_write_text_file", `{"path": "note.md", "content": "hello\n"}`)
	if data, err := os.ReadFile(filepath.Join(out, "note.md")); err != nil || string(data) != "hello\n" || wrote.Path != "note.md" {
		t.Errorf("write: %+v, file %q, %v", wrote, data, err)
	}
}

// TestSupervisorCallBadInput: bad input is one stderr line and exit 64; a
// tool error is its text and exit 1.
func TestSupervisorCallBadInput(t *testing.T) {
	manifest, _ := callManifest(t, map[string]string{"a.md": "a\n"}, "")
	keyed, _ := callManifest(t, map[string]string{"a.md": "a\n"}, "    cursor_key_env: FSMCP_E2E_UNSET_KEY\n")
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	writeFile(t, bad, "version: 1\nroots:\n  - name: x\n    path: nowhere\n    include: ['**']\n    tools: read\n")
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no manifest", []string{"call", "reader_list_directory"}, 64, "usage: fsmcp-supervisor call --manifest FILE TOOL"},
		{"no tool", []string{"call", "--manifest", manifest}, 64, "usage: fsmcp-supervisor call"},
		{"three positionals", []string{"call", "--manifest", manifest, "reader_list_directory", "{}", "{}"}, 64, "usage: fsmcp-supervisor call"},
		{"unknown flag", []string{"call", "--manifest", manifest, "--every"}, 64, "flag provided but not defined: -every"},
		{"arguments not an object", []string{"call", "--manifest", manifest, "reader_list_directory", "[1]"}, 64, `arguments "[1]" are not a JSON object`},
		{"arguments not JSON", []string{"call", "--manifest", manifest, "reader_list_directory", "{path:"}, 64, `arguments "{path:" are not a JSON object`},
		{"two objects", []string{"call", "--manifest", manifest, "reader_list_directory", "{} {}"}, 64, `are not a JSON object`},
		{"unknown tool", []string{"call", "--manifest", manifest, "reader_delete"}, 64, `unknown tool "reader_delete"; this manifest serves reader_list_directory, `},
		{"bad manifest", []string{"call", "--manifest", bad, "x_list_directory"}, 64, bad + ":4: roots[0].path: root folder \"nowhere\" does not exist (tried "},
		{"malformed key", []string{"call", "--manifest", keyed, "reader_list_directory"}, 64, "environment variable FSMCP_E2E_UNSET_KEY is not a cursor key: its value decodes to 5 bytes, fewer than 32; a cursor key is unpadded base64url of 32 bytes or more, made with: head -c 32 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\\n'"},
		{"unset key", []string{"call", "--manifest", keyed, "reader_list_directory"}, 64, "environment variable FSMCP_E2E_UNSET_KEY is not set; a cursor key is unpadded base64url of 32 bytes or more, made with: head -c 32 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\\n'"},
		{"tool error", []string{"call", "--manifest", manifest, "reader_read_text_file", `{"path": "gone.md"}`}, 1, `reader_read_text_file: path is not a readable regular file`},
		{"tools without manifest", []string{"tools"}, 64, "usage: fsmcp-supervisor tools [--manifest] FILE"},
		{"tools two manifests", []string{"tools", "--manifest", manifest, manifest}, 64, "usage: fsmcp-supervisor tools"},
		{"tools stray argument", []string{"tools", "--manifest", manifest, "extra"}, 64, "usage: fsmcp-supervisor tools"},
	} {
		var env []string
		if tc.name == "malformed key" {
			env = []string{"FSMCP_E2E_UNSET_KEY=c2hvcnQ"}
		}
		code, stdout, stderr := cliRun(t, "", env, supervisorBin, tc.args...)
		if code != tc.code || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "fsmcp-supervisor: ") || !strings.Contains(stderr, tc.want) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want %d and %q", tc.name, code, stdout, stderr, tc.code, tc.want)
		}
	}
}

// TestSupervisorCallAllKeepsPages: when a later page fails, call --all has
// printed the pages before it, each on its own line, and reports the tool
// error with exit 1.
func TestSupervisorCallAllKeepsPages(t *testing.T) {
	// 300 lines of ASCII, then bytes that are not UTF-8: the read's first
	// pages are good and the one reaching the end fails.
	body := strings.Repeat(strings.Repeat("a", 99)+"\n", 300) + "\xff\xfe\n"
	manifest, _ := callManifest(t, map[string]string{"mixed.md": body}, "    limits: {max_read_bytes: 4096}\n")
	code, stdout, stderr := cliRun(t, "", []string{}, supervisorBin, "call", "--manifest", manifest, "reader_read_text_file", `{"path": "mixed.md", "limit": 1}`, "--all")
	if code != 1 || stderr != "fsmcp-supervisor: reader_read_text_file: file is not valid UTF-8\n" {
		t.Fatalf("exit %d, stderr %q; want 1 and the tool error", code, stderr)
	}
	var text strings.Builder
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	for i, line := range lines {
		var page struct {
			Items []struct {
				Text string `json:"text"`
			} `json:"items"`
			NextCursor *string `json:"next_cursor"`
		}
		if err := json.Unmarshal([]byte(line), &page); err != nil || page.NextCursor == nil {
			t.Fatalf("line %d %q: %v, want a page with a next_cursor", i+1, line, err)
		}
		for _, it := range page.Items {
			text.WriteString(it.Text)
		}
	}
	if got := text.String(); len(lines) < 2 || !strings.HasPrefix(body, got) || len(got) < 4096 {
		t.Errorf("%d pages printed, %d bytes of text; want the good pages before the failing one", len(lines), len(got))
	}
}

// TestExampleWritesIgnored: a write through an example manifest, used in
// place, lands in manifests/outbox and leaves the checkout clean.
func TestExampleWritesIgnored(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Fatal("git is not on $PATH; install it (apt-get install git): this test asks git whether the example's writes are ignored")
	}
	name := fmt.Sprintf("e2e-%d.md", os.Getpid())
	written := filepath.Join("..", "manifests", "outbox", name)
	t.Cleanup(func() { os.Remove(written) })
	code, _, stderr := cliRun(t, "", []string{}, supervisorBin, "call", "--manifest", "../manifests/outbox.yaml", "outbox_write_text_file", `{"path": "`+name+`", "content": "# report\n"}`)
	if data, err := os.ReadFile(written); code != 0 || err != nil || string(data) != "# report\n" {
		t.Fatalf("write through the example: exit %d, %s; file %q, %v", code, stderr, data, err)
	}
	out, err := exec.Command(git, "-C", "..", "ls-files", "--others", "--exclude-standard", "manifests").CombinedOutput()
	if err != nil || len(out) != 0 {
		t.Errorf("untracked files git would show after the example's write: %q, %v; want none", out, err)
	}
	if out, err := exec.Command(git, "-C", "..", "check-ignore", "manifests/outbox/"+name).CombinedOutput(); err != nil {
		t.Errorf("git check-ignore manifests/outbox/%s: %q, %v", name, out, err)
	}
}
