//go:build darwin

package confine

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriteKeepsACL: a write over a file with an ACL gives the new file
// that ACL, entry for entry; a write over a file without one, in a
// directory whose ACL passes entries on to new files, leaves the new file
// none, as the file it replaces had.
func TestWriteKeepsACL(t *testing.T) {
	for _, tc := range []struct {
		name    string
		dirACE  string // given to the directory first ("": none)
		fileACE string // given to the file ("": its ACL removed)
	}{
		{"the file's ACL", "", "user:nobody allow read,write"},
		{"the file's ACL over the directory's", "user:nobody allow read,file_inherit", "everyone deny execute"},
		{"no ACL in a directory that passes one on", "user:nobody allow read,file_inherit", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.dirACE != "" {
				chmodACL(t, dir, "+a", tc.dirACE)
			}
			dst := filepath.Join(dir, "dst")
			if err := os.WriteFile(dst, []byte("old"), 0o644); err != nil {
				t.Fatal(err)
			}
			chmodACL(t, dst, "-N") // whatever it got from the directory
			if tc.fileACE != "" {
				chmodACL(t, dst, "+a", tc.fileACE)
			}
			want := aclOf(t, dst)
			r, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if err := r.WriteFileAtomic("dst", []byte("new")); err != nil {
				t.Fatal(err)
			}
			if b, err := os.ReadFile(dst); err != nil || string(b) != "new" {
				t.Fatalf("after the write: %q, %v", b, err)
			}
			if got := aclOf(t, dst); got != want {
				t.Fatalf("ACL after the write:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

// chmodACL runs chmod with args on path (+a ACE, -N).
func chmodACL(t *testing.T, path string, args ...string) {
	t.Helper()
	out, err := exec.Command("/bin/chmod", append(args, path)...).CombinedOutput()
	if err != nil {
		t.Fatalf("chmod %s %s: %v: %s (the test volume needs ACLs: APFS or HFS+)", strings.Join(args, " "), path, err, out)
	}
}

// aclOf is the ACL ls -le lists for path: its lines after the first.
func aclOf(t *testing.T, path string) string {
	t.Helper()
	out, err := exec.Command("/bin/ls", "-led", path).Output()
	if err != nil {
		t.Fatalf("ls -led %s: %v", path, err)
	}
	_, acl, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return acl
}
