//go:build linux

package confine

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// posixACL encodes a system.posix_acl_access or _default value: version 2,
// then (tag, perm, id) entries in the kernel's order.
func posixACL(entries ...[3]uint32) []byte {
	b := binary.LittleEndian.AppendUint32(nil, 2)
	for _, e := range entries {
		b = binary.LittleEndian.AppendUint16(b, uint16(e[0]))
		b = binary.LittleEndian.AppendUint16(b, uint16(e[1]))
		b = binary.LittleEndian.AppendUint32(b, e[2])
	}
	return b
}

const (
	aclUserObj, aclUser, aclGroupObj, aclMask, aclOther = 0x01, 0x02, 0x04, 0x10, 0x20
	aclNoID                                             = 0xffffffff
	nobody                                              = 65534
	fsImmutableFL                                       = 0x10 // FS_IMMUTABLE_FL, linux/fs.h
)

// An access ACL granting uid 65534 read and write, and the mode it implies
// (group bits are the mask).
var (
	nobodyACL = posixACL([3]uint32{aclUserObj, 6, aclNoID}, [3]uint32{aclUser, 6, nobody},
		[3]uint32{aclGroupObj, 4, aclNoID}, [3]uint32{aclMask, 6, aclNoID}, [3]uint32{aclOther, 0, aclNoID})
	nobodyDefaultACL = posixACL([3]uint32{aclUserObj, 7, aclNoID}, [3]uint32{aclUser, 6, nobody},
		[3]uint32{aclGroupObj, 5, aclNoID}, [3]uint32{aclMask, 7, aclNoID}, [3]uint32{aclOther, 5, aclNoID})
)

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("this case sets owners, devices and flags: run it as root (sudo go test ./worker/confine/)")
	}
}

func lstat(t *testing.T, p string) *unix.Stat_t {
	t.Helper()
	var st unix.Stat_t
	must(t, unix.Lstat(p, &st))
	return &st
}

func xattrOf(t *testing.T, p, name string) []byte {
	t.Helper()
	b, err := getXattr(func(b []byte) (int, error) { return unix.Lgetxattr(p, name, b) })
	if err == unix.ENODATA {
		return nil
	}
	must(t, err)
	return b
}

func setXattr(t *testing.T, p, name string, v []byte) {
	t.Helper()
	if err := unix.Setxattr(p, name, v, 0); err != nil {
		t.Fatalf("setxattr %s: %v (the test filesystem needs xattr and ACL support, e.g. ext4)", name, err)
	}
}

