//go:build linux

package fusefs

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestStuck: ok.txt reads, a read of stuck.txt blocks until its reader is
// killed, and once the test is over nothing is mounted, even though a read
// was left waiting in the file system.
func TestStuck(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mnt")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Run("mounted", func(t *testing.T) {
		// Waits (after the mount's cleanup) for the reader left blocked.
		var left *exec.Cmd
		t.Cleanup(func() {
			if left != nil {
				_ = left.Wait()
			}
		})
		s := NewStuck(t)
		Mount(t, dir, s)
		if b, err := os.ReadFile(filepath.Join(dir, "ok.txt")); err != nil || string(b) != StuckText {
			t.Fatalf("ok.txt: %q %v", b, err)
		}
		cat := exec.Command("cat", filepath.Join(dir, "stuck.txt"))
		if err := cat.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cat.Wait() }()
		for deadline := time.Now().Add(10 * time.Second); s.Blocked.Load() == 0; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the read of stuck.txt never reached the file system")
			}
		}
		select {
		case err := <-done:
			t.Fatalf("the read of stuck.txt returned: %v", err)
		case <-time.After(300 * time.Millisecond):
		}
		// A second reader is left blocked for the cleanup to deal with.
		left = exec.Command("cat", filepath.Join(dir, "stuck.txt"))
		if err := left.Start(); err != nil {
			t.Fatal(err)
		}
		_ = cat.Process.Kill()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("a killed reader of stuck.txt did not end")
		}
	})
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), dir) {
		t.Fatalf("%s is still mounted after the test", dir)
	}
}
