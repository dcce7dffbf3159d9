//go:build linux

package e2e

import (
	"encoding/base64"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	fsversion "github.com/fsmcp/fsmcp/internal/version"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// runWorker runs the worker to completion with stdin closed and returns its
// exit status and output.
func runWorker(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(workerBin, args...)
	cmd.Env = env
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, stdout.String(), stderr.String()
}

// TestStartupErrors: every startup failure exits 64 with exactly one line on
// stderr, "fsmcp-worker: " and the text of docs/reference.md, Worker
// startup, and nothing on stdout.
func TestStartupErrors(t *testing.T) {
	root := tree(t, map[string]string{"a.txt": "x", "d/b.txt": "y"})
	file := root + "/a.txt"
	os.Symlink(root+"/d", root+"/link")
	base := []string{"--root", root, "--include", "**"}
	with := func(extra ...string) []string { return append(slices.Clone(base), extra...) }
	good := base64.RawURLEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))
	type row struct {
		name string
		env  []string
		args []string
		want string // the whole line after "fsmcp-worker: "
	}
	tests := []row{
		{"no arguments", nil, nil, "--root is required"},
		{"no root", nil, []string{"--include", "**"}, "--root is required"},
		{"empty root", nil, []string{"--root", "", "--include", "**"}, "--root is required"},
		{"no include", nil, []string{"--root", root}, "at least one --include pattern is required"},
		{"root missing", nil, []string{"--root", root + "/nope", "--include", "**"}, "root does not exist"},
		{"root below a file", nil, []string{"--root", file + "/sub", "--include", "**"}, "root does not exist"},
		{"root is a link", nil, []string{"--root", root + "/link", "--include", "**"}, "root must not be a symbolic link"},
		{"root is a link, trailing slash", nil, []string{"--root", root + "/link/", "--include", "**"}, "root must not be a symbolic link"},
		{"root is a file", nil, []string{"--root", file, "--include", "**"}, "root is not a directory"},
		{"root is a device", nil, []string{"--root", "/dev/null", "--include", "**"}, "root is not a directory"},
		{"unknown option", nil, with("--frobnicate"), "unknown option --frobnicate"},
		{"unknown option with a value", nil, with("--frobnicate=1"), "unknown option --frobnicate=1"},
		{"single dash", nil, with("-root", root), "unknown option -root"},
		{"positional", nil, with("extra"), "unknown option extra"},
		{"switch with a value", nil, with("--no-default-exclude=yes"), "unknown option --no-default-exclude=yes"},
		{"first bad option wins", nil, with("--bogus", "--max-files", "0"), "unknown option --bogus"},
		{"missing value at the end", nil, []string{"--root", root, "--include"}, "missing value for --include"},
		{"missing value before a flag", nil, []string{"--root", "--include", "**"}, "missing value for --root"},
		{"missing value for a limit", nil, with("--max-files"), "missing value for --max-files"},
		{"scan budget below its minimum", nil, with("--max-scan-bytes", "16383"), "limits are not valid: --max-scan-bytes must be at least 16384, got 16383"},
		{"read bytes low", nil, with("--max-read-bytes", "3"), "limits are not valid: --max-read-bytes must be between 4 and 1048576, got 3"},
		{"read bytes high", nil, with("--max-read-bytes", "1048577"), "limits are not valid: --max-read-bytes must be between 4 and 1048576, got 1048577"},
		{"result low", nil, with("--max-result-bytes", "47999"), "limits are not valid: --max-result-bytes must be between 48000 and 1048576, got 47999"},
		{"result high", nil, with("--max-result-bytes", "1048577"), "limits are not valid: --max-result-bytes must be between 48000 and 1048576, got 1048577"},
		{"key variable name empty", nil, with("--cursor-key-env", ""), "--cursor-key-env must name an environment variable"},
		{"key variable name bad", nil, with("--cursor-key-env", "NOT-A-NAME"), "--cursor-key-env must name an environment variable"},
		{"key variable missing", nil, with("--cursor-key-env", "FSMCP_NO_SUCH"), "cursor key environment variable is missing, empty, or malformed"},
		{"key variable empty", []string{"KEY="}, with("--cursor-key-env", "KEY"), "cursor key environment variable is missing, empty, or malformed"},
		{"key padded", []string{"KEY=" + base64.URLEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcde"))}, with("--cursor-key-env", "KEY"), "cursor key environment variable is missing, empty, or malformed"},
		{"key in standard base64", []string{"KEY=" + strings.Repeat("+/", 22)}, with("--cursor-key-env", "KEY"), "cursor key environment variable is missing, empty, or malformed"},
		{"key short", []string{"KEY=" + base64.RawURLEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcde"))}, with("--cursor-key-env", "KEY"), "cursor key environment variable is malformed or contains fewer than 32 bytes"},
		{"key not canonical", []string{"KEY=" + good[:len(good)-1] + "B"}, with("--cursor-key-env", "KEY"), "cursor key environment variable is malformed or contains fewer than 32 bytes"},
		{"key impossible length", []string{"KEY=" + good + "AB"}, with("--cursor-key-env", "KEY"), "cursor key environment variable is malformed or contains fewer than 32 bytes"},
	}
	for _, flag := range []string{"--max-files", "--max-directories", "--max-depth", "--max-entries", "--max-file-bytes", "--max-write-bytes", "--max-cursor-hash-bytes", "--max-scan-bytes", "--max-read-bytes", "--max-result-bytes"} {
		bad := []string{"-1", "abc", "1.5", "+5", "1e3", " 7", "0x10"}
		if flag != "--max-depth" {
			bad = append(bad, "0", "00")
		}
		for _, v := range bad {
			tests = append(tests, row{flag + "=" + v, nil, with(flag, v), flag + " must be a positive integer"})
		}
		tests = append(tests, row{flag + " as --flag=value", nil, with(flag + "=x"), flag + " must be a positive integer"})
		for _, v := range []string{"9007199254740992", "99999999999999999999999"} {
			tests = append(tests, row{flag + "=" + v, nil, with(flag, v), flag + " is too large"})
		}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runWorker(t, append([]string{}, tt.env...), tt.args...)
			if code != 64 {
				t.Fatalf("exit %d, want 64 (stderr %q)", code, stderr)
			}
			if stdout != "" {
				t.Errorf("stdout %q, want nothing", stdout)
			}
			if want := "fsmcp-worker: " + tt.want + "\n"; stderr != want {
				t.Errorf("stderr %q, want %q", stderr, want)
			}
			if v, ok := strings.CutPrefix(strings.Join(tt.env, ""), "KEY="); ok && v != "" && strings.Contains(stderr, v) {
				t.Errorf("stderr shows the key: %q", stderr)
			}
		})
	}
}

// TestStartupErrorsOurs: failures of fsmcp's own options and of globs keep
// fsmcp's texts, still one line and exit 64.
func TestStartupErrorsOurs(t *testing.T) {
	root := tree(t, map[string]string{"a.txt": "x"})
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"bad glob", []string{"--root", root, "--include", "/abs"}, "--include"},
		{"bad exclude", []string{"--root", root, "--include", "**", "--exclude", "a//b"}, "--exclude"},
		{"bad tools", []string{"--root", root, "--include", "**", "--tools", "read_text_file,rm"}, "unknown tool"},
		{"bad name", []string{"--root", root, "--include", "**", "--name", "Bad_Name"}, "--name"},
		{"mask mixed with names", []string{"--root", root, "--include", "**", "--tools", "read,write_text_file"}, `"read" is a mask, not a tool name`},
		{"two roots", []string{"--root", root, "--root", root, "--include", "**"}, "--root is given twice; a worker serves one root: to serve several, list them in a manifest for fsmcp-supervisor"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runWorker(t, []string{}, tt.args...)
			if code != 64 || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "fsmcp-worker: ") || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d stdout %q stderr %q, want 64 and one fsmcp-worker: line containing %q", code, stdout, stderr, tt.want)
			}
		})
	}
}