func TestWriteFileAtomic(t *testing.T) {
	needRoot(t)
	tests := []struct {
		name  string
		setup func(t *testing.T, root, outside string)
		hook  func(root string)
		want  error
		check func(t *testing.T, root, outside string)
	}{
		{
			name: "create gives 0600",
			check: func(t *testing.T, root, _ string) {
				if st := lstat(t, filepath.Join(root, "dst")); st.Mode != unix.S_IFREG|0o600 {
					t.Errorf("mode %o, want regular 0600", st.Mode)
				}
			},
		},
		{
			name: "create under a default ACL is still 0600",
			setup: func(t *testing.T, root, _ string) {
				setXattr(t, root, "system.posix_acl_default", nobodyDefaultACL)
			},
			check: func(t *testing.T, root, _ string) {
				if st := lstat(t, filepath.Join(root, "dst")); st.Mode&0o7777 != 0o600 {
					t.Errorf("mode %o, want 0600", st.Mode&0o7777)
				}
			},
		},
		{
			name: "replace",
			setup: func(t *testing.T, root, _ string) {
				must(t, os.WriteFile(filepath.Join(root, "dst"), []byte("old content that is longer"), 0o644))
			},
		},
		{
			name: "keeps mode 0640",
			setup: func(t *testing.T, root, _ string) {
				p := filepath.Join(root, "dst")
				must(t, os.WriteFile(p, []byte("old"), 0o600))
				must(t, os.Chmod(p, 0o640))
			},
			check: func(t *testing.T, root, _ string) {
				if st := lstat(t, filepath.Join(root, "dst")); st.Mode&0o7777 != 0o640 {
					t.Errorf("mode %o, want 0640", st.Mode&0o7777)
				}
			},
		},
		{
			name: "keeps set-id bits and 0755",
			setup: func(t *testing.T, root, _ string) {
				p := filepath.Join(root, "dst")
				must(t, os.WriteFile(p, []byte("old"), 0o600))
				must(t, unix.Chmod(p, 0o6755))
			},
			check: func(t *testing.T, root, _ string) {
				if st := lstat(t, filepath.Join(root, "dst")); st.Mode&0o7777 != 0o6755 {
					t.Errorf("mode %o, want 6755", st.Mode&0o7777)
				}
			},
		},
		{
			name: "keeps another user's owner and group",
			setup: func(t *testing.T, root, _ string) {
				p := filepath.Join(root, "dst")
				must(t, os.WriteFile(p, []byte("old"), 0o640))
				must(t, os.Chown(p, nobody, nobody))
			},
			check: func(t *testing.T, root, _ string) {
				if st := lstat(t, filepath.Join(root, "dst")); st.Uid != nobody || st.Gid != nobody || st.Mode&0o7777 != 0o640 {
					t.Errorf("owner %d:%d mode %o, want 65534:65534 0640", st.Uid, st.Gid, st.Mode&0o7777)
				}
			},
		},
		{
			name: "keeps extended attributes and the ACL",
			setup: func(t *testing.T, root, _ string) {
				p := filepath.Join(root, "dst")
				must(t, os.WriteFile(p, []byte("old"), 0o640))
				setXattr(t, p, "user.origin", []byte("kept"))
				setXattr(t, p, "user.empty", nil)
				setXattr(t, p, "system.posix_acl_access", nobodyACL)
			},
			check: func(t *testing.T, root, _ string) {
				p := filepath.Join(root, "dst")
				if got := xattrOf(t, p, "user.origin"); string(got) != "kept" {
					t.Errorf("user.origin = %q", got)
				}
				if got := xattrOf(t, p, "user.empty"); got == nil {
					t.Error("user.empty dropped")
				}
				if got := xattrOf(t, p, "system.posix_acl_access"); !bytes.Equal(got, nobodyACL) {
					t.Errorf("ACL %x, want %x", got, nobodyACL)
				}
				if st := lstat(t, p); st.Mode&0o7777 != 0o660 {
					t.Errorf("mode %o, want 0660 (the ACL's mask)", st.Mode&0o7777)
				}
			},
		},
		{
			name: "an ACL the destination lacks is not inherited from the directory",
			setup: func(t *testing.T, root, _ string) {
				must(t, os.WriteFile(filepath.Join(root, "dst"), []byte("old"), 0o644))
				setXattr(t, root, "system.posix_acl_default", nobodyDefaultACL)
			},
			check: func(t *testing.T, root, _ string) {
				p := filepath.Join(root, "dst")
				if got := xattrOf(t, p, "system.posix_acl_access"); got != nil {
					t.Errorf("ACL %x appeared", got)
				}
				if st := lstat(t, p); st.Mode&0o7777 != 0o644 {
					t.Errorf("mode %o, want 0644", st.Mode&0o7777)
				}
			},
		},
		{
			name: "symlink to outside refused",
			setup: func(t *testing.T, root, outside string) {
				must(t, os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(root, "dst")))
			},
			want: ErrNotWritable,
		},
		{
			name: "symlink inside refused",
			setup: func(t *testing.T, root, _ string) {
				must(t, os.Symlink("f.txt", filepath.Join(root, "dst")))
			},
			want: ErrNotWritable,
		},
		{
			name: "dangling symlink refused",
			setup: func(t *testing.T, root, _ string) {
				must(t, os.Symlink("nowhere-else", filepath.Join(root, "dst")))
			},
			want: ErrNotWritable,
		},
		{
			name: "hard link is replaced, other link untouched",
			setup: func(t *testing.T, root, outside string) {
				must(t, os.Link(filepath.Join(outside, "secret.txt"), filepath.Join(root, "dst")))
			},
			check: func(t *testing.T, root, outside string) {
				if got := readString(t, filepath.Join(outside, "secret.txt")); got != outsideBytes {
					t.Errorf("other link changed to %q", got)
				}
			},
		},
		{
			name: "directory refused",
			setup: func(t *testing.T, root, _ string) {
				must(t, os.Mkdir(filepath.Join(root, "dst"), 0o755))
			},
			want: ErrNotWritable,
		},
		{
			name: "fifo refused",
			setup: func(t *testing.T, root, _ string) {
				must(t, unix.Mkfifo(filepath.Join(root, "dst"), 0o666))
			},
			want: ErrNotWritable,
		},
		{
			name: "device refused",
			setup: func(t *testing.T, root, _ string) {
				must(t, unix.Mknod(filepath.Join(root, "dst"), unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))))
			},
			want: ErrNotWritable,
		},
		{
			name: "immutable file refused",
			setup: func(t *testing.T, root, _ string) {
				p := filepath.Join(root, "dst")
				must(t, os.WriteFile(p, []byte("old"), 0o666))
				setFlags(t, p, fsImmutableFL)
				t.Cleanup(func() { setFlags(t, p, 0) })
			},
			want: ErrNotWritable,
		},
		{
			name: "destination becomes a directory before rename",
			hook: func(root string) { os.Mkdir(filepath.Join(root, "dst"), 0o755) },
			want: ErrNotWritable,
		},
		{
			name: "destination becomes a non-empty directory before rename",
			hook: func(root string) {
				os.Mkdir(filepath.Join(root, "dst"), 0o755)
				os.WriteFile(filepath.Join(root, "dst", "x"), nil, 0o644)
			},
			want: ErrNotWritable,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root, outside := fixture(t)
			r, err := Open(root)
			must(t, err)
			defer r.Close()
			if tt.setup != nil {
				tt.setup(t, root, outside)
			}
			before, _ := os.Lstat(filepath.Join(root, "dst"))
			if tt.hook != nil {
				testHookBeforeRename = func() { tt.hook(root) }
				defer func() { testHookBeforeRename = nil }()
			}
			data := []byte("new data\n")
			err = r.WriteFileAtomic("dst", data)
			checkErr(t, err, tt.want, root, outside)
			noTemp(t, root)
			if tt.want != nil {
				after, err := os.Lstat(filepath.Join(root, "dst"))
				if before != nil && (err != nil || !os.SameFile(before, after) || !after.ModTime().Equal(before.ModTime()) || after.Size() != before.Size()) {
					t.Error("destination changed on failure")
				}
				if got := readString(t, filepath.Join(outside, "secret.txt")); got != outsideBytes {
					t.Errorf("outside file changed to %q", got)
				}
				return
			}
			if got := readString(t, filepath.Join(root, "dst")); got != string(data) {
				t.Fatalf("dst = %q", got)
			}
			after, err := os.Lstat(filepath.Join(root, "dst"))
			must(t, err)
			if before != nil && os.SameFile(before, after) {
				t.Error("destination was written in place, not replaced")
			}
			if tt.check != nil {
				tt.check(t, root, outside)
			}
		})
	}

	t.Run("invalid names", func(t *testing.T) {
		root, outside := fixture(t)
		r, err := Open(root)
		must(t, err)
		defer r.Close()
		for _, name := range []string{"", ".", "..", "d/x", "/x", "a\x00b"} {
			err := r.WriteFileAtomic(name, []byte("x"))
			checkErr(t, err, errInvalidPath, root, outside)
		}
		noTemp(t, root)
	})

	t.Run("empty data", func(t *testing.T) {
		root, _ := fixture(t)
		r, err := Open(root)
		must(t, err)
		defer r.Close()
		must(t, r.WriteFileAtomic("f.txt", nil))
		if got := readString(t, filepath.Join(root, "f.txt")); got != "" {
			t.Fatalf("f.txt = %q", got)
		}
		noTemp(t, root)
	})
}

