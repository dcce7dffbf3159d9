//go:build linux

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// mistakeEnv is the environment the manifest-mistake cases run in: a home
// folder for the ~ and $HOME cases, and a cursor key that is set but too
// short.
var mistakeEnv = []string{"HOME=/home/e2e", "FSMCP_E2E_SHORT_KEY=c2hvcnQ"}

// okRoot is a root entry that is right in every field.
const okRoot = "version: 1\nroots:\n  - name: a\n    path: ws\n    include: ['**']\n    tools: read\n"

// keyHow is how every cursor-key message ends.
const keyHow = "; a cursor key is unpadded base64url of 32 bytes or more, made with: head -c 32 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\\n'"

// globHow is how every glob message ends.
const globHow = `; a glob is relative to the root folder, such as "docs/**" or "*.md"`

// mistakes are broken manifests and what is said about each: the file
// named (m.yaml unless file is set) and every error line, in order.
// {dir} stands for the folder the manifest is in.
var mistakes = []struct {
	name     string
	yaml     string
	file     string // the file to check: "" is m.yaml holding yaml
	want     []string
	checkOK  bool // check passes and only startup refuses (a variable the host sets)
	asNobody bool // run as uid 65534 (the file is root's, mode 0600)
}{
	// Structure and keys.
	{name: "unknown keys, all reported with the rest", yaml: "version: 1\ncolor: blue\nroots:\n  - name: a\n    colour: red\n    path: ws\n    include: ['**']\n    tools: read\n    limits: {max_speed: 1}\n", want: []string{
		"m.yaml:2: color: unknown key; use version, protocol_versions or roots",
		"m.yaml:5: roots[0].colour: unknown key; use name, path, include, exclude, default_exclude, tools, limits, cursor_key_env or call_timeout",
		"m.yaml:9: roots[0].limits.max_speed: unknown limit; use max_files, max_directories, max_depth, max_entries, max_scan_bytes, max_file_bytes, max_read_bytes, max_result_bytes, max_write_bytes or max_cursor_hash_bytes",
	}},
	{name: "a key twice", yaml: strings.Replace(okRoot, "    tools: read\n", "    tools: read\n    tools: all\n", 1), want: []string{
		"m.yaml:7: roots[0].tools: given twice (first at line 6); keep one",
	}},
	{name: "roots a mapping", yaml: "version: 1\nroots:\n  name: a\n  path: ws\n", want: []string{
		`m.yaml:3: roots: must be a list of roots, each starting with "- name:", not a mapping`,
	}},
	{name: "roots missing", yaml: "version: 1\n", want: []string{"m.yaml:1: roots: missing; add roots: with at least one root"}},
	{name: "roots empty", yaml: "version: 1\nroots: []\n", want: []string{"m.yaml:2: roots: no roots declared; add at least one"}},
	{name: "a root that is a word", yaml: "version: 1\nroots:\n  - reader\n", want: []string{
		`m.yaml:3: roots[0]: must be a mapping with name, path, include and tools, not "reader"`,
	}},
	{name: "version missing", yaml: strings.TrimPrefix(okRoot, "version: 1\n"), want: []string{"m.yaml:1: version: missing; start the manifest with version: 1"}},
	{name: "version 2", yaml: strings.Replace(okRoot, "version: 1", "version: 2", 1), want: []string{"m.yaml:1: version: 2 is not supported; this supervisor reads version: 1"}},
	{name: "version a list", yaml: strings.Replace(okRoot, "version: 1", "version: [1]", 1), want: []string{"m.yaml:1: version: must be version: 1, not a list"}},
	{name: "not YAML", yaml: "version: 1\nroots: [\n", want: []string{"m.yaml:2: not valid YAML: did not find expected node content"}},
	{name: "a tab on the first line", yaml: "\tversion: 1\n", want: []string{"m.yaml:1: not valid YAML: found character that cannot start any token"}},
	{name: "an alias of no anchor", yaml: okRoot + "  - {name: b, path: ws, include: *globs, tools: read}\n", want: []string{
		"m.yaml:7: *globs names no anchor; mark the value it stands for with &globs before this line",
	}},
	{name: "empty", yaml: "", want: []string{"m.yaml: empty manifest; start it with version: 1"}},
	{name: "a list at the top", yaml: "- version: 1\n", want: []string{"m.yaml:1: the manifest must be a mapping of version: and roots:, not a list"}},
	{name: "two documents", yaml: okRoot + "---\nversion: 1\n", want: []string{"m.yaml:7: a second YAML document; a manifest is one document, so remove the --- line"}},

	// Names.
	{name: "name missing", yaml: strings.Replace(okRoot, "  - name: a\n    path: ws\n", "  - path: ws\n", 1), want: []string{
		"m.yaml:3: roots[0].name: missing; give the root a name matching [a-z][a-z0-9-]{0,31}",
	}},
	{name: "name breaking the pattern", yaml: strings.Replace(okRoot, "name: a", "name: Reader_1", 1), want: []string{
		`m.yaml:3: roots[0].name: "Reader_1" is not a valid root name; use a name matching [a-z][a-z0-9-]{0,31}, such as reader`,
	}},
	{name: "name too long", yaml: strings.Replace(okRoot, "name: a", "name: a"+strings.Repeat("b", 32), 1), want: []string{
		`m.yaml:3: roots[0].name: "a` + strings.Repeat("b", 32) + `" is not a valid root name; use a name matching [a-z][a-z0-9-]{0,31}, such as reader`,
	}},
	{name: "name a list", yaml: strings.Replace(okRoot, "name: a", "name: [a]", 1), want: []string{
		"m.yaml:3: roots[0].name: must be a name matching [a-z][a-z0-9-]{0,31}, such as reader, not a list",
	}},
	{name: "duplicate names", yaml: okRoot + "  - {name: a, path: ws, include: ['**'], tools: read}\n", want: []string{
		`m.yaml:7: roots[1].name: duplicate root name "a" (first declared at line 3); give each root its own name`,
	}},

	// Paths.
	{name: "path missing", yaml: strings.Replace(okRoot, "    path: ws\n", "", 1), want: []string{
		"m.yaml:3: roots[0].path: missing; give the root's folder, relative to the manifest's folder or absolute",
	}},
	{name: "path with ~", yaml: strings.Replace(okRoot, "path: ws", "path: ~/ws", 1), want: []string{
		`m.yaml:4: roots[0].path: root folder "~/ws" does not exist (tried {dir}/~/ws); ~ is not expanded; give the folder relative to the manifest's folder or absolute, such as "/home/e2e/ws"`,
	}},
	{name: "path with $HOME", yaml: strings.Replace(okRoot, "path: ws", "path: $HOME/ws", 1), want: []string{
		`m.yaml:4: roots[0].path: root folder "$HOME/ws" does not exist (tried {dir}/$HOME/ws); environment variables are not expanded; give the folder relative to the manifest's folder or absolute, such as "/home/e2e/ws"`,
	}},
	{name: "relative path missing", yaml: strings.Replace(okRoot, "path: ws", "path: ../elsewhere", 1), want: []string{
		`m.yaml:4: roots[0].path: root folder "../elsewhere" does not exist (tried {parent}/elsewhere); give the folder relative to the manifest's folder or absolute`,
	}},
	{name: "absolute path missing", yaml: strings.Replace(okRoot, "path: ws", "path: /nonexistent/ws", 1), want: []string{
		`m.yaml:4: roots[0].path: root folder "/nonexistent/ws" does not exist (tried /nonexistent/ws); give the folder relative to the manifest's folder or absolute`,
	}},
	{name: "path a file", yaml: strings.Replace(okRoot, "path: ws", "path: notes.txt", 1), want: []string{
		`m.yaml:4: roots[0].path: "notes.txt" ({dir}/notes.txt) is not a folder; give the root's folder`,
	}},
	{name: "path a symbolic link", yaml: strings.Replace(okRoot, "path: ws", "path: link", 1), want: []string{
		`m.yaml:4: roots[0].path: "link" ({dir}/link) is a symbolic link; name the folder it points to, such as "{dir}/ws", as a worker refuses a linked root`,
	}},
	{name: "path a mapping", yaml: strings.Replace(okRoot, "path: ws", "path: {dir: ws}", 1), want: []string{
		"m.yaml:4: roots[0].path: must be the root's folder, relative to the manifest's folder or absolute, not a mapping",
	}},

	// Globs.
	{name: "exclude reaching outside", yaml: strings.Replace(okRoot, "    tools", "    exclude: ['../x']\n    tools", 1), want: []string{
		`m.yaml:6: roots[0].exclude[0]: "../x": pattern must not contain . or .. segments` + globHow,
	}},
	{name: "exclude absolute", yaml: strings.Replace(okRoot, "    tools", "    exclude: ['/abs/**']\n    tools", 1), want: []string{
		`m.yaml:6: roots[0].exclude[0]: "/abs/**": pattern must be relative to the root` + globHow,
	}},
	{name: "include with an empty segment and an empty glob", yaml: strings.Replace(okRoot, "['**']", "['docs//*.md', '']", 1), want: []string{
		`m.yaml:5: roots[0].include[0]: "docs//*.md": pattern has an empty segment` + globHow,
		`m.yaml:5: roots[0].include[1]: empty glob; give a pattern such as "docs/**", or remove it`,
	}},
	{name: "include one glob, not a list", yaml: strings.Replace(okRoot, "['**']", "'**'", 1), want: []string{
		`m.yaml:5: roots[0].include: must be a list of globs; write include: ["**"]`,
	}},
	{name: "include missing", yaml: strings.Replace(okRoot, "    include: ['**']\n", "", 1), want: []string{
		`m.yaml:3: roots[0].include: missing; list the globs the root serves, such as ["**"]`,
	}},
	{name: "include empty", yaml: strings.Replace(okRoot, "['**']", "[]", 1), want: []string{
		`m.yaml:5: roots[0].include: is empty; list the globs the root serves, such as ["**"]`,
	}},
	{name: "write mask whose include cannot reach the root", yaml: strings.NewReplacer("['**']", "['docs/**']", "tools: read", "tools: write").Replace(okRoot), want: []string{
		`m.yaml:5: roots[0].include: the mask grants write_text_file but no include pattern matches a file in the root itself (every write lands there); add "**" or a root-level pattern such as "*.md"`,
	}},

	// Tool masks.
	{name: "masks mixed with tool names", yaml: strings.Replace(okRoot, "tools: read", "tools: [read, write_text_file]", 1), want: []string{
		`m.yaml:6: roots[0].tools[0]: "read" is a mask, not a tool name; give read, write or all alone, or a list of names from list_directory, search_files, search_text, read_text_file, write_text_file`,
	}},
	{name: "unknown tool", yaml: strings.Replace(okRoot, "tools: read", "tools: [read_text_file, delete_file]", 1), want: []string{
		`m.yaml:6: roots[0].tools[1]: unknown tool "delete_file"; use read, write, all or names from list_directory, search_files, search_text, read_text_file, write_text_file`,
	}},
	{name: "tools a mapping", yaml: strings.Replace(okRoot, "tools: read", "tools: {read: true}", 1), want: []string{
		"m.yaml:6: roots[0].tools: must be read, write, all or a list of tool names, not a mapping",
	}},
	{name: "tools missing", yaml: strings.Replace(okRoot, "    tools: read\n", "", 1), want: []string{
		"m.yaml:3: roots[0].tools: missing; use read, write, all or a list of tool names",
	}},

	// Limits.
	{name: "limit negative", yaml: okRoot + "    limits: {max_files: -1}\n", want: []string{"m.yaml:7: roots[0].limits.max_files: -1 is too small; use 1 or more"}},
	{name: "limit zero", yaml: okRoot + "    limits: {max_file_bytes: 0}\n", want: []string{"m.yaml:7: roots[0].limits.max_file_bytes: 0 is too small; use 1 or more"}},
	{name: "limit too large", yaml: okRoot + "    limits: {max_read_bytes: 2000000}\n", want: []string{"m.yaml:7: roots[0].limits.max_read_bytes: 2000000 is too large; use 4 to 1048576"}},
	{name: "limit past 2^53-1", yaml: okRoot + "    limits: {max_entries: 99999999999999999999}\n", want: []string{"m.yaml:7: roots[0].limits.max_entries: 99999999999999999999 is too large; use 1 to 9007199254740991"}},
	{name: "limit not a number", yaml: okRoot + "    limits: {max_depth: deep}\n", want: []string{`m.yaml:7: roots[0].limits.max_depth: "deep" is not a whole number; use 0 or more`}},
	{name: "limit a fraction", yaml: okRoot + "    limits: {max_scan_bytes: 1.5e6}\n", want: []string{`m.yaml:7: roots[0].limits.max_scan_bytes: "1.5e6" is not a whole number; use 16384 or more`}},
	{name: "limit quoted and out of range", yaml: okRoot + "    limits: {max_result_bytes: '100'}\n", want: []string{"m.yaml:7: roots[0].limits.max_result_bytes: 100 is too small; use 48000 to 1048576"}},
	{name: "limits a list", yaml: okRoot + "    limits: [max_files]\n", want: []string{
		"m.yaml:7: roots[0].limits: must be a mapping of limits to whole numbers, such as {max_read_bytes: 65536}, not a list",
	}},

	// Booleans, keys and timeouts.
	{name: "default_exclude not a boolean", yaml: okRoot + "    default_exclude: sometimes\n", want: []string{`m.yaml:7: roots[0].default_exclude: "sometimes" is not true or false`}},
	{name: "cursor_key_env not a name", yaml: okRoot + "    cursor_key_env: MY-KEY\n", want: []string{
		`m.yaml:7: roots[0].cursor_key_env: "MY-KEY" is not an environment variable name; give the name of the environment variable holding the root's cursor key, such as FSMCP_READER_KEY`,
	}},
	{name: "cursor key malformed", yaml: okRoot + "    cursor_key_env: FSMCP_E2E_SHORT_KEY\n", want: []string{
		"m.yaml:7: roots[0].cursor_key_env: environment variable FSMCP_E2E_SHORT_KEY is not a cursor key: its value decodes to 5 bytes, fewer than 32" + keyHow,
	}},
	{name: "cursor key unset", yaml: okRoot + "    cursor_key_env: FSMCP_E2E_UNSET_KEY\n", checkOK: true, want: []string{
		"m.yaml:7: roots[0].cursor_key_env: environment variable FSMCP_E2E_UNSET_KEY is not set" + keyHow,
	}},
	{name: "call_timeout without a unit", yaml: okRoot + "    call_timeout: 30\n", want: []string{"m.yaml:7: roots[0].call_timeout: 30 has no unit; give a duration from 100ms to 24h, such as 30s or 2m"}},
	{name: "call_timeout malformed", yaml: okRoot + "    call_timeout: half a minute\n", want: []string{`m.yaml:7: roots[0].call_timeout: "half a minute" is not a duration; give a duration from 100ms to 24h, such as 30s or 2m`}},
	{name: "call_timeout out of range", yaml: okRoot + "    call_timeout: 2d\n", want: []string{`m.yaml:7: roots[0].call_timeout: "2d" is not a duration; give a duration from 100ms to 24h, such as 30s or 2m`}},
	{name: "call_timeout too long", yaml: okRoot + "    call_timeout: 25h\n", want: []string{`m.yaml:7: roots[0].call_timeout: "25h" is out of range; give a duration from 100ms to 24h, such as 30s or 2m`}},

	// The file itself.
	{name: "huge file", file: "huge.yaml", want: []string{"huge.yaml: is larger than 1048576 bytes (1 MiB), the most a manifest may be; is this the manifest?"}},
	{name: "/dev/zero", file: "/dev/zero", want: []string{"/dev/zero: is a character device, not a manifest file; give the path of a YAML file"}},
	{name: "a FIFO with no writer", file: "fifo.yaml", want: []string{"fifo.yaml: is a FIFO, not a manifest file; give the path of a YAML file"}},
	{name: "a folder", file: "ws", want: []string{"ws: is a folder, not a manifest file; give the path of a YAML file"}},
	{name: "missing", file: "absent.yaml", want: []string{"absent.yaml: cannot read the manifest: no such file or directory"}},
	{name: "unreadable", yaml: okRoot, asNobody: true, want: []string{"m.yaml: cannot read the manifest: permission denied"}},
}

