package confine

import "golang.org/x/sys/unix"

// renameExchange swaps the entries from and to in the root
// (renamex_np RENAME_SWAP); errNoRenameFlags where the filesystem does not
// support it (ENOTSUP: HFS+ before 10.13, most network volumes).
func renameExchange(rootfd int, from, to string) error {
	return renameFlags(unix.RenameatxNp(rootfd, from, rootfd, to, unix.RENAME_SWAP))
}

// renameNoReplace renames from to to in the root unless to exists
// (renamex_np RENAME_EXCL: EEXIST); errNoRenameFlags where the filesystem
// does not support it.
func renameNoReplace(rootfd int, from, to string) error {
	return renameFlags(unix.RenameatxNp(rootfd, from, rootfd, to, unix.RENAME_EXCL))
}

func renameFlags(err error) error {
	if err == unix.ENOTSUP || err == unix.EINVAL || err == unix.ENOSYS {
		return errNoRenameFlags
	}
	return err
}
