package manifest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fsmcp/fsmcp/internal/limits"
)

// TestParseErrors: Parse reports every problem of a manifest, in the order
// written, each on one line with the file, line, field as written and what
// is accepted; the one-line form counts the rest.
func TestParseErrors(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "ws"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("ws", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "m.yaml")
	const ok = "version: 1\nroots:\n  - name: a\n    path: ws\n    include: ['**']\n    tools: read\n"
	tests := []struct {
		name, yaml string
		want       []string
	}{
		{"unknown keys everywhere, with other errors", "version: 1\nfoo: 2\nroots:\n  - name: a\n    colour: red\n    limits: {max_speed: 1, max_files: x}\n", []string{
			"m.yaml:2: foo: unknown key; use version, protocol_versions or roots",
			"m.yaml:4: roots[0].path: missing; give the root's folder, relative to the manifest's folder or absolute",
			"m.yaml:4: roots[0].include: missing; list the globs the root serves, such as [\"**\"]",
			"m.yaml:4: roots[0].tools: missing; use read, write, all or a list of tool names",
			"m.yaml:5: roots[0].colour: unknown key; use name, path, include, exclude, default_exclude, tools, limits, cursor_key_env or call_timeout",
			"m.yaml:6: roots[0].limits.max_speed: unknown limit; use max_files, max_directories, max_depth, max_entries, max_scan_bytes, max_file_bytes, max_read_bytes, max_result_bytes, max_write_bytes or max_cursor_hash_bytes",
			"m.yaml:6: roots[0].limits.max_files: \"x\" is not a whole number; use 1 or more",
		}},
		{"every field of two roots", "version: 2\nroots:\n  - name: Bad\n    path: nowhere\n    include: ['']\n    tools: [rm]\n    limits: {max_files: -1}\n    cursor_key_env: A-B\n  - name: b\n    path: ws\n    include: ['lib/**']\n    tools: write\n", []string{
			"m.yaml:1: version: 2 is not supported; this supervisor reads version: 1",
			"m.yaml:3: roots[0].name: \"Bad\" is not a valid root name; use a name matching [a-z][a-z0-9-]{0,31}, such as reader",
			"m.yaml:4: roots[0].path: root folder \"nowhere\" does not exist (tried {dir}/nowhere); give the folder relative to the manifest's folder or absolute",
			"m.yaml:5: roots[0].include[0]: empty glob; give a pattern such as \"docs/**\", or remove it",
			"m.yaml:6: roots[0].tools[0]: unknown tool \"rm\"; use read, write, all or names from list_directory, search_files, search_text, read_text_file, write_text_file",
			"m.yaml:7: roots[0].limits.max_files: -1 is too small; use 1 or more",
			"m.yaml:8: roots[0].cursor_key_env: \"A-B\" is not an environment variable name; give the name of the environment variable holding the root's cursor key, such as FSMCP_READER_KEY",
			"m.yaml:11: roots[1].include: the mask grants write_text_file but no include pattern matches a file in the root itself (every write lands there); add \"**\" or a root-level pattern such as \"*.md\"",
		}},
		{"duplicate names after other errors", "version: 1\nroots:\n  - {name: a, path: ws, include: ['**'], tools: read}\n  - {name: a, path: ws, include: ['**'], tools: [rm]}\n", []string{
			"m.yaml:4: roots[1].tools[0]: unknown tool \"rm\"; use read, write, all or names from list_directory, search_files, search_text, read_text_file, write_text_file",
			"m.yaml:4: roots[1].name: duplicate root name \"a\" (first declared at line 3); give each root its own name",
		}},
		{"roots a mapping", "version: 1\nroots:\n  name: a\n", []string{
			"m.yaml:3: roots: must be a list of roots, each starting with \"- name:\", not a mapping",
		}},
		{"root a word", "version: 1\nroots:\n  - reader\n", []string{
			"m.yaml:3: roots[0]: must be a mapping with name, path, include and tools, not \"reader\"",
		}},
		{"missing version, no roots", "roots: []\n", []string{
			"m.yaml:1: version: missing; start the manifest with version: 1",
			"m.yaml:1: roots: no roots declared; add at least one",
		}},
		{"missing roots", "version: 1\n", []string{"m.yaml:1: roots: missing; add roots: with at least one root"}},
		{"version a word", "version: one\nroots: []\n", []string{
			"m.yaml:1: version: \"one\" is not supported; this supervisor reads version: 1",
			"m.yaml:2: roots: no roots declared; add at least one",
		}},
		{"duplicate key", "version: 1\nversion: 1\nroots: []\n", []string{
			"m.yaml:2: version: given twice (first at line 1); keep one",
			"m.yaml:3: roots: no roots declared; add at least one",
		}},
		{"globs escaping the root", strings.Replace(ok, "include: ['**']", "include: ['**']\n    exclude: ['../x', '/abs/**', 'a\\b', 'a//b']", 1), []string{
			"m.yaml:6: roots[0].exclude[0]: \"../x\": pattern must not contain . or .. segments; a glob is relative to the root folder, such as \"docs/**\" or \"*.md\"",
			"m.yaml:6: roots[0].exclude[1]: \"/abs/**\": pattern must be relative to the root; a glob is relative to the root folder, such as \"docs/**\" or \"*.md\"",
			"m.yaml:6: roots[0].exclude[2]: \"a\\\\b\": pattern must not contain a backslash or NUL; a glob is relative to the root folder, such as \"docs/**\" or \"*.md\"",
			"m.yaml:6: roots[0].exclude[3]: \"a//b\": pattern has an empty segment; a glob is relative to the root folder, such as \"docs/**\" or \"*.md\"",
		}},
		{"globs of the wrong type", strings.Replace(ok, "include: ['**']", "include: '**'\n    exclude: {a: 1}", 1), []string{
			"m.yaml:5: roots[0].include: must be a list of globs; write include: [\"**\"]",
			"m.yaml:6: roots[0].exclude: must be a list of globs, such as [\"docs/**\"], not a mapping",
		}},
		{"masks mixed with names", strings.Replace(ok, "tools: read", "tools: [read, write_text_file]", 1), []string{
			"m.yaml:6: roots[0].tools[0]: \"read\" is a mask, not a tool name; give read, write or all alone, or a list of names from list_directory, search_files, search_text, read_text_file, write_text_file",
		}},
		{"empty mask", strings.Replace(ok, "tools: read", "tools: []", 1), []string{"m.yaml:6: roots[0].tools: the tool mask names no tool"}},
		{"linked root", strings.Replace(ok, "path: ws", "path: link", 1), []string{
			"m.yaml:4: roots[0].path: \"link\" ({dir}/link) is a symbolic link; name the folder it points to, such as \"{dir}/ws\", as a worker refuses a linked root",
		}},
		{"limits", ok + "    limits:\n      max_scan_bytes: 100\n      max_result_bytes: 2000000\n      max_depth: '-1'\n      max_files: 9007199254740992\n      max_entries: 1.5\n      max_file_bytes: 0\n      max_write_bytes: [1]\n", []string{
			"m.yaml:8: roots[0].limits.max_scan_bytes: 100 is too small; use 16384 or more",
			"m.yaml:9: roots[0].limits.max_result_bytes: 2000000 is too large; use 48000 to 1048576",
			"m.yaml:10: roots[0].limits.max_depth: -1 is too small; use 0 or more",
			"m.yaml:11: roots[0].limits.max_files: 9007199254740992 is too large; use 1 to 9007199254740991",
			"m.yaml:12: roots[0].limits.max_entries: \"1.5\" is not a whole number; use 1 or more",
			"m.yaml:13: roots[0].limits.max_file_bytes: 0 is too small; use 1 or more",
			"m.yaml:14: roots[0].limits.max_write_bytes: must be a whole number; use 1 or more, not a list",
		}},
		{"limits a list", ok + "    limits: [max_files]\n", []string{
			"m.yaml:7: roots[0].limits: must be a mapping of limits to whole numbers, such as {max_read_bytes: 65536}, not a list",
		}},
		{"call timeouts", ok + "    call_timeout: 30\n  - {name: b, path: ws, include: ['**'], tools: read, call_timeout: 1ms}\n  - {name: c, path: ws, include: ['**'], tools: read, call_timeout: soon}\n", []string{
			"m.yaml:7: roots[0].call_timeout: 30 has no unit; give a duration from 100ms to 24h, such as 30s or 2m",
			"m.yaml:8: roots[1].call_timeout: \"1ms\" is out of range; give a duration from 100ms to 24h, such as 30s or 2m",
			"m.yaml:9: roots[2].call_timeout: \"soon\" is not a duration; give a duration from 100ms to 24h, such as 30s or 2m",
		}},
		{"default_exclude", ok + "    default_exclude: maybe\n", []string{"m.yaml:7: roots[0].default_exclude: \"maybe\" is not true or false"}},
		{"a tool twice", "version: 1\nroots:\n  - {name: a, path: ws, include: ['**'], tools: [search_text, read_text_file, search_text]}\n  - {name: b, path: ws, include: ['**'], tools: 'read_text_file, read_text_file'}\n", []string{
			"m.yaml:3: roots[0].tools[2]: search_text is listed twice; list each tool once",
			"m.yaml:4: roots[1].tools: \"read_text_file, read_text_file\" lists a tool twice; list each tool once",
		}},
		{"empty file", "", []string{"m.yaml: empty manifest; start it with version: 1"}},
		{"comments only", "# nothing yet\n", []string{"m.yaml: empty manifest; start it with version: 1"}},
		{"syntax", "version: 1\nroots: [\n", []string{"m.yaml:2: not valid YAML: did not find expected node content"}},
		{"two documents", ok + "---\nversion: 1\n", []string{"m.yaml:7: a second YAML document; a manifest is one document, so remove the --- line"}},
		{"a list", "- version: 1\n", []string{"m.yaml:1: the manifest must be a mapping of version: and roots:, not a list"}},
		{"protocol versions not a list", "version: 1\nprotocol_versions: 2026-07-28\nroots: []\n", []string{
			"m.yaml:2: protocol_versions: must be a list of protocol revisions, such as [\"2026-07-28\", \"2025-11-25\"]; leave it out to serve hosts of both eras",
			"m.yaml:3: roots: no roots declared; add at least one",
		}},
		{"protocol version unknown or twice", "version: 1\nprotocol_versions:\n  - 2026-07-28\n  - 2024-11-05\n" + strings.TrimPrefix(ok, "version: 1\n") + "protocol_versions: [2025-06-18, 2025-06-18]\n", []string{
			"m.yaml:4: protocol_versions[1]: \"2024-11-05\" is not a protocol revision fsmcp serves; use 2026-07-28, 2025-11-25, 2025-06-18, 2025-03-26",
			"m.yaml:10: protocol_versions: given twice (first at line 2); keep one",
		}},
		{"protocol versions twice in the list", "version: 1\nprotocol_versions: [2025-06-18, '2025-06-18']\n" + strings.TrimPrefix(ok, "version: 1\n"), []string{
			"m.yaml:2: protocol_versions[1]: \"2025-06-18\" is listed twice",
		}},
		{"protocol versions empty", "version: 1\nprotocol_versions: []\n" + strings.TrimPrefix(ok, "version: 1\n"), []string{
			"m.yaml:2: protocol_versions: no protocol revision listed; list some of 2026-07-28, 2025-11-25, 2025-06-18, 2025-03-26",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(file, []byte(tc.yaml))
			var all Errors
			if !errors.As(err, &all) {
				t.Fatalf("error %v, want Errors", err)
			}
			got := lines(dir, all)
			want := slices.Clone(tc.want)
			for i := range want {
				want[i] = strings.ReplaceAll(want[i], "{dir}", dir)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("errors\n got %q\nwant %q", got, want)
			}
			one := err.Error()
			if strings.Contains(one, "\n") || (len(all) > 1 && !strings.HasSuffix(one, fmt.Sprintf("(and %d more; fsmcp-supervisor check lists them)", len(all)-1))) {
				t.Errorf("one-line form %q", one)
			}
		})
	}
}

