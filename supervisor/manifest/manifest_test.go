package manifest

import (
	"github.com/fsmcp/fsmcp/internal/limits"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseErrors(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "ws"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("ws", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "m.yaml")
	tests := []struct {
		name, yaml, want string
	}{
		{"unknown top key", "version: 1\nfoo: 2\nroots: []\n", "m.yaml:2: foo: unknown key"},
		{"unknown root key", "version: 1\nroots:\n  - name: a\n    path: ws\n    include: ['**']\n    tools: read\n    colour: red\n", "m.yaml:7: colour: unknown key"},
		{"wrong version", "version: 2\nroots: []\n", "m.yaml:1: version: version 2 is not supported"},
		{"missing version", "roots: []\n", "m.yaml:1: version: missing"},
		{"no roots", "version: 1\nroots: []\n", "m.yaml:2: roots: no roots declared"},
		{"bad name", "version: 1\nroots:\n  - name: Reader\n    path: ws\n    include: ['**']\n    tools: read\n", "m.yaml:3: roots[0].name: \"Reader\" is not a valid root name"},
		{"duplicate name", "version: 1\nroots:\n  - name: a\n    path: ws\n    include: ['**']\n    tools: read\n  - name: a\n    path: ws\n    include: ['**']\n    tools: read\n", "m.yaml:7: roots[1].name: duplicate root name \"a\" (first declared at line 3)"},
		{"missing folder", "version: 1\nroots:\n  - name: a\n    path: nope\n    include: ['**']\n    tools: read\n", "m.yaml:4: roots[0].path: root folder \"nope\" does not exist"},
		{"bad mask", "version: 1\nroots:\n  - name: a\n    path: ws\n    include: ['**']\n    tools: [read_text_file, rm]\n", "m.yaml:6: roots[0].tools: unknown tool \"rm\""},
		{"empty mask", "version: 1\nroots:\n  - name: a\n    path: ws\n    include: ['**']\n    tools: []\n", "m.yaml:6: roots[0].tools: the tool mask names no tool"},
		{"missing mask", "version: 1\nroots:\n  - name: a\n    path: ws\n    include: ['**']\n", "m.yaml:3: roots[0].tools: missing"},
		{"write cannot reach top", "version: 1\nroots:\n  - name: a\n    path: ws\n    include: ['lib/**', 'docs/*.md']\n    tools: all\n", "m.yaml:5: roots[0].include: the mask grants write_text_file but no include pattern matches a file in the root itself"},
		{"unknown limit", "version: 1\nroots:\n  - name: a\n    path: ws\n    include: ['**']\n    tools: read\n    limits:\n      max_read_bytes: 10\n      max_speed: 3\n", "m.yaml:9: roots[0].limits.max_speed: unknown limit"},
		{"bad limit value", "version: 1\nroots:\n  - name: a\n    path: ws\n    include: ['**']\n    tools: read\n    limits:\n      max_read_bytes: lots\n", "m.yaml:8: roots[0].limits.max_read_bytes: \"lots\" is not a whole number"},
		{"limit below the worker's range", "version: 1\nroots:\n  - name: a\n    path: ws\n    include: ['**']\n    tools: read\n    limits:\n      max_scan_bytes: 100\n", "m.yaml:8: roots[0].limits.max_scan_bytes: --max-scan-bytes must be at least 16384, got 100"},
		{"limit above the worker's range", "version: 1\nroots:\n  - name: a\n    path: ws\n    include: ['**']\n    tools: read\n    limits:\n      max_result_bytes: 2000000\n", "m.yaml:8: roots[0].limits.max_result_bytes: --max-result-bytes must be between 48000 and 1048576, got 2000000"},
		{"negative limit", "version: 1\nroots:\n  - name: a\n    path: ws\n    include: ['**']\n    tools: read\n    limits:\n      max_depth: -1\n", "m.yaml:8: roots[0].limits.max_depth: \"-1\" is not a whole number"},
		{"linked root", "version: 1\nroots:\n  - name: a\n    path: link\n    include: ['**']\n    tools: read\n", "m.yaml:4: roots[0].path: \"link\" is a symbolic link"},
		{"missing include", "version: 1\nroots:\n  - name: a\n    path: ws\n    tools: read\n", "m.yaml:3: roots[0].include: missing"},
		{"duplicate key", "version: 1\nversion: 1\nroots: []\n", "m.yaml:2: mapping key \"version\" already defined at line 1"},
		{"bad env name", "version: 1\nroots:\n  - name: a\n    path: ws\n    include: ['**']\n    tools: read\n    cursor_key_env: 'A-B'\n", "m.yaml:7: roots[0].cursor_key_env: \"A-B\" is not an environment variable name"},
		{"bad call timeout", "version: 1\nroots:\n  - name: a\n    path: ws\n    include: ['**']\n    tools: read\n    call_timeout: 30\n", "m.yaml:7: roots[0].call_timeout: \"30\" is not a duration from 100ms to 24h"},
		{"call timeout too short", "version: 1\nroots:\n  - name: a\n    path: ws\n    include: ['**']\n    tools: read\n    call_timeout: 1ms\n", "m.yaml:7: roots[0].call_timeout: \"1ms\" is not a duration from 100ms to 24h"},
		{"protocol versions not a list", "version: 1\nprotocol_versions: 2026-07-28\nroots: []\n", "m.yaml:2: protocol_versions: must be a list of protocol revisions"},
		{"protocol version unknown", "version: 1\nprotocol_versions: [\"2026-07-28\", \"2024-11-05\"]\nroots: []\n", "m.yaml:2: protocol_versions: \"2024-11-05\" is not a protocol revision fsmcp serves; use 2026-07-28, 2025-11-25, 2025-06-18, 2025-03-26"},
		{"protocol versions empty", "version: 1\nprotocol_versions: []\nroots: []\n", "m.yaml:2: protocol_versions: no protocol revision listed"},
		{"empty file", "", "m.yaml: empty manifest"},
		{"syntax", "version: 1\nroots: [\n", "m.yaml:2: did not find expected node content"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(file, []byte(tc.yaml))
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			got := strings.TrimPrefix(err.Error(), dir+string(filepath.Separator))
			if !strings.HasPrefix(got, tc.want) {
				t.Fatalf("error\n got %q\nwant prefix %q", got, tc.want)
			}
			if strings.Contains(got, "\n") {
				t.Fatalf("error spans lines: %q", got)
			}
		})
	}
}

