package confine

import "golang.org/x/sys/unix"

// renameExchange swaps the entries from and to in the root
// (renameat2 RENAME_EXCHANGE); errNoRenameFlags where the filesystem
// refuses the flag.
func renameExchange(rootfd int, from, to string) error {
	return renameFlags(unix.Renameat2(rootfd, from, rootfd, to, unix.RENAME_EXCHANGE))
}

// renameNoReplace renames from to to in the root unless to exists
// (renameat2 RENAME_NOREPLACE: EEXIST); errNoRenameFlags where the
// filesystem refuses the flag.
func renameNoReplace(rootfd int, from, to string) error {
	return renameFlags(unix.Renameat2(rootfd, from, rootfd, to, unix.RENAME_NOREPLACE))
}

func renameFlags(err error) error {
	if err == unix.EINVAL || err == unix.ENOSYS {
		return errNoRenameFlags
	}
	return err
}
