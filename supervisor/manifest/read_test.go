package manifest

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestLoadFiles: Load reads a regular file of at most MaxBytes; anything
// else is refused at once with what it is, never read whole or waited on.
func TestLoadFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatalf("mkfifo %s: %v", fifo, err)
	}
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, []byte("version: 1\n# "+strings.Repeat("x", MaxBytes)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ file, want string }{
		{filepath.Join(dir, "missing.yaml"), ": cannot read the manifest: no such file or directory"},
		{dir, ": is a folder, not a manifest file; give the path of a YAML file"},
		{fifo, ": is a FIFO, not a manifest file; give the path of a YAML file"},
		{"/dev/zero", ": is a character device, not a manifest file; give the path of a YAML file"},
		{big, ": is larger than 1048576 bytes (1 MiB), the most a manifest may be; is this the manifest?"},
	}
	for _, tc := range tests {
		done := make(chan error, 1)
		go func() { _, err := Load(tc.file); done <- err }()
		select {
		case err := <-done:
			if err == nil || err.Error() != tc.file+tc.want {
				t.Errorf("Load(%s): %v, want %q", tc.file, err, tc.file+tc.want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("Load(%s) has not returned after 10s", tc.file)
		}
	}
}
