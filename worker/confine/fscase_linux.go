package confine

import (
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// Filesystem magic numbers (statfs f_type) of filesystems that fold case
// or may: FUSE is included because a FUSE filesystem can do anything.
const (
	magicExt4     = 0xEF53
	magicF2FS     = 0xF2F52010
	magicMSDOS    = 0x4d44 // vfat, msdos
	magicExFAT    = 0x2011BAB0
	magicNTFS     = 0x5346544e
	magicNTFS3    = 0x7366746e
	magicCIFS     = 0xFF534D42
	magicSMB2     = 0xFE534D42
	magicSMB      = 0x517B
	magicFUSE     = 0x65735546
	magicHFS      = 0x4244
	magicHFSPlus  = 0x482b
	magicISO9660  = 0x9660
	magicUDF      = 0x15013346
	magicNCP      = 0x564c
	magicVBoxSF   = 0x786f4256
	magicV9FS     = 0x01021997
	magicJFS      = 0x3153464a
	fsCasefoldFlg = 0x40000000 // FS_CASEFOLD_FL
)

// fsCaseMode classifies the filesystem holding fd (any descriptor,
// O_PATH included).
func fsCaseMode(fd int) (caseMode, error) {
	var sf unix.Statfs_t
	for {
		err := unix.Fstatfs(fd, &sf)
		if err == nil {
			break
		}
		if err != unix.EINTR {
			return caseFolds, err
		}
	}
	switch uint32(sf.Type) { //nolint:gosec // f_type is a 32-bit magic
	case magicExt4:
		if kernelCasefold("ext4") {
			return casePerDir, nil
		}
	case magicF2FS:
		if kernelCasefold("f2fs") {
			return casePerDir, nil
		}
	case magicMSDOS, magicExFAT, magicNTFS, magicNTFS3, magicCIFS, magicSMB2, magicSMB,
		magicFUSE, magicHFS, magicHFSPlus, magicISO9660, magicUDF, magicNCP, magicVBoxSF,
		magicV9FS, magicJFS:
		return caseFolds, nil
	}
	return caseExact, nil
}

var casefoldKernel sync.Map // fs name -> bool

// kernelCasefold reports whether this kernel can fold case on fs (ext4 or
// f2fs): without CONFIG_UNICODE it cannot, and no directory there folds.
func kernelCasefold(fs string) bool {
	if v, ok := casefoldKernel.Load(fs); ok {
		return v.(bool)
	}
	// Only a features directory without casefold is a clear "cannot"; no
	// sysfs at all, or any other doubt, keeps the check on.
	v := true
	if _, err := os.Stat("/sys/fs/" + fs + "/features"); err == nil {
		_, err := os.Stat("/sys/fs/" + fs + "/features/casefold")
		v = err == nil || !os.IsNotExist(err)
	}
	casefoldKernel.Store(fs, v)
	return v
}

// dirFolds reports whether lookups in the directory dirfd may fold case.
func dirFolds(dirfd int) (bool, error) {
	mode, err := fsCaseMode(dirfd)
	if err != nil {
		return true, err
	}
	switch mode {
	case caseExact:
		return false, nil
	case caseFolds:
		return true, nil
	}
	// FS_IOC_GETFLAGS needs a descriptor that is not O_PATH.
	fd, err := retryEINTR(func() (int, error) {
		return unix.Openat(dirfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	})
	if err != nil {
		return true, err
	}
	defer unix.Close(fd)
	flags, err := unix.IoctlGetUint32(fd, unix.FS_IOC_GETFLAGS)
	if err != nil {
		return true, err
	}
	return flags&fsCasefoldFlg != 0, nil
}
