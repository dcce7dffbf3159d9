//go:build linux

package confine

import (
	"bytes"
	"encoding/binary"
	"errors"
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
			name:  "drops set-uid, keeps 0755",
			setup: func(t *testing.T, root, _ string) { plantMode(t, filepath.Join(root, "dst"), 0o4755) },
			check: func(t *testing.T, root, _ string) { wantMode(t, filepath.Join(root, "dst"), 0o755) },
		},
		{
			name:  "drops set-gid with group execute",
			setup: func(t *testing.T, root, _ string) { plantMode(t, filepath.Join(root, "dst"), 0o2750) },
			check: func(t *testing.T, root, _ string) { wantMode(t, filepath.Join(root, "dst"), 0o750) },
		},
		{
			name:  "drops set-gid without group execute",
			setup: func(t *testing.T, root, _ string) { plantMode(t, filepath.Join(root, "dst"), 0o2640) },
			check: func(t *testing.T, root, _ string) { wantMode(t, filepath.Join(root, "dst"), 0o640) },
		},
		{
			name: "drops both set-id bits of another user's file, keeps the sticky bit",
			setup: func(t *testing.T, root, _ string) {
				p := filepath.Join(root, "dst")
				plantMode(t, p, 0o7755)
				must(t, os.Chown(p, nobody, nobody))
				must(t, unix.Chmod(p, 0o7755)) // chown cleared the set-id bits
			},
			check: func(t *testing.T, root, _ string) {
				p := filepath.Join(root, "dst")
				wantMode(t, p, 0o1755)
				if st := lstat(t, p); st.Uid != nobody || st.Gid != nobody {
					t.Errorf("owner %d:%d, want 65534:65534", st.Uid, st.Gid)
				}
			},
		},
		{
			name: "drops a file capability, keeps other attributes",
			setup: func(t *testing.T, root, _ string) {
				p := filepath.Join(root, "dst")
				plantMode(t, p, 0o755)
				setXattr(t, p, "user.origin", []byte("kept"))
				setXattr(t, p, xattrCapability, netBindCapability)
			},
			check: func(t *testing.T, root, _ string) {
				p := filepath.Join(root, "dst")
				if got := xattrOf(t, p, xattrCapability); got != nil {
					t.Errorf("capability %x kept", got)
				}
				if got := xattrOf(t, p, "user.origin"); string(got) != "kept" {
					t.Errorf("user.origin = %q", got)
				}
				wantMode(t, p, 0o755)
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
	}
	for _, tt := range tests {
		renames(t, tt.name, func(t *testing.T, plain bool) {
			root, outside := fixture(t)
			r, err := Open(root)
			must(t, err)
			defer r.Close()
			r.plainRename.Store(plain)
			if tt.setup != nil {
				tt.setup(t, root, outside)
			}
			before, _ := os.Lstat(filepath.Join(root, "dst"))
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

// renames runs f as a subtest named name once with renameat2's flags and
// once the plain way, as on a filesystem that refuses them.
func renames(t *testing.T, name string, f func(t *testing.T, plain bool)) {
	t.Helper()
	for _, plain := range []bool{false, true} {
		way := "/renameat2"
		if plain {
			way = "/plain"
		}
		t.Run(name+way, func(t *testing.T) { f(t, plain) })
	}
}

// plantMode writes an old file at p and gives it mode (after the write,
// so no umask applies).
func plantMode(t *testing.T, p string, mode uint32) {
	t.Helper()
	must(t, os.WriteFile(p, []byte("old"), 0o600))
	must(t, unix.Chmod(p, mode))
	if st := lstat(t, p); st.Mode&0o7777 != mode {
		t.Fatalf("planted mode %o, want %o", st.Mode&0o7777, mode)
	}
}

func wantMode(t *testing.T, p string, mode uint32) {
	t.Helper()
	if st := lstat(t, p); st.Mode&0o7777 != mode {
		t.Errorf("mode %o, want %o", st.Mode&0o7777, mode)
	}
}

// netBindCapability is a security.capability value (VFS_CAP_REVISION_2,
// effective) granting CAP_NET_BIND_SERVICE, as setcap writes it.
var netBindCapability = []byte{0x01, 0, 0, 0x02, 0, 0x04, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}

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

// TestReplaceRaces changes the entry at the destination name between a
// write's check and its replacement, as another process may: replace
// finds that the name no longer holds what was checked, replaces nothing,
// leaves that entry where it is and removes its temp file. The same
// inode put back under the name (through another link) is the file
// checked, and is replaced.
func TestReplaceRaces(t *testing.T) {
	needRoot(t)
	regular := func(t *testing.T, root string) { plantMode(t, filepath.Join(root, "dst"), 0o644) }
	swapIn := func(t *testing.T, root string, make func(p string) error) {
		t.Helper()
		p := filepath.Join(root, "swapped")
		must(t, make(p))
		must(t, os.Rename(p, filepath.Join(root, "dst")))
	}
	tests := []struct {
		name  string
		setup func(t *testing.T, root string) // nil: no destination at the check
		swap  func(t *testing.T, root string)
		want  error
	}{
		{"a FIFO swapped in", regular, func(t *testing.T, root string) {
			swapIn(t, root, func(p string) error { return unix.Mkfifo(p, 0o666) })
		}, errRaced},
		{"another user's read-only file swapped in", regular, func(t *testing.T, root string) {
			swapIn(t, root, func(p string) error {
				if err := os.WriteFile(p, []byte("theirs"), 0o444); err != nil {
					return err
				}
				return os.Chown(p, nobody, nobody)
			})
		}, errRaced},
		{"a writable file swapped in", regular, func(t *testing.T, root string) {
			swapIn(t, root, func(p string) error { return os.WriteFile(p, []byte("saved meanwhile"), 0o644) })
		}, errRaced},
		{"a directory in place of the file", regular, func(t *testing.T, root string) {
			must(t, os.Remove(filepath.Join(root, "dst")))
			must(t, os.Mkdir(filepath.Join(root, "dst"), 0o755))
			must(t, os.WriteFile(filepath.Join(root, "dst", "x"), nil, 0o644))
		}, errRaced},
		{"the file removed", regular, func(t *testing.T, root string) {
			must(t, os.Remove(filepath.Join(root, "dst")))
		}, errRaced},
		{"a FIFO where there was nothing", nil, func(t *testing.T, root string) {
			must(t, unix.Mkfifo(filepath.Join(root, "dst"), 0o666))
		}, errRaced},
		{"a directory where there was nothing", nil, func(t *testing.T, root string) {
			must(t, os.Mkdir(filepath.Join(root, "dst"), 0o755))
		}, errRaced},
		{"the file checked, through another link", regular, func(t *testing.T, root string) {
			must(t, os.Link(filepath.Join(root, "dst"), filepath.Join(root, "swapped")))
			must(t, os.Rename(filepath.Join(root, "swapped"), filepath.Join(root, "dst")))
		}, nil},
	}
	for _, tt := range tests {
		renames(t, tt.name, func(t *testing.T, plain bool) {
			root, outside := fixture(t)
			r, err := Open(root)
			must(t, err)
			defer r.Close()
			r.plainRename.Store(plain)
			if tt.setup != nil {
				tt.setup(t, root)
			}
			rootfd, err := r.h.acquire()
			must(t, err)
			defer r.h.release()
			dest, err := inspectDestination(rootfd, "dst")
			must(t, err)
			defer dest.close()
			tmp, err := r.writeTemp(rootfd, []byte("new data\n"), dest)
			must(t, err)
			tt.swap(t, root)
			p := filepath.Join(root, "dst")
			swapped, _ := os.Lstat(p)
			err = r.replace(rootfd, tmp, "dst", dest)
			noTemp(t, root)
			if tt.want == nil {
				checkErr(t, err, nil, root, outside)
				if got := readString(t, p); got != "new data\n" {
					t.Errorf("dst = %q, want the new data", got)
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("replace = %v, want %v", err, tt.want)
			}
			after, err := os.Lstat(p)
			switch {
			case swapped == nil && err == nil:
				t.Errorf("dst appeared (%v)", after.Mode())
			case swapped != nil && (err != nil || !os.SameFile(swapped, after) || after.Mode() != swapped.Mode()):
				t.Errorf("the entry at dst changed: %v (%v), want the one swapped in (%v)", after, err, swapped.Mode())
			}
			if swapped != nil && swapped.Mode().IsRegular() && readString(t, p) == "new data\n" {
				t.Error("the file swapped in holds the new data")
			}
		})
	}
}
