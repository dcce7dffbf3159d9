package e2e

import (
	"encoding/base64"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

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

func TestStartupErrors(t *testing.T) {
	root := tree(t, map[string]string{"a.txt": "x"})
	file := root + "/a.txt"
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no root", []string{"--include", "**"}, "--root is required"},
		{"no include", []string{"--root", root}, "--include"},
		{"root missing", []string{"--root", root + "/nope", "--include", "**"}, "cannot be opened"},
		{"root is a file", []string{"--root", file, "--include", "**"}, "not a directory"},
		{"bad glob", []string{"--root", root, "--include", "/abs"}, "--include"},
		{"bad exclude", []string{"--root", root, "--include", "**", "--exclude", "a//b"}, "--exclude"},
		{"unknown flag", []string{"--root", root, "--include", "**", "--frobnicate"}, "unknown option --frobnicate"},
		{"missing value", []string{"--root", root, "--include"}, "needs a value"},
		{"positional", []string{"--root", root, "--include", "**", "extra"}, "unexpected argument"},
		{"bad tools", []string{"--root", root, "--include", "**", "--tools", "read_text_file,rm"}, "unknown tool"},
		{"bad name", []string{"--root", root, "--include", "**", "--name", "Bad_Name"}, "--name"},
		{"key env unset", []string{"--root", root, "--include", "**", "--cursor-key-env", "FSMCP_NO_SUCH"}, "not set"},
		{"read bytes low", []string{"--root", root, "--include", "**", "--max-read-bytes", "3"}, "--max-read-bytes must be between 4 and 1048576"},
		{"read bytes high", []string{"--root", root, "--include", "**", "--max-read-bytes", "1048577"}, "--max-read-bytes must be between 4 and 1048576"},
		{"result low", []string{"--root", root, "--include", "**", "--max-result-bytes", "47999"}, "--max-result-bytes must be between 48000 and 1048576"},
		{"result high", []string{"--root", root, "--include", "**", "--max-result-bytes", "1048577"}, "--max-result-bytes must be between 48000 and 1048576"},
		{"scan low", []string{"--root", root, "--include", "**", "--max-scan-bytes", "16383"}, "--max-scan-bytes must be at least 16384"},
	}
	for _, flag := range []string{"--max-files", "--max-directories", "--max-depth", "--max-entries", "--max-file-bytes", "--max-write-bytes", "--max-cursor-hash-bytes", "--max-scan-bytes", "--max-read-bytes", "--max-result-bytes"} {
		for _, v := range []string{"0", "-1", "abc", "1.5"} {
			tests = append(tests, struct {
				name string
				args []string
				want string
			}{flag + "=" + v, []string{"--root", root, "--include", "**", flag, v}, flag + " takes a positive integer"})
		}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runWorker(t, []string{}, tt.args...)
			if code != 64 {
				t.Fatalf("exit %d, want 64 (stderr %q)", code, stderr)
			}
			if stdout != "" {
				t.Errorf("stdout %q, want nothing", stdout)
			}
			if strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "fsmcp-worker: ") {
				t.Errorf("stderr %q, want one fsmcp-worker: line", stderr)
			}
			if !strings.Contains(stderr, tt.want) {
				t.Errorf("stderr %q does not contain %q", stderr, tt.want)
			}
			if strings.Contains(stderr, "goroutine") || strings.Contains(stderr, "panic") {
				t.Errorf("stack trace on stderr: %q", stderr)
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

func TestCursorKeyRefusedWithoutLeaking(t *testing.T) {
	root := tree(t, map[string]string{"a.txt": "x"})
	good := base64.RawURLEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))
	for name, v := range map[string]string{
		"empty":     "",
		"padded":    base64.URLEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcde")),
		"short":     base64.RawURLEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcde")),
		"malformed": "not*base64url*at*all*not*base64url*at*all*xx",
		"std":       strings.ReplaceAll(strings.ReplaceAll(good, "-", "+"), "_", "/") + "+/",
	} {
		t.Run(name, func(t *testing.T) {
			code, _, stderr := runWorker(t, []string{"KEY=" + v}, "--root", root, "--include", "**", "--cursor-key-env", "KEY")
			if code != 64 || strings.Count(stderr, "\n") != 1 {
				t.Fatalf("exit %d stderr %q", code, stderr)
			}
			if v != "" && strings.Contains(stderr, v) {
				t.Fatalf("stderr leaks the key: %q", stderr)
			}
		})
	}
	cs := connect(t, []string{"KEY=" + good}, workerBin, "--root", root, "--include", "**", "--cursor-key-env", "KEY")
	ok(t, cs, "read_text_file", map[string]any{"path": "a.txt"})
}

func TestHelpAndVersion(t *testing.T) {
	code, stdout, stderr := runWorker(t, []string{}, "--help")
	if code != 0 || stderr != "" {
		t.Fatalf("--help: exit %d stderr %q", code, stderr)
	}
	for _, flag := range []string{"--root", "--include", "--exclude", "--no-default-exclude", "--max-files", "--max-directories", "--max-depth", "--max-entries", "--max-scan-bytes", "--max-file-bytes", "--max-read-bytes", "--max-result-bytes", "--max-write-bytes", "--cursor-key-env", "--max-cursor-hash-bytes", "--tools", "--name", "--version"} {
		if !strings.Contains(stdout, flag) {
			t.Errorf("--help does not mention %s", flag)
		}
	}
	code, stdout, _ = runWorker(t, []string{}, "--version")
	if code != 0 || !strings.HasPrefix(stdout, "fsmcp-worker ") {
		t.Fatalf("--version: exit %d stdout %q", code, stdout)
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
		{"no top-level include", []string{"--include", "lib/**"}, []string{"no --include pattern matches a file in the root itself, so write_text_file will refuse every call."}},
		{"read-only mask needs no warning", []string{"--include", "lib/**", "--tools", "read"}, nil},
		{"literal include defeated", []string{"--include", "**", "--include", ".env"}, []string{`--include ".env"`, "--no-default-exclude"}},
		{"defaults off", []string{"--include", "**", "--include", ".env", "--no-default-exclude"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := startRaw(t, workerBin, append([]string{"--root", root}, tt.args...)...)
			p.roundTrip(t, `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{`+newMeta+`}}`)
			p.stdin.Close()
			p.cmd.Wait()
			stderr := p.stderr.String()
			if tt.want == nil && stderr != "" {
				t.Fatalf("stderr %q, want silence", stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q lacks %q", stderr, w)
				}
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
