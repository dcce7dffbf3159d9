package confine

import (
	"bytes"

	"golang.org/x/sys/unix"
)

// exactFS are the filesystems whose lookups are byte-exact on FreeBSD.
// ZFS is not among them: a dataset's casesensitivity may be insensitive
// or mixed, and its normalization property folds Unicode forms.
var exactFS = [][]byte{[]byte("ufs"), []byte("tmpfs"), []byte("devfs")}

// fsCaseMode classifies the filesystem holding fd by its type name.
func fsCaseMode(fd int) (caseMode, error) {
	var sf unix.Statfs_t
	if _, err := retryEINTR(func() (int, error) { return 0, unix.Fstatfs(fd, &sf) }); err != nil {
		return caseFolds, err
	}
	name := sf.Fstypename[:]
	if i := bytes.IndexByte(name, 0); i >= 0 {
		name = name[:i]
	}
	for _, fs := range exactFS {
		if bytes.Equal(name, fs) {
			return caseExact, nil
		}
	}
	return caseFolds, nil
}

// dirFolds reports whether lookups in the directory dirfd may fold.
func dirFolds(dirfd int) (bool, error) {
	mode, err := fsCaseMode(dirfd)
	return mode != caseExact, err
}