func TestLimitBoundsAccepted(t *testing.T) {
	root := tree(t, map[string]string{"a.txt": "x"})
	for _, args := range [][]string{
		{"--max-read-bytes", "4", "--max-result-bytes", "48000", "--max-scan-bytes", "16384"},
		{"--max-read-bytes", "1048576", "--max-result-bytes", "1048576"},
		{"--max-files", "1", "--max-directories", "1", "--max-depth", "1", "--max-entries", "1", "--max-file-bytes", "1", "--max-write-bytes", "1", "--max-cursor-hash-bytes", "1"},
	} {
		cs := worker(t, root, append([]string{"--include", "**"}, args...)...)
		ok(t, cs, "list_directory", map[string]any{})
	}
}

func TestCursorKeyAccepted(t *testing.T) {
	root := tree(t, map[string]string{"a.txt": "x"})
	good := base64.RawURLEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))
	cs := connect(t, []string{"KEY=" + good}, workerBin, "--root", root, "--include", "**", "--cursor-key-env", "KEY")
	ok(t, cs, "read_text_file", map[string]any{"path": "a.txt"})
}

// TestMaxDepthZero: --max-depth 0 is accepted; the root's files are served
// and any directory is beyond the ceiling.
func TestMaxDepthZero(t *testing.T) {
	root := tree(t, map[string]string{"a.txt": "x", "d/b.txt": "y"})
	cs := worker(t, root, "--include", "**", "--max-depth", "0")
	ok(t, cs, "read_text_file", map[string]any{"path": "a.txt"})
	fails(t, cs, "search_files", map[string]any{"query": "txt"}, "")
}