// TestManifestMistakes: for every kind of broken manifest, check and
// startup (and tools, which starts roots) say the same thing: FILE:LINE,
// the field as the manifest spells it, and what is accepted, exiting 64
// with nothing on stdout and nothing started. check lists every error;
// startup prints the first and counts the rest.
func TestManifestMistakes(t *testing.T) {
	for _, tc := range mistakes {
		t.Run(tc.name, func(t *testing.T) {
			dir := mistakeDir(t, tc.asNobody)
			file := tc.file
			if file == "" {
				file = "m.yaml"
				writeFile(t, filepath.Join(dir, file), tc.yaml)
			}
			var want []string
			for _, w := range tc.want {
				want = append(want, strings.NewReplacer("{dir}", dir, "{parent}", filepath.Dir(dir)).Replace(w))
			}
			var cred *syscall.Credential
			if tc.asNobody {
				needRoot(t)
				if err := os.Chmod(filepath.Join(dir, file), 0o600); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(filepath.Dir(supervisorBin), 0o755); err != nil {
					t.Fatal(err)
				}
				cred = &syscall.Credential{Uid: nobody, Gid: nobody}
			}
			run := func(args ...string) (int, string, string) {
				return runIn(t, dir, cred, supervisorBin, args...)
			}

			code, out, errOut := run("check", file)
			if tc.checkOK {
				if code != 0 || out != "" || errOut != "" {
					t.Errorf("check: exit %d, stdout %q, stderr %q; want 0 and silence", code, out, errOut)
				}
			} else if wantAll := strings.Join(want, "\n") + "\n"; code != 64 || out != "" || errOut != wantAll {
				t.Errorf("check: exit %d, stdout %q\n got %q\nwant %q", code, out, errOut, wantAll)
			}

			one := "fsmcp-supervisor: " + want[0]
			if len(want) > 1 {
				one += fmt.Sprintf(" (and %d more; fsmcp-supervisor check lists them)", len(want)-1)
			}
			for _, args := range [][]string{
				{"--manifest", file, "--worker", workerBin},
				{"tools", "--manifest", file, "--worker", workerBin},
			} {
				code, out, errOut := run(args...)
				if code != 64 || out != "" || errOut != one+"\n" {
					t.Errorf("%s: exit %d, stdout %q\n got %q\nwant %q", strings.Join(args, " "), code, out, errOut, one+"\n")
				}
			}
		})
	}
}