func TestParseRoots(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"ws", "out"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	m, err := Parse(filepath.Join(dir, "m.yaml"), []byte(`version: 1
protocol_versions: [2025-06-18, "2026-07-28"]
roots:
  - name: reader
    path: ws
    include: ["lib/**", "docs/**"]
    exclude: ["**/secrets/**"]
    default_exclude: false
    tools: read
    limits: {max_read_bytes: 16384, max_depth: 0}
    cursor_key_env: FSMCP_READER_KEY
    call_timeout: 2m30s
  - name: writer
    path: out
    include: ["*.md"]
    tools: [write_text_file]
`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		root int
		want []string
	}{
		{0, []string{"--root", filepath.Join(dir, "ws"), "--name", "reader", "--tools", "list_directory,search_files,search_text,read_text_file",
			"--include", "lib/**", "--include", "docs/**", "--exclude", "**/secrets/**", "--no-default-exclude",
			"--max-depth", "0", "--max-read-bytes", "16384", "--cursor-key-env", "FSMCP_READER_KEY"}},
		{1, []string{"--root", filepath.Join(dir, "out"), "--name", "writer", "--tools", "write_text_file", "--include", "*.md"}},
	}
	for _, tc := range tests {
		if got := m.Roots[tc.root].Args(); !slices.Equal(got, tc.want) {
			t.Errorf("root %d args\n got %q\nwant %q", tc.root, got, tc.want)
		}
	}
	if !slices.Equal(m.Versions, []string{"2026-07-28", "2025-06-18"}) {
		t.Errorf("protocol versions %q, want 2026-07-28 and 2025-06-18, newest first", m.Versions)
	}
	if got := []time.Duration{m.Roots[0].CallTimeout, m.Roots[1].CallTimeout}; got[0] != 150*time.Second || got[1] != limits.DefaultCallTimeout {
		t.Errorf("call timeouts %v, want [2m30s 30s]", got)
	}
	if err := m.CheckEnv(func(string) (string, bool) { return "", false }); err == nil || !strings.Contains(err.Error(), "m.yaml:11: roots[0].cursor_key_env: environment variable FSMCP_READER_KEY is not set") {
		t.Errorf("CheckEnv: %v", err)
	}
}

func TestReachesTop(t *testing.T) {
	tests := []struct {
		globs []string
		want  bool
	}{
		{[]string{"**"}, true},
		{[]string{"*.md"}, true},
		{[]string{"**/*.md"}, true},
		{[]string{"README.md"}, true},
		{[]string{"lib/**"}, false},
		{[]string{"lib/**", "docs/*.md"}, false},
		{[]string{"lib/**", "*.txt"}, true},
	}
	for _, tc := range tests {
		if got := reachesTop(tc.globs); got != tc.want {
			t.Errorf("reachesTop(%q) = %v, want %v", tc.globs, got, tc.want)
		}
	}
}
