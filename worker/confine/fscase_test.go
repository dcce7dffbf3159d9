//go:build linux

package confine

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// hasEntry finds names byte for byte, whatever the directory's size, and
// exactName on a filesystem that never folds answers yes without reading
// the directory (a missing name is the open's to find).
func TestExactNames(t *testing.T) {
	dir := t.TempDir()
	names := []string{"Secret.md", "private", "a\xffb", "é"}
	for i := range 3000 { // more than one getdents buffer
		names = append(names, "filler-"+string(rune('a'+i%26))+"-"+strconv.Itoa(i))
	}
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	for _, tc := range []struct {
		name string
		want bool
	}{
		{"Secret.md", true}, {"SECRET.MD", false}, {"secret.md", false},
		{"private", true}, {"PRIVATE", false}, {"a\xffb", true}, {"é", true}, {"É", false},
		{"filler-j-2999", true}, {"filler-J-2999", false}, {"missing", false},
	} {
		if got, err := hasEntry(fd, tc.name); err != nil || got != tc.want {
			t.Errorf("hasEntry(%q) = %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
	mode, err := fsCaseMode(fd)
	if err != nil {
		t.Fatal(err)
	}
	folds, err := dirFolds(fd)
	if err != nil {
		t.Fatal(err)
	}
	if mode == caseExact && folds {
		t.Error("a directory of a filesystem that never folds is said to fold")
	}
	if !folds {
		if ok, err := exactName(fd, "SECRET.MD"); !ok || err != nil {
			t.Errorf("exactName where nothing folds = %v, %v; want true without reading", ok, err)
		}
	}
}
