//go:build linux

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// goRunEnv is this process's environment with only extraPath and go's own
// folder on $PATH.
func goRunEnv(t *testing.T, extraPath string) (string, []string) {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal("go is not on $PATH")
	}
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "PATH=") })
	return goBin, append(env, "PATH="+extraPath+string(os.PathListSeparator)+filepath.Dir(goBin))
}

// TestGoRunUsesCheckoutWorker: `go run ./cmd/fsmcp-supervisor tools` and
// `call` start the worker built from the same checkout, not an
// fsmcp-worker on $PATH (here one that is no worker at all, so using it
// would fail).
func TestGoRunUsesCheckoutWorker(t *testing.T) {
	wrong := t.TempDir()
	data, err := os.ReadFile(supervisorBin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(wrong, "fsmcp-worker"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	manifest, _ := callManifest(t, map[string]string{"a.md": "a\n"}, "")
	goBin, env := goRunEnv(t, wrong)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"tools", "--manifest", manifest}, "reader_read_text_file"},
		{[]string{"call", "--manifest", manifest, "reader_read_text_file", `{"path": "a.md"}`}, `"a\n"`},
	} {
		cmd := exec.Command(goBin, append([]string{"run", "./cmd/fsmcp-supervisor"}, tc.args...)...)
		cmd.Dir, cmd.Env = "..", env
		var stdout, stderr syncBuffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil || stderr.String() != "" || !strings.Contains(stdout.String(), tc.want) {
			t.Errorf("go run %s: %v, stdout %q, stderr %q; want %s on stdout and nothing on stderr", tc.args[0], err, stdout.String(), stderr.String(), tc.want)
		}
	}
}

// TestGoRunHostEntryRefused: host-entry from a supervisor that go run built
// refuses to print a command in go's temporary or cache folders, and says
// to install the binaries. go run starts a fresh build from its temporary
// folder and a cached one from the build cache, so the second run is
// always the cached binary.
func TestGoRunHostEntryRefused(t *testing.T) {
	manifest, _ := callManifest(t, map[string]string{"a.md": "a\n"}, "")
	goBin, env := goRunEnv(t, filepath.Dir(workerBin))
	for run := 1; run <= 2; run++ {
		cmd := exec.Command(goBin, "run", "./cmd/fsmcp-supervisor", "host-entry", "--manifest", manifest)
		cmd.Dir, cmd.Env = "..", env
		var stdout, stderr syncBuffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		const want = "fsmcp-supervisor: this fsmcp-supervisor was built by go run, into a temporary folder or the Go build cache that a host cannot rely on; install both binaries with go install ./cmd/... and run host-entry from the installed fsmcp-supervisor\nexit status 64\n"
		if err == nil || stdout.String() != "" || stderr.String() != want {
			t.Errorf("go run host-entry, run %d: %v, stdout %q\n got stderr %q\nwant %q", run, err, stdout.String(), stderr.String(), want)
		}
	}
}

// TestCallNamesAnotherWorker: a supervisor that starts an fsmcp-worker
// found on $PATH whose version differs from its own says which worker it
// uses and its version; one of the same version says nothing. The worker
// here is built without VCS stamping, so it reports Release+devel, unlike
// a supervisor built in a git checkout (in a git worktree the go command
// stamps neither, and the two agree).
func TestCallNamesAnotherWorker(t *testing.T) {
	dir := t.TempDir()
	build := exec.Command("go", "build", "-buildvcs=false", "-o", dir+string(filepath.Separator), "./cmd/fsmcp-worker")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -buildvcs=false ./cmd/fsmcp-worker: %v\n%s", err, out)
	}
	alone := filepath.Join(t.TempDir(), "fsmcp-supervisor")
	data, err := os.ReadFile(supervisorBin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(alone, data, 0o755); err != nil {
		t.Fatal(err)
	}
	worker := filepath.Join(dir, "fsmcp-worker")
	_, wv, _ := cliRun(t, "", []string{}, worker, "--version")
	_, sv, _ := cliRun(t, "", []string{}, alone, "--version")
	wv, sv = strings.TrimSpace(wv), strings.TrimSpace(sv)
	manifest, _ := callManifest(t, map[string]string{"a.md": "a\n"}, "")
	code, out, errOut := cliRun(t, "", []string{"PATH=" + dir}, alone, "tools", manifest)
	want := ""
	if wv != sv {
		want = "fsmcp-supervisor: using the worker " + worker + ", version " + wv + "; this supervisor is " + sv + " (pass --worker BIN to choose one)\n"
	}
	if code != 0 || errOut != want || !strings.Contains(out, "reader_read_text_file") {
		t.Errorf("tools with the worker on $PATH: exit %d, stdout %q\n got stderr %q\nwant %q", code, out, errOut, want)
	}
}
