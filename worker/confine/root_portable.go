//go:build !linux || fsmcp_portable

package confine

import "sync/atomic"

// The portable backend (macOS, the BSDs, and Linux under the build tag
// fsmcp_portable) resolves every path one component at a time with
// openat(2) and O_NOFOLLOW, checks a file's type with fstatat before
// opening it and its identity with fstat after, and writes through a named
// temporary file. It has no read guards (see Guard) and no batched opens.

// Root is an open root directory. All paths given to its methods are
// relative to it. A Root is safe for concurrent use.
type Root struct {
	h    fdRef
	mode caseMode // how the root's filesystem matches names
	// plainRename: writes rename the plain way (see replace); set once
	// the filesystem refused an exchanging rename, or by tests.
	plainRename atomic.Bool
}

// newRoot returns the Root for the open root directory fd.
func newRoot(fd int, mode caseMode) *Root {
	r := &Root{mode: mode}
	r.h.fd = fd
	return r
}

// Close closes the root descriptor. Operations running concurrently finish
// first; later operations fail.
func (r *Root) Close() error { return r.h.close() }

// UsesOpenat2 reports whether multi-component paths are resolved with
// openat2(2): never in this backend.
func (r *Root) UsesOpenat2() bool { return false }

// searchFlags opens a directory on the way to a name with only the right to
// search it (searchFlag).
const searchFlags = searchFlag | dirOnlyFlags

// openRel opens rel (at least one component) below the root with flags,
// one component at a time, each under its exact name.
func (r *Root) openRel(rootfd int, parts []string, flags int) (int, error) {
	if len(parts) == 1 && r.mode == caseExact {
		return openComponent(rootfd, parts[0], flags)
	}
	return walk(rootfd, parts, flags)
}
