//go:build linux

package e2e

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// netBindCapability is a security.capability value (VFS_CAP_REVISION_2,
// effective) granting CAP_NET_BIND_SERVICE, as `setcap
// cap_net_bind_service=ep` writes it.
var netBindCapability = []byte{0x01, 0, 0, 0x02, 0, 0x04, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}

// TestWriteDropsPrivileges: a replaced file never keeps set-uid or
// set-gid bits (with or without group execute) or a file capability,
// whether the worker runs as root (which the kernel would let keep them on
// an in-place write) or as the file's unprivileged owner; its mode
// otherwise, owner, group and other attributes are kept.
func TestWriteDropsPrivileges(t *testing.T) {
	needRoot(t)
	type file struct {
		name  string
		mode  os.FileMode // permission bits as planted
		setid uint32      // set-uid, set-gid and sticky bits added to them
		cap   bool        // planted with a file capability
		want  uint32      // mode bits afterwards
	}
	files := []file{
		{name: "suid.md", mode: 0o755, setid: unix.S_ISUID, want: 0o755},
		{name: "sgid-exec.md", mode: 0o750, setid: unix.S_ISGID, want: 0o750},
		{name: "sgid.md", mode: 0o640, setid: unix.S_ISGID, want: 0o640},
		{name: "both.md", mode: 0o755, setid: unix.S_ISUID | unix.S_ISGID, want: 0o755},
		{name: "sticky.md", mode: 0o644, setid: unix.S_ISVTX, want: 0o1644},
		{name: "cap.md", mode: 0o755, cap: true, want: 0o755},
	}
	for _, as := range []struct {
		name string
		uid  int
	}{{"root", 0}, {"owner", nobody}} {
		t.Run(as.name, func(t *testing.T) {
			root := reachableDir(t, nobody, nobody, 0o755)
			for _, f := range files {
				p := filepath.Join(root, f.name)
				plant(t, p, "old\n", nobody, nobody, f.mode)
				if err := unix.Chmod(p, uint32(f.mode)|f.setid); err != nil {
					t.Fatal(err)
				}
				if err := unix.Setxattr(p, "user.origin", []byte("kept"), 0); err != nil {
					t.Fatalf("setxattr user.origin: %v (the test's temporary directory needs xattr support, e.g. ext4; set TMPDIR to such a filesystem)", err)
				}
				if f.cap {
					if err := unix.Setxattr(p, "security.capability", netBindCapability, 0); err != nil {
						t.Fatalf("setxattr security.capability: %v (needs CAP_SETFCAP: run the e2e suite as root on ext4, xfs, btrfs or tmpfs)", err)
					}
				}
			}
			cs := workerAs(t, uint32(as.uid), uint32(as.uid), root, "--include", "*.md")
			for _, f := range files {
				p := filepath.Join(root, f.name)
				if r := call(t, cs, "write_text_file", map[string]any{"path": f.name, "content": "new\n"}); r.isError {
					t.Errorf("write %s: %s", f.name, r.text)
					continue
				}
				var st unix.Stat_t
				if err := unix.Lstat(p, &st); err != nil {
					t.Fatal(err)
				}
				if st.Mode&0o7777 != f.want || st.Uid != nobody || st.Gid != nobody {
					t.Errorf("%s: mode %o owner %d:%d, want %o 65534:65534", f.name, st.Mode&0o7777, st.Uid, st.Gid, f.want)
				}
				if got := xattrs(t, p); got != "[user.origin=6b657074]" {
					t.Errorf("%s: attributes %s, want user.origin alone", f.name, got)
				}
				if b, err := os.ReadFile(p); err != nil || string(b) != "new\n" {
					t.Errorf("%s holds %q (%v)", f.name, b, err)
				}
			}
		})
	}
}
