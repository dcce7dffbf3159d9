//go:build linux

package e2e

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sys/unix"
)

// nobody is the unprivileged uid and gid the permission cases run the
// worker as (the suite itself runs as root).
const nobody = 65534

// needRoot fails a test that must set owners or switch uids when the suite
// does not run as root.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("this test starts the worker as uid 65534 and sets file owners: run the e2e suite as root (sudo go test ./e2e/)")
	}
}

// workerAs starts the worker as uid:gid with no supplementary groups. The
// binary's directory is opened to others so that uid can run it.
func workerAs(t *testing.T, uid, gid uint32, root string, args ...string) *mcp.ClientSession {
	t.Helper()
	if err := os.Chmod(filepath.Dir(workerBin), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(workerBin, append([]string{"--root", root}, args...)...)
	cmd.Env = []string{}
	cmd.Stderr = &testWriter{t: t}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "fsmcp-e2e", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect the worker as %d:%d: %v", uid, gid, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// reachableDir is a fresh directory owned by uid:gid with mode perm, whose
// ancestors (the test's temporary directories) others may traverse.
func reachableDir(t *testing.T, uid, gid int, perm os.FileMode) string {
	t.Helper()
	base := t.TempDir()
	for _, d := range []string{filepath.Dir(base), base} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Join(base, "root")
	if err := os.Mkdir(dir, perm); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, perm); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, uid, gid); err != nil {
		t.Fatal(err)
	}
	return dir
}

// plant writes a file with an owner and mode (set after the write, so no
// umask applies).
func plant(t *testing.T, path, text string, uid, gid int, perm os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(path, uid, gid); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, perm); err != nil {
		t.Fatal(err)
	}
}

// snapshot describes every entry under dirs: name, type, mode, owner,
// inode, size, contents and extended attributes, so a test can assert that
// nothing on disk changed.
func snapshot(t *testing.T, dirs ...string) string {
	t.Helper()
	var b strings.Builder
	for _, dir := range dirs {
		filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			var st unix.Stat_t
			if err := unix.Lstat(p, &st); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "%s %o %d:%d ino=%d size=%d", p, st.Mode, st.Uid, st.Gid, st.Ino, st.Size)
			if d.Type().IsRegular() {
				data, _ := os.ReadFile(p)
				fmt.Fprintf(&b, " %q", data)
			}
			if d.Type()&os.ModeSymlink == 0 {
				fmt.Fprintf(&b, " %s", xattrs(t, p))
			}
			b.WriteString("; ")
			return nil
		})
	}
	return b.String()
}

// xattrs lists path's extended attributes as name=hex, sorted.
func xattrs(t *testing.T, path string) string {
	t.Helper()
	buf := make([]byte, 64<<10)
	n, err := unix.Listxattr(path, buf)
	if err != nil {
		t.Fatalf("listxattr: %v", err)
	}
	var out []string
	for _, name := range strings.Split(strings.TrimSuffix(string(buf[:n]), "\x00"), "\x00") {
		if name == "" {
			continue
		}
		v := make([]byte, 64<<10)
		m, err := unix.Getxattr(path, name, v)
		if err != nil {
			t.Fatalf("getxattr %s: %v", name, err)
		}
		out = append(out, fmt.Sprintf("%s=%x", name, v[:m]))
	}
	slices.Sort(out)
	return "[" + strings.Join(out, " ") + "]"
}

