//go:build !fsmcp_portable

package watch

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// openDir opens dir for the Set's calls, until the test ends.
func openDir(t *testing.T, dir string) int {
	t.Helper()
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return fd
}

// localTempDir is t.TempDir, which must be on a filesystem a Set answers
// for.
func localTempDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := local(openDir(t, dir)); err != nil {
		t.Fatalf("the temporary directory %s is on a filesystem whose changes may not reach inotify (%v): run the tests with TMPDIR on ext4, xfs, btrfs or tmpfs, e.g. TMPDIR=/dev/shm", dir, err)
	}
	return dir
}

// mount mounts src at dir (a tmpfs, or a bind mount with unix.MS_BIND)
// until the test ends; a machine that refuses fails the test with the
// command that would do it.
func mount(t *testing.T, src, dir, fstype string, flags uintptr) {
	t.Helper()
	if err := unix.Mount(src, dir, fstype, flags, ""); err != nil {
		t.Fatalf("mount %s at %s: %v; mounting needs root (CAP_SYS_ADMIN): run `sudo go test ./worker/watch/`", src, dir, err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
}

// TestMountChanged: a filesystem mounted or unmounted below, at or above
// the top of a tree the Set answers for is a change, reported once; one
// mounted or unmounted beside the tree is not.
func TestMountChanged(t *testing.T) {
	dir, beside := localTempDir(t), t.TempDir()
	top := filepath.Join(dir, "top")
	if err := os.MkdirAll(filepath.Join(top, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // what a failed step left mounted
		for _, at := range []string{filepath.Join(top, "sub"), top, dir, beside} {
			unix.Unmount(at, unix.MNT_DETACH)
		}
	})
	s := newSet(10)
	defer s.Close()
	// answer makes the Set answer for the tree at top, as it is then.
	answer := func() {
		t.Helper()
		fd := openDir(t, top)
		if err := s.Tree(fd); err != nil {
			t.Fatal(err)
		}
		if err := s.Dir(fd); err != nil {
			t.Fatal(err)
		}
	}
	// step mounts a tmpfs at at (or unmounts it) and checks what the Set
	// reports then, if check.
	step := func(what, at string, changed, check bool) {
		t.Helper()
		var err error
		if strings.HasPrefix(what, "mount") {
			err = unix.Mount("tmpfs", at, "tmpfs", 0, "")
		} else {
			err = unix.Unmount(at, unix.MNT_DETACH) // the Set holds it open
		}
		if err != nil {
			t.Fatalf("%s (%s): %v; mounting needs root (CAP_SYS_ADMIN): run `sudo go test ./worker/watch/`", what, at, err)
		}
		if !check {
			return
		}
		if got, err := s.Changed(); got != changed || err != nil {
			t.Fatalf("after a %s: Changed = %v, %v; want %v", what, got, err, changed)
		}
		if changed && s.Len() != 0 {
			t.Fatalf("after a %s the set holds %d watches, want none", what, s.Len())
		}
		if got, _ := s.Changed(); got {
			t.Fatalf("the %s was reported twice", what)
		}
	}
	answer()
	step("mount beside", beside, false, true)
	step("unmount beside", beside, false, true)
	step("mount below", filepath.Join(top, "sub"), true, true)
	step("unmount below", filepath.Join(top, "sub"), false, false) // nothing is answered for
	answer()
	step("mount at the top", top, true, true)
	answer() // the tree at top is the mounted one's
	step("unmount at the top", top, true, true)
	answer()
	step("mount above", dir, true, true)
	if err := os.Mkdir(top, 0o755); err != nil { // in the filesystem mounted above
		t.Fatal(err)
	}
	answer()
	step("unmount above", dir, true, true)
}

// TestTree: a Set answers for a tree on a local filesystem with no mount
// point below its top (a mount at the top itself is the tree's own), and
// refuses one with a mount point below, at any depth, and one on a
// filesystem that is not local; Along refuses a directory that is not
// local.
func TestTree(t *testing.T) {
	dir := localTempDir(t)
	for _, d := range []string{"plain/a", "bound/a/b", "top", "deep/x/y"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mount(t, t.TempDir(), filepath.Join(dir, "bound/a/b"), "", unix.MS_BIND)
	mount(t, "tmpfs", filepath.Join(dir, "top"), "tmpfs", 0)
	mount(t, "tmpfs", filepath.Join(dir, "deep/x/y"), "tmpfs", 0)
	for _, tc := range []struct {
		dir string
		ok  bool
	}{
		{filepath.Join(dir, "plain"), true},
		{filepath.Join(dir, "plain/a"), true},
		{filepath.Join(dir, "top"), true},
		{filepath.Join(dir, "bound"), false},
		{filepath.Join(dir, "bound/a"), false},
		{filepath.Join(dir, "bound/a/b"), true},
		{filepath.Join(dir, "deep"), false},
		{filepath.Join(dir, "deep/x/y"), true},
		{dir, false},
		{"/", false},
		{"/proc/self", false},
		{"/sys/kernel", false},
	} {
		s := newSet(10)
		err := s.Tree(openDir(t, tc.dir))
		s.Close()
		if (err == nil) != tc.ok {
			t.Errorf("Tree(%s) = %v, want ok %v", tc.dir, err, tc.ok)
		}
	}
	s := newSet(10)
	defer s.Close()
	if err := s.Along(openDir(t, "/proc"), "self"); err != ErrUnavailable {
		t.Errorf("Along in /proc: %v, want ErrUnavailable", err)
	}
	if err := s.Along(openDir(t, dir), "plain"); err != nil {
		t.Errorf("Along in %s: %v", dir, err)
	}
	for range 3 {
		if err := s.Tree(openDir(t, filepath.Join(dir, "plain"))); err != nil {
			t.Fatal(err)
		}
	}
	if len(s.trees) != 1 {
		t.Errorf("one tree checked three times is held %d times", len(s.trees))
	}
}

// TestAboutTree reads mount tables: the entries at, above and below the
// top concern the tree, those beside it (a sibling sharing its name's
// prefix) do not; escaped names are read as the names they stand for; a
// line that cannot be read makes the table unreadable.
func TestAboutTree(t *testing.T) {
	table := "26 1 254:0 / / rw - ext4 /dev/vda rw\n" +
		"40 26 0:37 / /srv/data rw - tmpfs tmpfs rw\n" +
		"41 26 0:38 / /srv/data2/x rw - tmpfs tmpfs rw\n" +
		"42 26 0:39 / /home/a\\040b/m rw - tmpfs tmpfs rw\n" +
		"43 26 0:40 /sub /home/c\\134d rw - tmpfs tmpfs rw\n"
	root := "26 1 254:0 / /\n"
	for _, tc := range []struct {
		table, top string
		mounts     string
		below, ok  bool
	}{
		{table, "/", table2(table), true, true},
		{table, "/srv", root + "40 26 0:37 / /srv/data\n41 26 0:38 / /srv/data2/x\n", true, true},
		{table, "/srv/data", root + "40 26 0:37 / /srv/data\n", false, true},
		{table, "/srv/dat", root, false, true},
		{table, "/srv/data2", root + "41 26 0:38 / /srv/data2/x\n", true, true},
		{table, "/srv/data/deeper", root + "40 26 0:37 / /srv/data\n", false, true},
		{table, "/home/a b", root + "42 26 0:39 / /home/a\\040b/m\n", true, true},
		{table, `/home/a\040b`, root, false, true},
		{table, `/home/c\d`, root + "43 26 0:40 /sub /home/c\\134d\n", false, true},
		{table, "/usr", root, false, true},
		{"26 1 254:0 /\n", "/usr", "", false, false},
	} {
		mounts, below, ok := aboutTree(tc.table, tc.top)
		if mounts != tc.mounts || below != tc.below || ok != tc.ok {
			t.Errorf("aboutTree(%q) = %q, %v, %v; want %q, %v, %v", tc.top, mounts, below, ok, tc.mounts, tc.below, tc.ok)
		}
	}
}

// table2 is each line of a mount table cut to its first five fields.
func table2(table string) string {
	var b strings.Builder
	for line := range strings.Lines(table) {
		b.WriteString(strings.Join(strings.Fields(line)[:5], " ") + "\n")
	}
	return b.String()
}
