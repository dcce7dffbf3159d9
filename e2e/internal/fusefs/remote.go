//go:build linux

package fusefs

import "github.com/hanwen/go-fuse/v2/fs"

// NewRemote returns a filesystem that serves the host directory dir as
// the client of a network filesystem serves a share: what the test
// changes in dir directly is another client's edit, which the kernel
// hears of only when it next asks (at once under MountUncached) and
// which no inotify watch on the mount ever reports.
func NewRemote(dir string) fs.InodeEmbedder {
	return &casefoldNode{real: dir, opt: &options{}}
}