// TestHelpAndVersion: --help prints the usage on stdout and --version the
// bare version, each exiting 0 with nothing on stderr, even beside bad
// options; the first of the two given wins.
func TestHelpAndVersion(t *testing.T) {
	code, usage, stderr := runWorker(t, []string{}, "--help")
	if code != 0 || stderr != "" || !strings.HasPrefix(usage, "Usage: fsmcp-worker ") {
		t.Fatalf("--help: exit %d stdout %q stderr %q", code, usage, stderr)
	}
	for _, flag := range []string{"--root", "--include", "--exclude", "--no-default-exclude", "--max-files", "--max-directories", "--max-depth", "--max-entries", "--max-scan-bytes", "--max-file-bytes", "--max-read-bytes", "--max-result-bytes", "--max-write-bytes", "--cursor-key-env", "--max-cursor-hash-bytes", "--tools", "--name", "--version"} {
		if !strings.Contains(usage, flag) {
			t.Errorf("--help does not mention %s", flag)
		}
	}
	code, version, stderr := runWorker(t, []string{}, "--version")
	if code != 0 || stderr != "" || !regexp.MustCompile(`^\d+\.\d+\.\d+(\+[0-9A-Za-z.-]+)?\n$`).MatchString(version) {
		t.Fatalf("--version: exit %d stdout %q stderr %q, want the bare version", code, version, stderr)
	}
	// A test build is a checkout build, not a release: the revision follows.
	if release := strings.TrimSpace(version); !strings.HasPrefix(release, fsversion.Release+"+") {
		t.Errorf("--version %q, want %s+<revision> for a build from a checkout", release, fsversion.Release)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--frobnicate", "--help"}, usage},
		{[]string{"--help", "--root"}, usage},
		{[]string{"--max-files", "0", "--help"}, usage},
		{[]string{"--version", "--frobnicate"}, version},
		{[]string{"--root", "/nonexistent", "--include", "**", "--version"}, version},
		{[]string{"--cursor-key-env", "NOPE", "--version"}, version},
		{[]string{"--version", "--help"}, version},
		{[]string{"--help", "--version"}, usage},
	} {
		code, stdout, stderr := runWorker(t, []string{}, tt.args...)
		if code != 0 || stderr != "" || stdout != tt.want {
			t.Errorf("%q: exit %d stderr %q stdout %.40q, want 0, nothing, %.40q", tt.args, code, stderr, stdout, tt.want)
		}
	}
}

func TestStartupWarnings(t *testing.T) {
	root := tree(t, map[string]string{"lib/a.txt": "x", ".env": "SECRET=1"})
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"silent", []string{"--include", "**"}, nil},
		{"no top-level include", []string{"--include", "lib/**"}, []string{"fsmcp-worker: no --include pattern matches a file in the root itself, so write_text_file will refuse every call."}},
		{"read-only mask needs no warning", []string{"--include", "lib/**", "--tools", "read"}, nil},
		{"literal include defeated", []string{"--include", "**", "--include", ".env"}, []string{"fsmcp-worker: --include .env matches a built-in exclude, so nothing it names is served. Pass --no-default-exclude to drop the built-in list."}},
		{"both", []string{"--include", "lib/**", "--include", "lib/.env"}, []string{
			"fsmcp-worker: no --include pattern matches a file in the root itself, so write_text_file will refuse every call.",
			"fsmcp-worker: --include lib/.env matches a built-in exclude, so nothing it names is served. Pass --no-default-exclude to drop the built-in list."}},
		{"defaults off", []string{"--include", "**", "--include", ".env", "--no-default-exclude"}, nil},
		{"max-depth 0", []string{"--include", "**", "--max-depth", "0"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := startRaw(t, workerBin, append([]string{"--root", root}, tt.args...)...)
			p.roundTrip(t, `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{`+newMeta+`}}`)
			p.stdin.Close()
			p.cmd.Wait()
			// The warnings verbatim, one a line, and nothing else.
			want := ""
			for _, w := range tt.want {
				want += w + "\n"
			}
			if stderr := p.stderr.String(); stderr != want {
				t.Errorf("stderr %q, want %q", stderr, want)
			}
		})
	}
}

func TestToolsMask(t *testing.T) {
	root := tree(t, map[string]string{"a.txt": "x"})
	tests := []struct {
		mask string
		want []string
	}{
		{"read", []string{"list_directory", "search_files", "search_text", "read_text_file"}},
		{"write", []string{"write_text_file"}},
		{"read_text_file,write_text_file", []string{"read_text_file", "write_text_file"}},
		{"all", []string{"list_directory", "search_files", "search_text", "read_text_file", "write_text_file"}},
	}
	for _, tt := range tests {
		cs := worker(t, root, "--include", "**", "--tools", tt.mask)
		res, err := cs.ListTools(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, tl := range res.Tools {
			got = append(got, tl.Name)
		}
		slices.Sort(got)
		slices.Sort(tt.want)
		if strings.Join(got, ",") != strings.Join(tt.want, ",") {
			t.Errorf("--tools %s registers %v, want %v", tt.mask, got, tt.want)
		}
		if tt.mask == "read" {
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "write_text_file", Arguments: map[string]any{"path": "b.txt", "content": "no"}})
			if err == nil && !res.IsError {
				t.Error("a read-only worker accepted write_text_file")
			}
			if _, err := os.Stat(root + "/b.txt"); err == nil {
				t.Error("a read-only worker wrote a file")
			}
		}
	}
}
