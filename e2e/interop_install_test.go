package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// interopClientPkg is the client the lockfile pins.
const interopClientPkg = "node_modules/@modelcontextprotocol/client"

// interopNode returns the node binary, first installing interop's pinned
// client from the committed lockfile when interop/node_modules lacks it. The
// install runs once, under an exclusive flock on interop/.install.lock, so
// test processes started in parallel wait for one another; it installs into
// a fresh folder and renames the result into place, so no process ever sees
// a half-installed tree. Only a missing node or npm fails the test.
func interopNode(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not on $PATH; install Node.js 20 or newer (with npm), which the interop tests need")
	}
	want := pinnedClientVersion(t)
	if installedClientVersion() == want {
		return node
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Fatal("npm is not on $PATH; install it with Node.js 20 or newer, which the interop tests need")
	}
	lock, err := os.OpenFile(filepath.Join(interopDir, ".install.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatalf("lock %s: %v", lock.Name(), err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	if installedClientVersion() == want { // another process installed it meanwhile
		return node
	}
	if err := installInterop(npm); err != nil {
		t.Fatalf("installing the interop client (npm ci from interop/package-lock.json): %v", err)
	}
	if got := installedClientVersion(); got != want {
		t.Fatalf("after npm ci, interop/%s is %q, the lockfile pins %q", interopClientPkg, got, want)
	}
	return node
}

func pinnedClientVersion(t *testing.T) string {
	t.Helper()
	var lock struct {
		Packages map[string]struct {
			Version string `json:"version"`
		} `json:"packages"`
	}
	readJSON(t, filepath.Join(interopDir, "package-lock.json"), &lock)
	v := lock.Packages[interopClientPkg].Version
	if v == "" {
		t.Fatalf("interop/package-lock.json pins no %s", interopClientPkg)
	}
	return v
}

// installedClientVersion is the version in interop/node_modules, or "".
func installedClientVersion() string {
	data, err := os.ReadFile(filepath.Join(interopDir, interopClientPkg, "package.json"))
	if err != nil {
		return ""
	}
	var installed struct{ Version string }
	if json.Unmarshal(data, &installed) != nil {
		return ""
	}
	return installed.Version
}

// installInterop runs npm ci in a scratch copy of interop's package files
// and renames the node_modules it makes over interop/node_modules.
func installInterop(npm string) error {
	scratch, err := os.MkdirTemp(interopDir, ".install-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(scratch)
	for _, f := range []string{"package.json", "package-lock.json"} {
		data, err := os.ReadFile(filepath.Join(interopDir, f))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(scratch, f), data, 0o644); err != nil {
			return err
		}
	}
	cmd := exec.Command(npm, "ci", "--no-audit", "--no-fund")
	cmd.Dir = scratch
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%v: %s", err, strings.TrimSpace(string(out)))
	}
	dest := filepath.Join(interopDir, "node_modules")
	if _, err := os.Stat(dest); err == nil { // a stale install: move it aside first
		if err := os.Rename(dest, filepath.Join(scratch, "stale")); err != nil {
			return err
		}
	}
	return os.Rename(filepath.Join(scratch, "node_modules"), dest)
}
