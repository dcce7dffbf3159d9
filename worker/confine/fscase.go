//go:build unix

package confine

import "golang.org/x/sys/unix"

// A name a client gives is served only under its exact on-disk spelling:
// on a filesystem that folds case (FAT, exFAT, NTFS, SMB, HFS, many FUSE
// filesystems, ext4 and f2fs directories with the casefold flag) the
// kernel resolves "PRIVATE" to the entry "private", and include/exclude
// rules judged on the given name would then be judged on the wrong one. So
// a component looked up in a directory that may fold is first checked
// against the directory's entries, byte for byte. On a filesystem that
// never folds, nothing is checked and nothing is paid. Whether it may fold
// is each platform's question (fsCaseMode and dirFolds): on Linux statfs(2)
// and, for ext4 and f2fs, the directory's FS_CASEFOLD_FL flag tell; on
// macOS every directory is taken to fold (os_darwin.go, fscase_darwin.go).

// caseMode says how names are matched in a directory.
type caseMode uint8

const (
	caseExact  caseMode = iota // never folds
	casePerDir                 // ext4/f2fs: folds where FS_CASEFOLD_FL is set
	caseFolds                  // may fold anywhere
)

// exactName reports whether name is, byte for byte, the name of an entry
// of the directory dirfd, when lookups there may fold case; where they
// cannot, it is true at no cost beyond dirFolds.
func exactName(dirfd int, name string) (bool, error) {
	folds, err := dirFolds(dirfd)
	if err != nil || !folds {
		return err == nil, err
	}
	return hasEntry(dirfd, name)
}

// hasEntry reads the directory dirfd (through a descriptor of its own, so
// dirfd's offset is untouched) looking for name.
func hasEntry(dirfd int, name string) (bool, error) {
	fd, err := retryEINTR(func() (int, error) {
		return unix.Openat(dirfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	})
	if err != nil {
		return false, err
	}
	defer unix.Close(fd)
	found := false
	err = readDirents(fd, func(buf []byte) (bool, error) {
		err := direntRecords(buf, func(_, n []byte) (bool, error) {
			found = string(n) == name
			return !found, nil
		})
		return !found, err
	})
	return found, err
}