// TestWriteAsUnprivilegedUser runs the worker as uid 65534: a destination
// this process may not write is refused with its documented text and left
// alone; one whose owner it could not keep fails with "write failed" and is
// left alone; a new file is 0600 and a replaced own file keeps its mode.
func TestWriteAsUnprivilegedUser(t *testing.T) {
	needRoot(t)
	root := reachableDir(t, nobody, nobody, 0o755)
	plant(t, filepath.Join(root, "mine.md"), "mine", nobody, nobody, 0o644)
	plant(t, filepath.Join(root, "readonly.md"), "read only", nobody, nobody, 0o444)
	plant(t, filepath.Join(root, "roots.md"), "root's", 0, 0, 0o644)
	plant(t, filepath.Join(root, "group.md"), "root's, group-writable", 0, nobody, 0o664)
	plant(t, filepath.Join(root, "nobodys-setgid.md"), "group 0, set-group-id", nobody, 0, 0o2664)
	if err := unix.Mkfifo(filepath.Join(root, "fifo.md"), 0o666); err != nil {
		t.Fatal(err)
	}
	os.Chown(filepath.Join(root, "fifo.md"), nobody, nobody)
	cs := workerAs(t, nobody, nobody, root, "--include", "*.md")

	r := ok(t, cs, "write_text_file", map[string]any{"path": "new.md", "content": "new"})
	if r.obj["bytes"] != float64(3) {
		t.Errorf("write result %v", r.obj)
	}
	var st unix.Stat_t
	if err := unix.Stat(filepath.Join(root, "new.md"), &st); err != nil || st.Mode&0o7777 != 0o600 || st.Uid != nobody || st.Gid != nobody {
		t.Errorf("new file %o %d:%d (%v), want 0600 65534:65534", st.Mode&0o7777, st.Uid, st.Gid, err)
	}
	ok(t, cs, "write_text_file", map[string]any{"path": "mine.md", "content": "replaced"})
	if err := unix.Stat(filepath.Join(root, "mine.md"), &st); err != nil || st.Mode&0o7777 != 0o644 || st.Uid != nobody {
		t.Errorf("replaced file %o %d (%v), want 0644 owned by 65534", st.Mode&0o7777, st.Uid, err)
	}

	// A reader blocked opening the FIFO must stay blocked: the write never
	// opens it.
	fifoOpened := make(chan struct{})
	go func() {
		if f, err := os.Open(filepath.Join(root, "fifo.md")); err == nil {
			f.Close()
		}
		close(fifoOpened)
	}()
	time.Sleep(50 * time.Millisecond)
	for _, tt := range []struct{ path, want string }{
		{"readonly.md", errWriteDest},
		{"roots.md", errWriteDest},
		{"fifo.md", errWriteDest},
		// Writable through the group, but a new file cannot be given
		// root's ownership by this user.
		{"group.md", errWriteFailed},
		// Its own file, but not a member of group 0: the group cannot
		// be kept (the set-group-id bit is dropped in any case).
		{"nobodys-setgid.md", errWriteFailed},
	} {
		t.Run(tt.path, func(t *testing.T) {
			before := snapshot(t, root)
			r := call(t, cs, "write_text_file", map[string]any{"path": tt.path, "content": "overwritten"})
			if !r.isError || r.text != tt.want {
				t.Errorf("write %s: isError=%v %q, want %q", tt.path, r.isError, r.text, tt.want)
			}
			if after := snapshot(t, root); after != before {
				t.Errorf("a refused write changed the disk:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
	select {
	case <-fifoOpened:
		t.Error("the write opened the FIFO: its blocked reader woke")
	case <-time.After(100 * time.Millisecond):
	}
	w, err := os.OpenFile(filepath.Join(root, "fifo.md"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	<-fifoOpened
	assertNoTemp(t, root)

	// A root the user may not write: its own file there is writable, but
	// the temporary file cannot be made, so the write fails and changes
	// nothing.
	locked := reachableDir(t, 0, 0, 0o755)
	plant(t, filepath.Join(locked, "mine.md"), "mine", nobody, nobody, 0o644)
	cs = workerAs(t, nobody, nobody, locked, "--include", "*.md")
	before := snapshot(t, locked)
	r = call(t, cs, "write_text_file", map[string]any{"path": "mine.md", "content": "x"})
	if !r.isError || r.text != errWriteFailed {
		t.Errorf("write in an unwritable root: isError=%v %q, want %q", r.isError, r.text, errWriteFailed)
	}
	if after := snapshot(t, locked); after != before {
		t.Errorf("the failed write changed the disk:\nbefore %s\nafter  %s", before, after)
	}
}

// posixACL encodes a system.posix_acl_access value: version 2, then (tag,
// perm, id) entries in the kernel's order (user_obj, users, group_obj,
// groups, mask, other).
func posixACL(entries ...[3]uint32) []byte {
	b := binary.LittleEndian.AppendUint32(nil, 2)
	for _, e := range entries {
		b = binary.LittleEndian.AppendUint16(b, uint16(e[0]))
		b = binary.LittleEndian.AppendUint16(b, uint16(e[1]))
		b = binary.LittleEndian.AppendUint32(b, e[2])
	}
	return b
}

// TestWriteKeepsOwnerAndAttributes: the worker runs as root and replaces a
// file owned by another user that carries user.* attributes and a POSIX
// ACL; the new file keeps owner, group, mode, attributes and ACL, and is a
// new inode holding the new bytes.
func TestWriteKeepsOwnerAndAttributes(t *testing.T) {
	needRoot(t)
	root := tree(t, nil)
	p := filepath.Join(root, "shared.md")
	plant(t, p, "theirs", nobody, nobody, 0o640)
	const none = 0xffffffff
	acl := posixACL([3]uint32{0x01, 6, none}, [3]uint32{0x02, 6, 1000}, [3]uint32{0x04, 4, none},
		[3]uint32{0x08, 4, 100}, [3]uint32{0x10, 6, none}, [3]uint32{0x20, 0, none})
	for name, v := range map[string][]byte{"user.origin": []byte("their editor"), "user.flag": nil, "system.posix_acl_access": acl} {
		if err := unix.Setxattr(p, name, v, 0); err != nil {
			t.Fatalf("setxattr %s: %v (the test's temporary directory needs xattr and ACL support, e.g. ext4; set TMPDIR to such a filesystem)", name, err)
		}
	}
	var before unix.Stat_t
	unix.Stat(p, &before)
	wantAttrs := xattrs(t, p)
	cs := worker(t, root, "--include", "**")
	ok(t, cs, "write_text_file", map[string]any{"path": "shared.md", "content": "ours"})
	var after unix.Stat_t
	if err := unix.Stat(p, &after); err != nil {
		t.Fatal(err)
	}
	if after.Ino == before.Ino {
		t.Error("the file was written in place, not replaced")
	}
	if after.Uid != nobody || after.Gid != nobody || after.Mode != before.Mode {
		t.Errorf("replaced file %o %d:%d, want %o 65534:65534", after.Mode, after.Uid, after.Gid, before.Mode)
	}
	if got := xattrs(t, p); got != wantAttrs {
		t.Errorf("attributes %s, want %s", got, wantAttrs)
	}
	if b, _ := os.ReadFile(p); !bytes.Equal(b, []byte("ours")) {
		t.Errorf("contents %q", b)
	}
}
