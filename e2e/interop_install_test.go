//go:build linux

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

// interopPkgs are the clients the lockfile pins, as installed under
// interop/.
var interopPkgs = []string{
	"node_modules/@modelcontextprotocol/client",
	"node_modules/@modelcontextprotocol/sdk",
	"node_modules/@modelcontextprotocol/inspector",
}

// interopNode returns the node binary, first installing interop's pinned
// clients from the committed lockfile when interop/node_modules lacks them. The
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
	want := pinnedVersions(t)
	if installedVersions() == want {
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
	if installedVersions() == want { // another process installed it meanwhile
		return node
	}
	if err := installInterop(npm); err != nil {
		t.Fatalf("installing the interop clients (cd interop && npm ci --ignore-scripts --omit=optional): %v", err)
	}
	if got := installedVersions(); got != want {
		t.Fatalf("after npm ci, interop/ holds %s, the lockfile pins %s", got, want)
	}
	return node
}

// pinnedVersions are the versions interop/package-lock.json pins for
// interopPkgs, in their order, as one string.
func pinnedVersions(t *testing.T) string {
	t.Helper()
	var lock struct {
		Packages map[string]struct {
			Version string `json:"version"`
		} `json:"packages"`
	}
	readJSON(t, filepath.Join(interopDir, "package-lock.json"), &lock)
	var vs []string
	for _, pkg := range interopPkgs {
		v := lock.Packages[pkg].Version
		if v == "" {
			t.Fatalf("interop/package-lock.json pins no %s", pkg)
		}
		vs = append(vs, pkg+"@"+v)
	}
	return strings.Join(vs, " ")
}

// installedVersions are the versions of interopPkgs in interop/node_modules,
// as pinnedVersions spells them ("" for one that is missing).
func installedVersions() string {
	var vs []string
	for _, pkg := range interopPkgs {
		data, err := os.ReadFile(filepath.Join(interopDir, pkg, "package.json"))
		var installed struct{ Version string }
		if err == nil {
			_ = json.Unmarshal(data, &installed)
		}
		vs = append(vs, pkg+"@"+installed.Version)
	}
	return strings.Join(vs, " ")
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
	// Install scripts are not run (the clients need none), nor optional
	// native builds (the Inspector's web bundler's, unused by its command
	// line).
	cmd := exec.Command(npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts", "--omit=optional")
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
