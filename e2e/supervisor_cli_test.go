//go:build linux

package e2e

import (
	"context"
	"debug/buildinfo"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	fsversion "github.com/fsmcp/fsmcp/internal/version"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.yaml.in/yaml/v3"
)

// cliRun runs bin with args in dir (the test's folder if "") and env, and
// returns its exit code, stdout and stderr.
func cliRun(t testing.TB, dir string, env []string, bin string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir, cmd.Env = dir, env
	var stdout, stderr syncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	_ = cmd.Run()
	return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
}

// mcpServer is one entry of an mcpServers host document.
type mcpServer struct {
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
}

// mcpEntry runs `host-entry --format mcp-json` with args and returns the
// one server it prints.
func mcpEntry(t testing.TB, bin string, args ...string) mcpServer {
	t.Helper()
	code, out, errOut := cliRun(t, "", []string{}, bin, append([]string{"host-entry", "--format", "mcp-json"}, args...)...)
	if code != 0 {
		t.Fatalf("host-entry exit %d: %s", code, errOut)
	}
	var doc struct {
		MCPServers map[string]mcpServer `json:"mcpServers"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.MCPServers) != 1 {
		t.Fatalf("host-entry output %q: %v", out, err)
	}
	for _, s := range doc.MCPServers {
		return s
	}
	return mcpServer{}
}

// TestSupervisorHostEntry: host-entry prints an mcpServers entry and a
// PtcRunner install block that start this supervisor on the manifest by
// absolute paths, with an empty environment plus the declared key
// variables, and the install block maps exactly the tools the started
// supervisor then serves.
func TestSupervisorHostEntry(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"ws", "out"} {
		os.Mkdir(filepath.Join(dir, d), 0o755)
	}
	const roots = "version: 1\nroots:\n  - name: reader\n    path: ws\n    include: ['**']\n    tools: read\n%s  - name: writer\n    path: out\n    include: ['*.md']\n    tools: write\n"
	writeFile(t, filepath.Join(dir, "fsmcp.yaml"), strings.Replace(roots, "%s", "", 1))
	writeFile(t, filepath.Join(dir, "keyed.yaml"), strings.Replace(roots, "%s", "    cursor_key_env: FSMCP_E2E_UNSET_KEY\n", 1))
	manifest := filepath.Join(dir, "fsmcp.yaml")

	// mcp-json, from a relative manifest path.
	code, out, errOut := cliRun(t, dir, []string{}, supervisorBin, "host-entry", "--manifest", "fsmcp.yaml")
	if code != 0 {
		t.Fatalf("host-entry: exit %d: %s", code, errOut)
	}
	var doc struct {
		MCPServers map[string]mcpServer `json:"mcpServers"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("host-entry output %q: %v", out, err)
	}
	s := doc.MCPServers["fsmcp"]
	if s.Command != supervisorBin || !slices.Equal(s.Args, []string{"--manifest", manifest}) || s.Env == nil || len(s.Env) != 0 {
		t.Errorf("mcp-json entry %s", out)
	}
	if code, alias, _ := cliRun(t, dir, []string{}, supervisorBin, "entry", "fsmcp.yaml"); code != 0 || alias != out {
		t.Errorf("entry FILE (the older spelling) printed %q, want what host-entry prints", alias)
	}
	if s := mcpEntry(t, supervisorBin, "--manifest", filepath.Join(dir, "keyed.yaml"), "--name", "files"); len(s.Env) != 1 || s.Env["FSMCP_E2E_UNSET_KEY"] != "<base64url cursor key for root reader>" {
		t.Errorf("keyed entry env %v, want only a placeholder for FSMCP_E2E_UNSET_KEY (which is unset)", s.Env)
	}

	// vscode: the same launch as a stdio server entry.
	code, out, errOut = cliRun(t, "", []string{}, supervisorBin, "host-entry", "--manifest", manifest, "--format", "vscode")
	var vs struct {
		Servers map[string]struct {
			Type    string   `json:"type"`
			Command string   `json:"command"`
			Args    []string `json:"args"`
		} `json:"servers"`
	}
	if err := json.Unmarshal([]byte(out), &vs); code != 0 || err != nil || len(vs.Servers) != 1 {
		t.Fatalf("host-entry --format vscode: exit %d, %v: %s%s", code, err, out, errOut)
	}
	if v := vs.Servers["fsmcp"]; v.Type != "stdio" || v.Command != supervisorBin || !slices.Equal(v.Args, []string{"--manifest", manifest}) {
		t.Errorf("vscode entry %s", out)
	}

	// ptc (its schema and bounds: TestHostEntryPtcExamples).
	code, out, errOut = cliRun(t, "", []string{}, supervisorBin, "host-entry", "--manifest", manifest, "--format", "ptc", "--name", "files")
	if code != 0 {
		t.Fatalf("host-entry --format ptc: exit %d: %s", code, errOut)
	}
	var ptc struct {
		Install map[string]struct {
			Source    string `json:"source"`
			Transport struct {
				Type               string         `json:"type"`
				Command            string         `json:"command"`
				Args               []string       `json:"args"`
				InheritEnvironment *bool          `json:"inherit_environment"`
				Env                map[string]any `json:"env"`
			} `json:"transport"`
			Tools map[string]struct {
				As     string `json:"as"`
				Effect string `json:"effect"`
			} `json:"tools"`
		} `json:"install"`
	}
	if err := json.Unmarshal([]byte(out), &ptc); err != nil {
		t.Fatalf("ptc output %q: %v", out, err)
	}
	inst, ok := ptc.Install["files"]
	tr := inst.Transport
	if !ok || inst.Source != "mcp" || tr.Type != "stdio" || tr.Command != supervisorBin || !slices.Equal(tr.Args, []string{"--manifest", manifest}) ||
		tr.InheritEnvironment == nil || *tr.InheritEnvironment || len(tr.Env) != 0 {
		t.Errorf("ptc transport %s", out)
	}
	var mapped []string
	for name, m := range inst.Tools {
		want := "read"
		if strings.HasSuffix(name, "write_text_file") {
			want = "write"
		}
		if m.As != strings.Replace(name, "_", ".", 1) || m.Effect != want {
			t.Errorf("tool %s maps to %+v, want as <root>.<tool> with effect %s", name, m, want)
		}
		mapped = append(mapped, name)
	}

	// The entry works as printed: spawned with exactly its command, args
	// and (empty) environment, it serves the tools the block maps.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.Command(tr.Command, tr.Args...)
	cmd.Env = []string{}
	cmd.Stderr = &testWriter{t: t}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("start the printed entry: %v", err)
	}
	defer cs.Close()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var served []string
	for _, tool := range res.Tools {
		served = append(served, tool.Name)
	}
	slices.Sort(served)
	slices.Sort(mapped)
	if !slices.Equal(served, mapped) || len(served) != 5 {
		t.Errorf("served %v, the install block maps %v", served, mapped)
	}

	// A supervisor without the worker beside it names the worker it found
	// on $PATH, since the host's empty environment has no $PATH.
	alone := filepath.Join(t.TempDir(), "fsmcp-supervisor")
	data, err := os.ReadFile(supervisorBin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(alone, data, 0o755); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = cliRun(t, "", []string{"PATH=" + filepath.Dir(workerBin)}, alone, "host-entry", "--manifest", manifest)
	if code != 0 || !strings.Contains(out, `"--worker",`) || !strings.Contains(out, `"`+workerBin+`"`) || !strings.Contains(out, `"command": "`+alone+`"`) {
		t.Errorf("entry from a lone supervisor (exit %d, %s): %s, want --worker %s", code, errOut, out, workerBin)
	}
	code, _, errOut = cliRun(t, "", []string{}, alone, "host-entry", "--manifest", manifest)
	if code != 64 || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "cannot find fsmcp-worker") {
		t.Errorf("no worker anywhere: exit %d, stderr %q", code, errOut)
	}
}

