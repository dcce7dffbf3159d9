//go:build !fsmcp_portable

package confine

import (
	"strings"

	"golang.org/x/sys/unix"
)

// openRegularAt is openRegular for rel's components parts in the root
// rootfd. The name is opened O_PATH and checked first, so a FIFO, socket
// or device is never opened.
func (r *Root) openRegularAt(rootfd int, parts []string, rel string) (int, *unix.Stat_t, string, error) {
	pfd, err := r.openRel(rootfd, parts, leafFlags)
	if err != nil {
		return -1, nil, "", pathErr("open", rel, err)
	}
	clean := strings.Join(parts, "/")
	fd, st, err := reopenRegular(pfd, clean)
	if err == errNoProc {
		// No /proc: open the name again, non-blocking, and keep it only
		// if it is the file just checked.
		if fd, err = r.openRel(rootfd, parts, fileFlags); err != nil {
			return -1, nil, "", pathErr("open", rel, err)
		}
		return sameRegular(fd, st, clean)
	}
	if err != nil {
		return -1, nil, "", err
	}
	return fd, st, clean, nil
}

// sameRegular keeps fd, opened by name after a check through O_PATH gave
// want, only if it is still that regular file; it closes fd otherwise.
func sameRegular(fd int, want *unix.Stat_t, rel string) (int, *unix.Stat_t, string, error) {
	st, err := statRegular(fd, rel)
	if err != nil {
		return -1, nil, "", err
	}
	if st.Dev != want.Dev || st.Ino != want.Ino {
		unix.Close(fd)
		return -1, nil, "", pathErr("open", rel, ErrNotRegular)
	}
	return fd, st, rel, nil
}