// lines are the errors' texts with the test's folder taken off the file.
func lines(dir string, all Errors) []string {
	var out []string
	for _, e := range all {
		out = append(out, strings.TrimPrefix(e.Error(), dir+string(filepath.Separator)))
	}
	return out
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
	if got := []time.Duration{m.Roots[0].CallTimeout, m.Roots[1].CallTimeout}; got[0] != 150*time.Second || got[1] != limits.DefaultCallTimeout {
		t.Errorf("call timeouts %v, want [2m30s 30s]", got)
	}
	if !slices.Equal(m.Versions, []string{"2026-07-28", "2025-06-18"}) {
		t.Errorf("protocol versions %q, want 2026-07-28 and 2025-06-18, newest first", m.Versions)
	}
	want := limits.Default
	want.MaxReadBytes, want.MaxDepth = 16384, 0
	if got := m.Roots[0].Values(); got != want {
		t.Errorf("values %+v, want %+v", got, want)
	}
}

// TestQuotedAlike: a value written in quotes means what it means without
// them, for booleans, numbers and the version alike; yes/no and on/off are
// YAML's older booleans.
func TestQuotedAlike(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "ws"), 0o755); err != nil {
		t.Fatal(err)
	}
	const plain = "version: 1\nroots:\n  - {name: a, path: ws, include: ['**'], tools: read, default_exclude: false, limits: {max_files: 10}}\n"
	base, err := Parse(filepath.Join(dir, "m.yaml"), []byte(plain))
	if err != nil {
		t.Fatal(err)
	}
	for _, variant := range []string{
		strings.NewReplacer("version: 1", "version: '1'", "default_exclude: false", "default_exclude: 'false'", "max_files: 10", "max_files: \"10\"").Replace(plain),
		strings.Replace(plain, "default_exclude: false", "default_exclude: \"False\"", 1),
		strings.Replace(plain, "default_exclude: false", "default_exclude: no", 1),
		strings.Replace(plain, "default_exclude: false", "default_exclude: 'off'", 1),
	} {
		m, err := Parse(filepath.Join(dir, "m.yaml"), []byte(variant))
		if err != nil {
			t.Errorf("%q: %v", variant, err)
			continue
		}
		if got, want := m.Roots[0].Args(), base.Roots[0].Args(); !slices.Equal(got, want) {
			t.Errorf("%q: args %q, want %q", variant, got, want)
		}
	}
}

