//go:build unix

package confine

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// Putting a finished temp file in place of the destination.
//
// The destination was checked through an O_PATH descriptor (destination.fd)
// held until the replacement is done. A plain rename would replace
// whatever sits at the name when it runs: a FIFO, or a file this process
// may not write, put there after the check, would be replaced unchecked.
// So a write never renames over the name. It swaps the temp file with the
// name's entry (renameat2 RENAME_EXCHANGE), then looks at what came out
// under the temp name: the inode checked is removed, anything else is
// swapped back and the attempt answers errRaced. A new file is put in
// place with RENAME_NOREPLACE, which fails where an entry appeared.
//
// Where the filesystem refuses renameat2's flags (NFS; FUSE servers
// without RENAME2), the name's entry is looked at once more and a plain
// rename follows: an entry swapped in between those two calls is replaced.
// docs/security.md states that window. macOS has the same two steps as
// renamex_np with RENAME_SWAP and RENAME_EXCL; FreeBSD has neither and
// takes the plain way (rename_*.go).

// errNoRenameFlags is renameat2 refusing its flags on this filesystem.
var errNoRenameFlags = errors.New("the filesystem does not take renameat2's flags")

// replace puts tmp in place of name if name still holds dest (no entry,
// when dest is nil) and removes what it replaced. When name holds
// something else it answers errRaced, having removed tmp and left that
// entry at name.
func (r *Root) replace(rootfd int, tmp tempFile, name string, dest *destination) error {
	if !r.plainRename.Load() {
		err := swapIn(rootfd, tmp, name, dest)
		if err != errNoRenameFlags {
			return err
		}
		r.plainRename.Store(true)
	}
	return renameChecked(rootfd, tmp, name, dest)
}

// swapIn is replace with an exchange (or a rename that never replaces,
// for a new file); errNoRenameFlags leaves tmp as it was.
func swapIn(rootfd int, tmp tempFile, name string, dest *destination) error {
	var err error
	if dest == nil {
		err = renameNoReplace(rootfd, tmp.name, name)
	} else {
		err = renameExchange(rootfd, tmp.name, name)
	}
	switch {
	case err == errNoRenameFlags:
		return errNoRenameFlags
	case dest == nil && err == unix.EEXIST, dest != nil && err == unix.ENOENT:
		removeTemp(rootfd, tmp)
		return errRaced
	case err != nil:
		removeTemp(rootfd, tmp)
		return renameErr(err)
	case dest == nil:
		return nil
	}
	// The temp name now holds what was at name.
	if isEntry(rootfd, tmp.name, dest.dev, dest.ino) {
		if err := unix.Unlinkat(rootfd, tmp.name, 0); err != nil {
			return fmt.Errorf("removing the replaced file: %w", err)
		}
		return nil
	}
	if err := renameExchange(rootfd, tmp.name, name); err != nil {
		return fmt.Errorf("putting back the entry found at the destination: %w", err)
	}
	removeTemp(rootfd, tmp)
	return errRaced
}

// renameChecked is replace without renameat2's flags: the name's entry is
// looked at, then tmp is renamed over it.
func renameChecked(rootfd int, tmp tempFile, name string, dest *destination) error {
	var st unix.Stat_t
	err := unix.Fstatat(rootfd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	switch {
	case err != nil && err != unix.ENOENT:
		removeTemp(rootfd, tmp)
		return err
	case dest == nil && err == nil, dest != nil && (err != nil || !sameFile(&st, dest.dev, dest.ino)):
		removeTemp(rootfd, tmp)
		return errRaced
	}
	if err := unix.Renameat(rootfd, tmp.name, rootfd, name); err != nil {
		removeTemp(rootfd, tmp)
		return renameErr(err)
	}
	return nil
}

// renameErr is a failed rename: a directory where the file should go is
// a destination that is not a writable regular file.
func renameErr(err error) error {
	if err == unix.EISDIR || err == unix.ENOTEMPTY || err == unix.EEXIST {
		return ErrNotWritable
	}
	return mapErrno(err)
}

// isEntry reports whether name in the root is the inode dev:ino.
func isEntry(rootfd int, name string, dev, ino uint64) bool {
	var st unix.Stat_t
	err := unix.Fstatat(rootfd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	return err == nil && sameFile(&st, dev, ino)
}

// sameFile reports whether st is of the inode dev:ino.
func sameFile(st *unix.Stat_t, dev, ino uint64) bool {
	return uint64(st.Dev) == dev && uint64(st.Ino) == ino //nolint:unconvert // Dev is not uint64 on every platform
}

// removeTemp removes tmp's name if it still names tmp: what another
// process put under that name is left alone.
func removeTemp(rootfd int, tmp tempFile) {
	if isEntry(rootfd, tmp.name, tmp.dev, tmp.ino) {
		unix.Unlinkat(rootfd, tmp.name, 0)
	}
}