// mistakeDir is the folder a case runs in: a root folder ws, a file, a
// link to ws, a FIFO no one writes and a manifest of more than 1 MiB.
// For a case run as another user, the folder is one that user can enter.
func mistakeDir(t *testing.T, reachable bool) string {
	t.Helper()
	dir := t.TempDir()
	if reachable {
		needRoot(t)
		dir = reachableDir(t, 0, 0, 0o755)
	}
	writeFile(t, filepath.Join(dir, "ws", "a.md"), "a\n")
	writeFile(t, filepath.Join(dir, "notes.txt"), "notes\n")
	if err := os.Symlink("ws", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.yaml"), 0o644); err != nil {
		t.Fatalf("mkfifo: %v", err)
	}
	writeFile(t, filepath.Join(dir, "huge.yaml"), okRoot+"# "+strings.Repeat("x", 1<<20)+"\n")
	return dir
}

// runIn runs bin with args in dir, in mistakeEnv, as cred's user when it
// is set, and returns its exit code, stdout and stderr. Its stdin is
// empty, so a supervisor that got as far as serving would stop.
func runIn(t *testing.T, dir string, cred *syscall.Credential, bin string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir, cmd.Env = dir, mistakeEnv
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	var stdout, stderr syncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); ctx.Err() != nil {
		t.Fatalf("%s %v did not finish in 20s: %v", filepath.Base(bin), args, err)
	}
	return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
}