// TestAnchors: a root may take fields from another by a YAML anchor and
// merge key, its own keys winning; a merged unknown key is reported.
func TestAnchors(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "ws"), 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "m.yaml")
	m, err := Parse(file, []byte("version: 1\nroots:\n  - &base {name: a, path: ws, include: ['**'], tools: read}\n  - <<: *base\n    name: b\n    include: &docs ['docs/**']\n  - {<<: *base, name: c, include: *docs}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Roots) != 3 || m.Roots[1].Name != "b" || m.Roots[1].Path != filepath.Join(dir, "ws") || !slices.Equal(m.Roots[2].Include, []string{"docs/**"}) {
		t.Errorf("roots %+v", m.Roots)
	}
	_, err = Parse(file, []byte("version: 1\nx: &extra {colour: red}\nroots:\n  - <<: *extra\n    name: a\n    path: ws\n    include: ['**']\n    tools: read\n"))
	var all Errors
	if !errors.As(err, &all) || !slices.Equal(lines(dir, all), []string{
		"m.yaml:2: x: unknown key; use version, protocol_versions or roots",
		"m.yaml:2: roots[0].colour: unknown key; use name, path, include, exclude, default_exclude, tools, limits, cursor_key_env or call_timeout",
	}) {
		t.Errorf("merged unknown key: %v", err)
	}
}

// TestCheckEnv: a root's cursor-key variable must be set and hold a key;
// the message names the variable, the format and how to make one, never
// the value.
func TestCheckEnv(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "ws"), 0o755); err != nil {
		t.Fatal(err)
	}
	m, err := Parse(filepath.Join(dir, "m.yaml"), []byte("version: 1\nroots:\n  - name: a\n    path: ws\n    include: ['**']\n    tools: read\n    cursor_key_env: K\n"))
	if err != nil {
		t.Fatal(err)
	}
	const how = "; a cursor key is unpadded base64url of 32 bytes or more, made with: head -c 32 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\\n'"
	good := strings.Repeat("A", 43)
	tests := []struct {
		name, value string
		set         bool
		want        string
	}{
		{"unset", "", false, "m.yaml:7: roots[0].cursor_key_env: environment variable K is not set" + how},
		{"empty", "", true, "m.yaml:7: roots[0].cursor_key_env: environment variable K is not a cursor key: its value is empty" + how},
		{"padded", good + "=", true, "m.yaml:7: roots[0].cursor_key_env: environment variable K is not a cursor key: its value is not canonical unpadded base64url" + how},
		{"short", "c2hvcnQ", true, "m.yaml:7: roots[0].cursor_key_env: environment variable K is not a cursor key: its value decodes to 5 bytes, fewer than 32" + how},
		{"good", good, true, ""},
	}
	for _, tc := range tests {
		err := m.CheckEnv(func(string) (string, bool) { return tc.value, tc.set })
		got := ""
		if err != nil {
			got = strings.TrimPrefix(err.Error(), dir+string(filepath.Separator))
		}
		if got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