// TestWriteFIFONotOpened: refusing a FIFO destination never opens it, so a
// reader blocked opening it stays blocked.
func TestWriteFIFONotOpened(t *testing.T) {
	root, outside := fixture(t)
	r, err := Open(root)
	must(t, err)
	defer r.Close()
	p := filepath.Join(root, "dst")
	must(t, unix.Mkfifo(p, 0o666))
	opened := make(chan struct{})
	go func() {
		f, err := os.Open(p) // blocks until a writer opens the FIFO
		if err == nil {
			f.Close()
		}
		close(opened)
	}()
	time.Sleep(50 * time.Millisecond) // let the reader block in open
	checkErr(t, r.WriteFileAtomic("dst", []byte("x")), ErrNotWritable, root, outside)
	select {
	case <-opened:
		t.Fatal("the write opened the FIFO: its blocked reader woke")
	case <-time.After(200 * time.Millisecond):
	}
	w, err := os.OpenFile(p, os.O_WRONLY, 0) // release the reader
	must(t, err)
	w.Close()
	<-opened
}

func setFlags(t *testing.T, p string, flags int) {
	t.Helper()
	f, err := os.Open(p)
	must(t, err)
	defer f.Close()
	if err := unix.IoctlSetPointerInt(int(f.Fd()), unix.FS_IOC_SETFLAGS, flags); err != nil {
		t.Fatalf("FS_IOC_SETFLAGS on %s: %v (needs root on ext4, xfs or btrfs)", p, err)
	}
}
