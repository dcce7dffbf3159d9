package manifest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestParseArgSize: a root whose worker command line could not be
// started is refused.
func TestParseArgSize(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "ws"), 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "m.yaml")
	long := strings.Repeat("x", 40000)
	many := make([]string, argLimit()/len(long)+1)
	for i := range many {
		many[i] = fmt.Sprintf("'%s%d'", long, i)
	}
	huge := "[" + strings.Join(many, ", ") + "]" // just above this system's limit
	tests := []struct {
		name, yaml, want string
	}{
		{"arguments over ARG_MAX", "version: 1\nroots:\n  - name: a\n    path: ws\n    include: " + huge + "\n    tools: read\n",
			fmt.Sprintf("m.yaml:3: roots[0]: the worker's command line would take %d bytes, above this system's limit of %d (ARG_MAX, with 8192 kept for its environment); use fewer or shorter globs", argBytes(append([]string{"--root", filepath.Join(dir, "ws"), "--name", "a", "--tools", "list_directory,search_files,search_text,read_text_file"}, includeArgs(len(many), long)...)), argLimit())},
		{"one argument over MAX_ARG_STRLEN", "version: 1\nroots:\n  - name: a\n    path: ws\n    include: ['" + strings.Repeat("y", 140000) + "']\n    tools: read\n",
			"m.yaml:3: roots[0]: one worker argument would be 140000 bytes, above the kernel's limit of 131072 for a single argument; shorten it"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(file, []byte(tc.yaml))
			var all Errors
			if !errors.As(err, &all) {
				t.Fatalf("error %v, want Errors", err)
			}
			if got := lines(dir, all); len(got) != 1 || got[0] != tc.want {
				t.Errorf("errors\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

// includeArgs are the --include arguments of n globs long+index.
func includeArgs(n int, long string) []string {
	var out []string
	for i := range n {
		out = append(out, "--include", fmt.Sprintf("%s%d", long, i))
	}
	return out
}

func TestArgLimit(t *testing.T) {
	if l := argLimit(); l < minArgMax-envReserve || l > maxArgMax-envReserve {
		t.Errorf("argLimit %d outside the kernel's bounds", l)
	}
	if got := argBytes([]string{"--root", "/w"}); got != 7+3+16 {
		t.Errorf("argBytes %d", got)
	}
}

func TestWarning(t *testing.T) {
	for _, tc := range []struct {
		roots int
		want  string
	}{
		{1, ""},
		{64, ""},
		{65, "65 roots, more than 64: each root is an idle worker process of about 20 MiB resident (5 MiB of it its own) plus 600 KiB in the supervisor, so these take about 1.3 GiB resident (0.4 GiB not shared)"},
		{400, "400 roots, more than 64: "},
	} {
		m := &Manifest{Roots: make([]Root, tc.roots)}
		if got := m.Warning(); (tc.want == "") != (got == "") || !strings.HasPrefix(got, tc.want) {
			t.Errorf("%d roots: %q, want %q", tc.roots, got, tc.want)
		}
	}
}
