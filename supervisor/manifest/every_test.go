package manifest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestParseReportsEvery: Parse lists every problem of a manifest, in order,
// each on its own line, and the one-line form counts the rest.
func TestParseReportsEvery(t *testing.T) {
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
		name, yaml string
		want       []string
	}{
		{"two unknown keys", "version: 1\nfoo: 2\nroots:\n  - name: a\n    colour: red\n", []string{
			"m.yaml:2: foo: unknown key", "m.yaml:5: colour: unknown key"}},
		{"every field of two roots", "version: 2\nroots:\n  - name: Bad\n    path: nowhere\n    include: ['']\n    tools: [rm]\n    limits: {max_speed: 1, max_files: -1}\n    cursor_key_env: A-B\n  - name: b\n    path: ws\n    include: ['lib/**']\n    tools: write\n", []string{
			"m.yaml:1: version: version 2 is not supported",
			"m.yaml:3: roots[0].name: \"Bad\" is not a valid root name",
			"m.yaml:4: roots[0].path: root folder \"nowhere\" does not exist",
			"m.yaml:5: roots[0].include: empty glob",
			"m.yaml:6: roots[0].tools: unknown tool \"rm\"",
			"m.yaml:7: roots[0].limits.max_speed: unknown limit",
			"m.yaml:7: roots[0].limits.max_files: \"-1\" is not a whole number",
			"m.yaml:8: roots[0].cursor_key_env: \"A-B\" is not an environment variable name",
			"m.yaml:11: roots[1].include: the mask grants write_text_file but no include pattern matches a file in the root itself",
		}},
		{"duplicates after other errors", "version: 1\nroots:\n  - {name: a, path: ws, include: ['**'], tools: read}\n  - {name: a, path: ws, include: ['**'], tools: [rm]}\n", []string{
			"m.yaml:4: roots[1].tools: unknown tool \"rm\"",
			"m.yaml:4: roots[1].name: duplicate root name \"a\" (first declared at line 3)",
		}},
		{"arguments over ARG_MAX", "version: 1\nroots:\n  - name: a\n    path: ws\n    include: " + huge + "\n    tools: read\n", []string{
			"m.yaml:3: roots[0]: the worker's command line would take ",
		}},
		{"one argument over MAX_ARG_STRLEN", "version: 1\nroots:\n  - name: a\n    path: ws\n    include: ['" + strings.Repeat("y", 140000) + "']\n    tools: read\n", []string{
			"m.yaml:3: roots[0]: one worker argument would be 140000 bytes, above the kernel's limit of 131072",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(file, []byte(tc.yaml))
			var all Errors
			if !errors.As(err, &all) {
				t.Fatalf("error %v, want Errors", err)
			}
			if len(all) != len(tc.want) {
				t.Fatalf("%d errors, want %d: %v", len(all), len(tc.want), lines(dir, all))
			}
			for i, e := range all {
				got := strings.TrimPrefix(e.Error(), dir+string(filepath.Separator))
				if !strings.HasPrefix(got, tc.want[i]) || strings.Contains(got, "\n") {
					t.Errorf("error %d\n got %q\nwant prefix %q", i, got, tc.want[i])
				}
			}
			one := err.Error()
			if len(all) > 1 && (strings.Contains(one, "\n") || !strings.HasSuffix(one, fmt.Sprintf("(and %d more; fsmcp-supervisor check lists them)", len(all)-1))) {
				t.Errorf("one-line form %q", one)
			}
		})
	}
}

func lines(dir string, all Errors) []string {
	var out []string
	for _, e := range all {
		out = append(out, strings.TrimPrefix(e.Error(), dir+string(filepath.Separator)))
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