// TestSupervisorCheck: check takes several manifests, passes every example
// manifest (cursor-key variables unset) silently, and reports each bad one
// on one FILE:LINE: line, exiting 64.
func TestSupervisorCheck(t *testing.T) {
	examples, _ := filepath.Glob(filepath.Join("..", "manifests", "*.yaml"))
	if len(examples) < 3 {
		t.Fatalf("examples %v", examples)
	}
	dir := t.TempDir()
	var names []string
	for _, e := range examples {
		data, err := os.ReadFile(e)
		if err != nil {
			t.Fatal(err)
		}
		var m struct{ Roots []struct{ Path string } }
		if err := yaml.Unmarshal(data, &m); err != nil {
			t.Fatalf("%s: %v", e, err)
		}
		for _, r := range m.Roots {
			os.MkdirAll(filepath.Join(dir, r.Path), 0o755)
		}
		writeFile(t, filepath.Join(dir, filepath.Base(e)), string(data))
		names = append(names, filepath.Base(e))
	}
	if code, out, errOut := cliRun(t, dir, []string{}, supervisorBin, append([]string{"check"}, names...)...); code != 0 || out != "" || errOut != "" {
		t.Errorf("check %v: exit %d, stdout %q, stderr %q; want 0 and silence", names, code, out, errOut)
	}
	// In place too: the repository ships the example roots' folders.
	if code, out, errOut := cliRun(t, filepath.Join("..", "manifests"), []string{}, supervisorBin, append([]string{"check"}, names...)...); code != 0 || out != "" || errOut != "" {
		t.Errorf("check %v in manifests/: exit %d, stdout %q, stderr %q; want 0 and silence", names, code, out, errOut)
	}

	writeFile(t, filepath.Join(dir, "colour.yaml"), "version: 1\nroots:\n  - name: a\n    path: workspace\n    colour: red\n    include: ['**']\n    tools: read\n")
	writeFile(t, filepath.Join(dir, "nowhere.yaml"), "version: 1\nroots:\n  - name: a\n    path: nowhere\n    include: ['**']\n    tools: read\n  - name: B\n    path: workspace\n    include: ['**']\n    tools: [rm]\n")
	writeFile(t, filepath.Join(dir, "long.yaml"), "version: 1\nroots:\n  - name: a\n    path: workspace\n    include: ['"+strings.Repeat("x", 140000)+"']\n    tools: read\n")
	code, out, errOut := cliRun(t, dir, []string{}, supervisorBin, "check", "colour.yaml", names[0], "nowhere.yaml", "long.yaml", "missing.yaml")
	lines := strings.Split(strings.TrimSuffix(errOut, "\n"), "\n")
	want := []string{
		"colour.yaml:5: roots[0].colour: unknown key; use name, path, include, exclude, default_exclude, tools, limits, cursor_key_env or call_timeout",
		"nowhere.yaml:4: roots[0].path: root folder \"nowhere\" does not exist (tried " + filepath.Join(dir, "nowhere") + "); give the folder relative to the manifest's folder or absolute",
		"nowhere.yaml:7: roots[1].name: \"B\" is not a valid root name; use a name matching [a-z][a-z0-9-]{0,31}, such as reader",
		"nowhere.yaml:10: roots[1].tools[0]: unknown tool \"rm\"; use read, write, all or names from list_directory, search_files, search_text, read_text_file, write_text_file",
		"long.yaml:3: roots[0]: one worker argument would be 140000 bytes, above the kernel's limit of 131072 for a single argument; shorten it",
		"missing.yaml: cannot read the manifest: no such file or directory",
	}
	if code != 64 || out != "" || !slices.Equal(lines, want) {
		t.Errorf("check with bad manifests: exit %d, stdout %q, stderr lines\n%q\nwant 64, nothing and\n%q", code, out, lines, want)
	}
	// Startup refuses the same manifest on one line that counts the rest,
	// and check takes the manifest as the other commands do too.
	code, _, errOut = cliRun(t, dir, []string{}, supervisorBin, "--manifest", "nowhere.yaml")
	if code != 64 || errOut != "fsmcp-supervisor: "+want[1]+" (and 2 more; fsmcp-supervisor check lists them)\n" {
		t.Errorf("startup on nowhere.yaml: exit %d, stderr %q", code, errOut)
	}
	code, _, errOut = cliRun(t, dir, []string{}, supervisorBin, "check", "--manifest", "nowhere.yaml")
	if code != 64 || errOut != strings.Join(want[1:4], "\n")+"\n" {
		t.Errorf("check --manifest nowhere.yaml: exit %d, stderr %q", code, errOut)
	}

	// Above 64 roots, a warning with what they cost, and exit 0.
	var many strings.Builder
	many.WriteString("version: 1\nroots:\n")
	for i := range 65 {
		fmt.Fprintf(&many, "  - {name: r%d, path: workspace, include: ['**'], tools: read}\n", i)
	}
	writeFile(t, filepath.Join(dir, "many.yaml"), many.String())
	code, out, errOut = cliRun(t, dir, []string{}, supervisorBin, "check", "many.yaml")
	if code != 0 || out != "" || !strings.HasPrefix(errOut, "many.yaml: warning: 65 roots, more than 64: each root is an idle worker process of about 20 MiB resident") || strings.Count(errOut, "\n") != 1 {
		t.Errorf("check with 65 roots: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// TestSupervisorCLI: usage mistakes answer with one short stderr line and
// status 64 (0 for a good manifest or --help), never a hang.
func TestSupervisorCLI(t *testing.T) {
	good, _ := exampleManifest(t, "outbox.yaml", "outbox")
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	writeFile(t, bad, "version: 1\nroots:\n  - name: x\n    path: nowhere\n    include: ['**']\n    tools: read\n")
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"no manifest", nil, 64, "usage: fsmcp-supervisor --manifest FILE"},
		{"unknown flag", []string{"--manifest", good, "--colour"}, 64, "flag provided but not defined: -colour"},
		{"missing manifest file", []string{"--manifest", "/nonexistent/m.yaml", "--worker", workerBin}, 64, "/nonexistent/m.yaml: cannot read the manifest: no such file or directory"},
		{"missing worker binary", []string{"--manifest", good, "--worker", "/nonexistent/fsmcp-worker"}, 64, "worker binary /nonexistent/fsmcp-worker: no such file or directory"},
		{"bad log level", []string{"--manifest", good, "--log-level", "loud"}, 64, `--log-level "loud" is not a level; use trace, debug, info, warn, error or off`},
		{"help", []string{"--help"}, 0, ""},
		{"version", []string{"--version"}, 0, ""},
		{"check good", []string{"check", good}, 0, ""},
		{"check bad", []string{"check", bad}, 64, bad + ":4: roots[0].path: root folder \"nowhere\" does not exist"},
		{"check nothing", []string{"check"}, 64, "usage: fsmcp-supervisor check [--manifest] FILE..."},
		{"check help", []string{"check", "--help"}, 0, ""},
		{"host-entry help", []string{"host-entry", "--help"}, 0, ""},
		{"host-entry no manifest", []string{"host-entry"}, 64, "usage: fsmcp-supervisor host-entry [--manifest] FILE"},
		{"host-entry bad manifest", []string{"host-entry", "--manifest", bad}, 64, bad + ":4: roots[0].path"},
		{"host-entry bad format", []string{"host-entry", "--manifest", good, "--format", "yaml"}, 64, `--format "yaml" is not a host format; use mcp-json, vscode, ptc`},
		{"host-entry bad name", []string{"host-entry", "--manifest", good, "--name", "a b"}, 64, `--name "a b" is not an entry name`},
		{"host-entry stray argument", []string{"host-entry", "--manifest", good, "extra"}, 64, "usage: fsmcp-supervisor host-entry"},
		{"host-entry manifest as argument", []string{"host-entry", bad}, 64, bad + ":4: roots[0].path"},
		{"entry bad", []string{"entry", bad}, 64, bad + ":4: roots[0].path"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, _, got := cliRun(t, "", os.Environ(), supervisorBin, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr %q", code, tc.code, got)
			}
			if tc.stderr == "" {
				if got != "" {
					t.Errorf("stderr %q, want none", got)
				}
				return
			}
			if strings.Count(got, "\n") != 1 || !strings.Contains(got, tc.stderr) || strings.Contains(got, "goroutine") {
				t.Errorf("stderr %q, want one line containing %q", got, tc.stderr)
			}
		})
	}
}

