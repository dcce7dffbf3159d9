//go:build !fsmcp_portable

package confine

import (
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
)

// openRegular opens the regular file at rel (O_NONBLOCK still set) and
// returns its descriptor, its fstat and rel cleaned. The name is opened
// O_PATH and checked first, so a FIFO, socket or device is never opened.
func (r *Root) openRegular(rel string) (int, *unix.Stat_t, string, error) {
	parts, err := splitRel(rel)
	if err != nil {
		return -1, nil, "", fmt.Errorf("open: %w", err)
	}
	if len(parts) == 0 {
		return -1, nil, "", pathErr("open", rel, ErrNotRegular)
	}
	rootfd, err := r.h.acquire()
	if err != nil {
		return -1, nil, "", pathErr("open", rel, err)
	}
	defer r.h.release()
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
