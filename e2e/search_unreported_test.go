//go:build linux

package e2e

// Changes no inotify watch reports: a mount or unmount inside
// the scope, a write through a hard link made after the walk, an edit made
// by another client of a network or FUSE filesystem. A fresh search_text
// answers from the tree as it is at call time, as search_files and
// list_directory do; a later page continues the same traversal or fails
// with the changed-cursor error, never answers from the tree as it was.

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fsmcp/fsmcp/e2e/internal/fusefs"
)

// mountFS mounts src (a device name, or a directory with unix.MS_BIND) at
// dir as fstype with flags, until the test ends or unmountFS. A machine
// that refuses fails the test with the command that would do it.
func mountFS(t *testing.T, src, dir, fstype string, flags uintptr) {
	t.Helper()
	if err := unix.Mount(src, dir, fstype, flags, ""); err != nil {
		cmd := "mount -t " + fstype + " " + src + " " + dir
		if flags&unix.MS_BIND != 0 {
			cmd = "mount --bind " + src + " " + dir
		}
		t.Fatalf("%s: %v; mounting needs root (CAP_SYS_ADMIN): run the e2e tests as root, or in a container started with --cap-add SYS_ADMIN", cmd, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil && err != unix.EINVAL {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
}

// unmountFS undoes mountFS at once.
func unmountFS(t *testing.T, dir string) {
	t.Helper()
	if err := unix.Unmount(dir, 0); err != nil {
		t.Fatalf("umount %s: %v", dir, err)
	}
}

// agree checks that a fresh search_text for "needle" in scope finds
// exactly want, that search_files for ".txt" there finds exactly files,
// and that list_directory of each directory named in dirs lists exactly
// its entries there: the three tools see one tree, the one at call time.
func agree(t *testing.T, cs *mcp.ClientSession, scope string, want []textHit, files []string, dirs map[string][]string) {
	t.Helper()
	slices.SortFunc(want, byPath)
	hits, _, _ := searchAll(t, cs, map[string]any{"query": "needle", "path": scope}, 1<<20)
	sameHits(t, hits, want)
	var got []string
	for _, it := range items[struct{ Path string }](t, ok(t, cs, "search_files", map[string]any{"query": ".txt", "path": scope, "limit": 1000})) {
		got = append(got, it.Path)
	}
	slices.Sort(files)
	if !slices.Equal(got, files) {
		t.Fatalf("search_files in %q: %v, want %v", scope, got, files)
	}
	for dir, names := range dirs {
		var listed []string
		for _, e := range items[entryItem](t, ok(t, cs, "list_directory", map[string]any{"path": dir, "limit": 1000})) {
			listed = append(listed, e.Name)
		}
		slices.Sort(names)
		if !slices.Equal(listed, names) {
			t.Fatalf("list_directory %q: %v, want %v", dir, listed, names)
		}
	}
}

// TestSearchUnreportedMount: a fresh search_text after a filesystem is
// mounted inside its scope, or one mounted there is unmounted, finds what
// the scope holds then: neither an error nor the files the mount hid or
// showed before.
func TestSearchUnreportedMount(t *testing.T) {
	root := tree(t, map[string]string{
		"s/keep.txt":   "needle keep\n",
		"s/m/old.txt":  "needle old\n",
		"s/e/.hold":    "",
		"outside.txt":  "needle outside\n",
		"s/m2/old.txt": "needle under the bind\n",
	})
	bound := t.TempDir()
	writeFile(t, filepath.Join(bound, "x.txt"), "needle bound\n")
	cs := worker(t, root, "--include", "**")
	keep := textHit{"s/keep.txt", 1, "needle keep"}
	old := textHit{"s/m/old.txt", 1, "needle old"}
	under := textHit{"s/m2/old.txt", 1, "needle under the bind"}

	// A bind mount made before the first search, then removed.
	mountFS(t, bound, filepath.Join(root, "s/m2"), "", unix.MS_BIND)
	agree(t, cs, "s", []textHit{keep, old, {"s/m2/x.txt", 1, "needle bound"}},
		[]string{"s/keep.txt", "s/m/old.txt", "s/m2/x.txt"}, nil)
	unmountFS(t, filepath.Join(root, "s/m2"))
	agree(t, cs, "s", []textHit{keep, old, under},
		[]string{"s/keep.txt", "s/m/old.txt", "s/m2/old.txt"}, map[string][]string{"s/m2": {"old.txt"}})

	// A tmpfs mounted over a directory after the search, with a file
	// written into it; then unmounted.
	mountFS(t, "tmpfs", filepath.Join(root, "s/m"), "tmpfs", 0)
	writeFile(t, filepath.Join(root, "s/m/new.txt"), "needle new\n")
	agree(t, cs, "s", []textHit{keep, {"s/m/new.txt", 1, "needle new"}, under},
		[]string{"s/keep.txt", "s/m/new.txt", "s/m2/old.txt"}, map[string][]string{"s/m": {"new.txt"}})
	unmountFS(t, filepath.Join(root, "s/m"))
	agree(t, cs, "s", []textHit{keep, old, under},
		[]string{"s/keep.txt", "s/m/old.txt", "s/m2/old.txt"}, map[string][]string{"s/m": {"old.txt"}})

	// A tmpfs mounted over an empty directory: nothing the search read
	// before is hidden, only a file is added.
	mountFS(t, "tmpfs", filepath.Join(root, "s/e"), "tmpfs", 0)
	writeFile(t, filepath.Join(root, "s/e/new.txt"), "needle in e\n")
	agree(t, cs, "s", []textHit{keep, old, under, {"s/e/new.txt", 1, "needle in e"}},
		[]string{"s/e/new.txt", "s/keep.txt", "s/m/old.txt", "s/m2/old.txt"}, nil)
	agree(t, cs, "", []textHit{keep, old, under, {"s/e/new.txt", 1, "needle in e"}, {"outside.txt", 1, "needle outside"}},
		[]string{"outside.txt", "s/e/new.txt", "s/keep.txt", "s/m/old.txt", "s/m2/old.txt"}, nil)
}

// TestSearchUnreportedHardLink: a file with one link when a search
// walked it is linked from outside the root afterwards and rewritten
// through that name (no watch of its directory hears of either): a fresh
// search_text reads it as it is.
func TestSearchUnreportedHardLink(t *testing.T) {
	root := tree(t, map[string]string{
		"s/a.txt": "needle a\n",
		"s/b.txt": "plain b\n",
	})
	cs := worker(t, root, "--include", "**")
	files := []string{"s/a.txt", "s/b.txt"}
	agree(t, cs, "s", []textHit{{"s/a.txt", 1, "needle a"}}, files, nil)
	link := filepath.Join(t.TempDir(), "b-link")
	if err := os.Link(filepath.Join(root, "s/b.txt"), link); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(link, []byte("plain b\nneedle b, written elsewhere\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	agree(t, cs, "s", []textHit{{"s/a.txt", 1, "needle a"}, {"s/b.txt", 2, "needle b, written elsewhere"}}, files, nil)
	// Written again in place, same size: the identity moves all the same.
	if err := os.WriteFile(link, []byte("plain b\nneedle B, written elsewhere\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	agree(t, cs, "s", []textHit{{"s/a.txt", 1, "needle a"}, {"s/b.txt", 2, "needle B, written elsewhere"}}, files, nil)
}

// TestSearchUnreportedRemoteEdit: a FUSE filesystem that shows the edits of
// another client (made in its backing directory, behind the kernel's
// back, as another machine edits a network share) is searched as it is at
// call time: an edited file, a new file, a removed one, in a scope on that
// filesystem and in the whole root holding its mount.
func TestSearchUnreportedRemoteEdit(t *testing.T) {
	root := tree(t, map[string]string{"local.txt": "needle local\n", "remote/.keep": ""})
	share := tree(t, map[string]string{
		"a.txt":     "needle a\n",
		"sub/c.txt": "needle c\n",
		"gone.txt":  "needle gone\n",
	})
	fusefs.MountUncached(t, filepath.Join(root, "remote"), fusefs.NewRemote(share))
	cs := worker(t, root, "--include", "**")
	local := textHit{"local.txt", 1, "needle local"}
	agree(t, cs, "remote", []textHit{{"remote/a.txt", 1, "needle a"}, {"remote/gone.txt", 1, "needle gone"}, {"remote/sub/c.txt", 1, "needle c"}},
		[]string{"remote/a.txt", "remote/gone.txt", "remote/sub/c.txt"}, nil)
	agree(t, cs, "", []textHit{local, {"remote/a.txt", 1, "needle a"}, {"remote/gone.txt", 1, "needle gone"}, {"remote/sub/c.txt", 1, "needle c"}},
		[]string{"local.txt", "remote/a.txt", "remote/gone.txt", "remote/sub/c.txt"}, nil)

	writeFile(t, filepath.Join(share, "a.txt"), "needle a, edited by another client\n")
	writeFile(t, filepath.Join(share, "sub/d.txt"), "needle d\n")
	if err := os.Remove(filepath.Join(share, "gone.txt")); err != nil {
		t.Fatal(err)
	}
	want := []textHit{{"remote/a.txt", 1, "needle a, edited by another client"}, {"remote/sub/c.txt", 1, "needle c"}, {"remote/sub/d.txt", 1, "needle d"}}
	files := []string{"remote/a.txt", "remote/sub/c.txt", "remote/sub/d.txt"}
	agree(t, cs, "remote", want, files, map[string][]string{"remote/sub": {"c.txt", "d.txt"}})
	writeFile(t, filepath.Join(share, "sub/c.txt"), "needle C\n")
	want[1] = textHit{"remote/sub/c.txt", 1, "needle C"}
	agree(t, cs, "", append([]textHit{local}, want...), append([]string{"local.txt"}, files...), nil)
}

// TestSearchUnreportedLaterPage: between two pages of one traversal,
// a change no watch reports moves what the scope holds: the next page
// fails with the changed-cursor error rather than continue over the tree
// as it was (leaving out what the change added, keeping what it removed,
// or passing over an edit). Each first page ends inside a file padded
// past the page's scan budget, before the rest of the scope is read.
func TestSearchUnreportedLaterPage(t *testing.T) {
	pad := strings.Repeat("padding line of no interest to the search\n", 500) // 21 KB
	mkdir := func(t *testing.T, dir string) {
		t.Helper()
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name, scope string
		// setup prepares the root before the first page and returns
		// the change made between the pages.
		setup func(t *testing.T, root string) (edit func())
	}{
		{"tmpfs mounted over an empty directory", "s", func(t *testing.T, root string) func() {
			mkdir(t, filepath.Join(root, "s/m"))
			return func() {
				mountFS(t, "tmpfs", filepath.Join(root, "s/m"), "tmpfs", 0)
				writeFile(t, filepath.Join(root, "s/m/new.txt"), "needle new\n")
			}
		}},
		{"bind mount over a directory removed", "s", func(t *testing.T, root string) func() {
			writeFile(t, filepath.Join(root, "s/b/hidden.txt"), "needle under the bind\n")
			mountFS(t, t.TempDir(), filepath.Join(root, "s/b"), "", unix.MS_BIND)
			return func() { unmountFS(t, filepath.Join(root, "s/b")) }
		}},
		// s/0 sorts before s/a.txt: its file is read on the first page.
		{"remote edit below a mount point in scope", "s", func(t *testing.T, root string) func() {
			share := tree(t, map[string]string{"r.txt": "needle r\n"})
			mkdir(t, filepath.Join(root, "s/0"))
			fusefs.MountUncached(t, filepath.Join(root, "s/0"), fusefs.NewRemote(share))
			return func() { writeFile(t, filepath.Join(share, "r.txt"), "needle r, edited by another client\n") }
		}},
		{"remote edit in a scope on a FUSE filesystem", "s/0", func(t *testing.T, root string) func() {
			share := tree(t, map[string]string{"r.txt": "needle r\n", "z.txt": pad + "needle z\n"})
			mkdir(t, filepath.Join(root, "s/0"))
			fusefs.MountUncached(t, filepath.Join(root, "s/0"), fusefs.NewRemote(share))
			return func() { writeFile(t, filepath.Join(share, "r.txt"), "needle r, edited by another client\n") }
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := tree(t, map[string]string{"s/a.txt": pad + "needle a\n", "s/z.txt": "needle z\n"})
			edit := tc.setup(t, root)
			cs := worker(t, root, "--include", "**", "--max-scan-bytes", "16384")
			args := map[string]any{"query": "needle", "path": tc.scope}
			r := ok(t, cs, "search_text", args)
			if r.page.NextCursor == nil {
				t.Fatal("the first page ended the traversal: the case needs a second page")
			}
			edit()
			a := maps.Clone(args)
			a["cursor"] = *r.page.NextCursor
			fails(t, cs, "search_text", a, changed)
		})
	}
}