// TestManifestQuotedAlike: a value written quoted, or as YAML's older
// yes/no, means what it means plain, through check and a started
// supervisor: default_exclude false serves .env, and max_files caps the
// walk with its value.
func TestManifestQuotedAlike(t *testing.T) {
	for _, tc := range []struct{ name, version, defaultExclude, maxFiles, callTimeout string }{
		{"plain", "1", "false", "2", "30s"},
		{"single quotes", "'1'", "'false'", "'2'", "'30s'"},
		{"double quotes", `"1"`, `"false"`, `"2"`, `"30s"`},
		{"yes and no", "1", "no", "2", "30s"},
		{"yes and no quoted", "1", "'no'", "2", "30s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, f := range []string{".env", "a.md", "b.md", "c.md"} {
				writeFile(t, filepath.Join(dir, "ws", f), f+"\n")
			}
			file := filepath.Join(dir, "m.yaml")
			writeFile(t, file, fmt.Sprintf("version: %s\nroots:\n  - name: a\n    path: ws\n    include: ['**']\n    tools: read\n    default_exclude: %s\n    limits: {max_files: %s}\n    call_timeout: %s\n",
				tc.version, tc.defaultExclude, tc.maxFiles, tc.callTimeout))
			if code, out, errOut := runIn(t, dir, nil, supervisorBin, "check", file); code != 0 || out != "" || errOut != "" {
				t.Fatalf("check: exit %d, stdout %q, stderr %q; want 0 and silence", code, out, errOut)
			}
			code, out, errOut := runIn(t, dir, nil, supervisorBin, "call", "--manifest", file, "--worker", workerBin, "a_read_text_file", `{"path": ".env"}`)
			if code != 0 || !strings.Contains(out, `".env\n"`) {
				t.Errorf("read .env with default_exclude %s: exit %d, stdout %q, stderr %q; want it served", tc.defaultExclude, code, out, errOut)
			}
			code, _, errOut = runIn(t, dir, nil, supervisorBin, "call", "--manifest", file, "--worker", workerBin, "a_search_files", `{"query": "md"}`)
			const want = "fsmcp-supervisor: a_search_files: file limit exceeded: the walk of root a selects more than 2 files (limits.max_files: 2); narrow the call to a smaller folder with its path argument, or raise limits.max_files in the manifest\n"
			if code != 1 || errOut != want {
				t.Errorf("search with max_files %s: exit %d, stderr %q; want 1 and %q", tc.maxFiles, code, errOut, want)
			}
		})
	}
}