// logLine is an hclog text line: time, [LEVEL], logger name, message and
// key=value fields.
var logLine = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z \[(TRACE|DEBUG|INFO|WARN|ERROR)\] +([a-z][a-z0-9-]*): (.*)$`)

// TestSupervisorLogs: --log-level sets how much the supervisor says on
// stderr in hclog lines: one per worker start, exit, restart and stop at
// info; only the exit at the default level; nothing when healthy at the
// default level or at all with off.
func TestSupervisorLogs(t *testing.T) {
	bins := buildSupervisorBins(t)
	file, dir := exampleManifest(t, "reader-writer.yaml", "workspace", "outbox")
	writeFile(t, filepath.Join(dir, "workspace", "a.txt"), "a\n")
	args := func(extra ...string) []string {
		return append([]string{"--manifest", file, "--worker", bins.worker}, extra...)
	}
	// crashOnce kills the reader's worker, waits for it to serve again and
	// ends the supervisor; it returns the killed pid and the stderr.
	crashOnce := func(p *supervisorProc) (int, string) {
		old := p.workerOf(t, "reader")
		if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		eventually(t, 10*time.Second, "the reader to come back", func() bool {
			return !callTool(t, p.session, "reader_read_text_file", map[string]any{"path": "a.txt"}).IsError
		})
		p.session.Close()
		p.stdin.Close()
		if code := p.wait(t, 10*time.Second); code != 0 {
			t.Fatalf("exit %d; stderr:\n%s", code, p.stderr)
		}
		return old, p.stderr.String()
	}

	t.Run("default is silent while healthy", func(t *testing.T) {
		p := startSupervisorArgs(t, args())
		callTool(t, p.session, "reader_read_text_file", map[string]any{"path": "a.txt"})
		p.session.Close()
		p.stdin.Close()
		if code := p.wait(t, 10*time.Second); code != 0 || p.stderr.String() != "" {
			t.Errorf("exit %d, stderr %q; want 0 and silence", code, p.stderr)
		}
	})

	t.Run("default logs the exit", func(t *testing.T) {
		old, stderr := crashOnce(startSupervisorArgs(t, args()))
		lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
		if len(lines) != 1 || !logLine.MatchString(lines[0]) ||
			!strings.Contains(lines[0], "[WARN]  reader: worker exited; restarting in 100ms: pid="+strconv.Itoa(old)+` status="signal: killed"`) {
			t.Errorf("stderr %q, want one WARN line for the exit of pid %d", stderr, old)
		}
	})

	t.Run("info", func(t *testing.T) {
		old, stderr := crashOnce(startSupervisorArgs(t, args("--log-level", "info")))
		counts := map[string]int{}
		for _, l := range strings.Split(strings.TrimSuffix(stderr, "\n"), "\n") {
			m := logLine.FindStringSubmatch(l)
			if m == nil {
				t.Errorf("not an hclog line: %q", l)
				continue
			}
			msg, _, _ := strings.Cut(m[3], ":")
			counts[m[1]+" "+m[2]+": "+msg]++
		}
		want := map[string]int{
			"INFO reader: worker started":                     1,
			"INFO writer: worker started":                     1,
			"INFO fsmcp-supervisor: serving":                  1,
			"WARN reader: worker exited; restarting in 100ms": 1,
			"INFO reader: worker restarted":                   1,
			"INFO reader: worker stopped":                     1,
			"INFO writer: worker stopped":                     1,
		}
		for k, n := range want {
			if counts[k] != n {
				t.Errorf("%d lines %q, want %d", counts[k], k, n)
			}
		}
		if len(counts) != len(want) {
			t.Errorf("lines %v, want only %v", counts, want)
		}
		if !strings.Contains(stderr, "reader: worker exited; restarting in 100ms: pid="+strconv.Itoa(old)) {
			t.Errorf("the exit line does not name pid %d:\n%s", old, stderr)
		}
	})

	t.Run("off", func(t *testing.T) {
		if _, stderr := crashOnce(startSupervisorArgs(t, args("--log-level", "off"))); stderr != "" {
			t.Errorf("stderr %q, want none", stderr)
		}
	})
}

// TestVersionStamp: both binaries report one version, from the build info:
// --version, and the server info of server/discover. A build from this
// checkout carries the revision the go command recorded in it.
func TestVersionStamp(t *testing.T) {
	// Both print the bare version.
	version := func(bin, name string) string {
		code, out, errOut := cliRun(t, "", []string{}, bin, "--version")
		v := strings.TrimSuffix(out, "\n")
		if code != 0 || v == "" || strings.Contains(v, " ") || errOut != "" {
			t.Fatalf("%s --version: exit %d, %q %q", name, code, out, errOut)
		}
		return v
	}
	v := version(workerBin, "fsmcp-worker")
	if sv := version(supervisorBin, "fsmcp-supervisor"); sv != v {
		t.Errorf("supervisor version %q, worker %q", sv, v)
	}
	cs := worker(t, t.TempDir(), "--include", "**")
	if got := cs.InitializeResult().ServerInfo; got == nil || got.Name != "fsmcp-worker" || got.Version != v {
		t.Errorf("discover server info %+v, want fsmcp-worker %s", got, v)
	}

	// A build of this checkout reports the revision the go command
	// recorded in it, and "devel" where it recorded none. The go command
	// records one only for a module in a plain git checkout: it looks for
	// a .git directory, and a git worktree's .git is a file, so a
	// worktree's builds say devel, as a source archive's do.
	dir := t.TempDir()
	build := exec.Command("go", "build", "-buildvcs=true", "-tags="+buildTags, "-o", dir+string(filepath.Separator), "./cmd/fsmcp-worker")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -buildvcs=true: %v\n%s", err, out)
	}
	bin := filepath.Join(dir, "fsmcp-worker")
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatalf("reading the build info of %s: %v", bin, err)
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	want := fsversion.Release + "+devel"
	if rev := settings["vcs.revision"]; rev != "" {
		want = fsversion.Release + "+" + rev[:min(len(rev), 12)]
		if settings["vcs.modified"] == "true" {
			want += ".dirty"
		}
	}
	if got := version(bin, "fsmcp-worker"); got != want {
		t.Errorf("checkout build reports %q, want %q (recorded: revision %q, modified %q)", got, want, settings["vcs.revision"], settings["vcs.modified"])
	}
	top, err := exec.Command("git", "-C", "..", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		return // not a git checkout: what was recorded is checked above
	}
	if fi, err := os.Stat(filepath.Join(strings.TrimSpace(string(top)), ".git")); err == nil && fi.IsDir() {
		head, err := exec.Command("git", "-C", "..", "rev-parse", "HEAD").Output()
		if err != nil {
			t.Fatalf("git rev-parse HEAD: %v", err)
		}
		if rev := settings["vcs.revision"]; rev != strings.TrimSpace(string(head)) {
			t.Errorf("a build in a git checkout recorded revision %q, want HEAD %s", rev, head)
		}
	}
}

// TestSupervisorImportsNoWorker: the supervisor is built from internal/ and
// its own packages, never from worker/, so none of the worker's engine
// (confinement, watches, io_uring) is linked into it or set up when it
// starts.
func TestSupervisorImportsNoWorker(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "../cmd/fsmcp-supervisor").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps ../cmd/fsmcp-supervisor: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if pkg == "github.com/fsmcp/fsmcp/worker" || strings.HasPrefix(pkg, "github.com/fsmcp/fsmcp/worker/") {
			t.Errorf("fsmcp-supervisor depends on %s", pkg)
		}
	}
}
