package worker

import (
	"os"
	"path/filepath"
	"testing"
)

// writeFile writes body to path, making the directories on its way.
func writeFile(tb testing.TB, path string, body []byte) {
	tb.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(path, body, 0o644); err != nil {
		tb.Fatal(err)
	}
}
