//go:build linux

// Package fusefs mounts small FUSE file systems for the end-to-end tests:
// the cases local disk file systems cannot show (reads that never
// return, case-insensitive names) are served from the test process itself
// with github.com/hanwen/go-fuse/v2.
package fusefs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// Mount serves root at dir, an existing empty directory, until the test
// ends. A machine that cannot mount fails the test with the command that
// fixes it; it never skips.
//
// The cleanup cannot hang and leaves no mount behind, even when the test
// failed with calls stuck in the file system: it aborts the FUSE
// connection (every request still waiting fails), detaches the mount
// lazily, and waits a bounded time for the server to end.
func Mount(t testing.TB, dir string, root fs.InodeEmbedder) {
	t.Helper()
	mount(t, dir, root, nil)
}

// MountUncached is Mount with the kernel told to cache no entry and no
// attribute, so every lookup and stat reaches root: as a network
// filesystem mounted without attribute caching (NFS's noac) shows the
// edits of its other clients at the next call. See NewRemote.
func MountUncached(t testing.TB, dir string, root fs.InodeEmbedder) {
	t.Helper()
	var none time.Duration
	mount(t, dir, root, &none)
}

// mount is Mount with the kernel's entry and attribute timeouts, if
// timeout is set.
func mount(t testing.TB, dir string, root fs.InodeEmbedder, timeout *time.Duration) {
	t.Helper()
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Fatalf("FUSE is unavailable (%v): load the module with `modprobe fuse` (in a container, start it with --device /dev/fuse --cap-add SYS_ADMIN)", err)
	}
	opts := &fs.Options{MountOptions: fuse.MountOptions{
		DirectMountStrict: true, // the tests run as root: mount(2) itself, no fusermount
		AllowOther:        true, // binaries started under another uid see it too
		FsName:            "fsmcp-test",
		Name:              "fsmcptest",
		MaxBackground:     64,
	}}
	if timeout != nil {
		opts.EntryTimeout, opts.AttrTimeout, opts.NegativeTimeout = timeout, timeout, timeout
	}
	server, err := fs.Mount(dir, root, opts)
	if err != nil {
		t.Fatalf("mount a FUSE file system at %s: %v; as root with /dev/fuse present this works (check `modprobe fuse`, and `apt-get install fuse3` for the tools)", dir, err)
	}
	var st unix.Stat_t
	statErr := unix.Stat(dir, &st)
	t.Cleanup(func() {
		if statErr == nil {
			abort(t, st.Dev)
		}
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
			t.Errorf("lazy unmount of %s: %v", dir, err)
		}
		done := make(chan struct{})
		go func() { server.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Errorf("the FUSE server of %s did not end within 10s of its unmount", dir)
		}
	})
}

// fusectl is where the kernel lists FUSE connections, each with an abort
// file.
const fusectl = "/sys/fs/fuse/connections"

// abort ends the FUSE connection of the mount on device dev: every request
// still waiting for the server fails at once, so nothing stays blocked in
// it. fusectl is mounted first if it is not.
func abort(t testing.TB, dev uint64) {
	t.Helper()
	ctl := filepath.Join(fusectl, fmt.Sprint(unix.Minor(dev)), "abort")
	if _, err := os.Stat(ctl); errors.Is(err, os.ErrNotExist) {
		if err := unix.Mount("fusectl", fusectl, "fusectl", 0, ""); err != nil && !errors.Is(err, unix.EBUSY) {
			t.Logf("mount fusectl at %s: %v (the mount is only detached)", fusectl, err)
			return
		}
	}
	if err := os.WriteFile(ctl, []byte("1"), 0); err != nil {
		t.Logf("abort the FUSE connection through %s: %v (the mount is only detached)", ctl, err)
	}
}
