package manifest

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fsmcp/fsmcp/internal/toolset"
)

// TestFromFlags: one root on the command line becomes the manifest a file
// of that root would be, and its errors name the options.
func TestFromFlags(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "ws"), 0o755); err != nil {
		t.Fatal(err)
	}
	m, err := FromFlags(dir, RootFlags{
		Root: "ws", Include: []string{"**"}, Exclude: []string{"*.log"}, NoDefaultExclude: true, Tools: "read",
		Limits: map[string]string{"max_read_bytes": "4096", "max_depth": "3"}, LimitOrder: []string{"max_read_bytes", "max_depth"},
		CursorKeyEnv: "KEY", CallTimeout: "2s",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"--root", filepath.Join(dir, "ws"), "--name", "root", "--tools", "list_directory,search_files,search_text,read_text_file",
		"--include", "**", "--exclude", "*.log", "--no-default-exclude", "--max-depth", "3", "--max-read-bytes", "4096", "--cursor-key-env", "KEY"}
	if len(m.Roots) != 1 || !slices.Equal(m.Roots[0].Args(), want) || m.Roots[0].CallTimeout != 2*time.Second || m.File != "" || m.Versions != nil {
		t.Fatalf("manifest %+v\nargs %q\nwant %q", m, m.Roots[0].Args(), want)
	}
	if err := m.CheckEnv(func(string) (string, bool) { return "", false }); err == nil || err.Error() != "--cursor-key-env: environment variable KEY is not set; a cursor key is unpadded base64url of 32 bytes or more, made with: head -c 32 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\\n'" {
		t.Errorf("CheckEnv: %v", err)
	}
	if m, err := FromFlags(dir, RootFlags{Root: "ws", Include: []string{"**"}}); err != nil || m.Roots[0].Name != "root" || m.Roots[0].Tools.String() != strings.Join(toolset.All, ",") {
		t.Errorf("defaults: %+v %v, want root named root with all tools", m, err)
	}

	tests := []struct {
		name string
		f    RootFlags
		want []string
	}{
		{"no root", RootFlags{Include: []string{"**"}}, []string{"--root: missing; name the folder to serve"}},
		{"missing folder and no include", RootFlags{Root: "nope"}, []string{`--root: root folder "nope" does not exist (tried ` + filepath.Join(dir, "nope") + `); give the folder relative to the working directory or absolute`, "--include: missing; give at least one --include GLOB, such as --include '**'"}},
		{"bad name and tools", RootFlags{Root: "ws", Name: "Ws", Include: []string{"**"}, Tools: "read_text_file,rm"}, []string{`--name: "Ws" is not a valid root name`, `--tools: unknown tool "rm"`}},
		{"bad limit", RootFlags{Root: "ws", Include: []string{"**"}, Limits: map[string]string{"max_scan_bytes": "10"}, LimitOrder: []string{"max_scan_bytes"}},
			[]string{"--max-scan-bytes: 10 is too small; use 16384 or more"}},
		{"write cannot reach the root", RootFlags{Root: "ws", Include: []string{"lib/**"}, Tools: "write"}, []string{"--include: the mask grants write_text_file"}},
		{"bad call timeout", RootFlags{Root: "ws", Include: []string{"**"}, CallTimeout: "30"}, []string{`--call-timeout: 30 has no unit; give a duration from 100ms to 24h, such as 30s or 2m`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := FromFlags(dir, tt.f)
			var errs Errors
			if err == nil {
				t.Fatalf("accepted, want %q", tt.want)
			}
			errs = err.(Errors)
			if len(errs) != len(tt.want) {
				t.Fatalf("errors %q, want %q", err, tt.want)
			}
			for i, e := range errs {
				if !strings.HasPrefix(e.Error(), tt.want[i]) {
					t.Errorf("error %d: %q, want prefix %q", i, e, tt.want[i])
				}
			}
		})
	}
}
