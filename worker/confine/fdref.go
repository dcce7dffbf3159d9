//go:build unix

package confine

import (
	"fmt"
	"sync"

	"golang.org/x/sys/unix"
)

// fdRef is a reference-counted file descriptor, so that Close racing with
// an operation in another goroutine can never make that operation use a
// recycled descriptor number.
type fdRef struct {
	mu     sync.Mutex
	fd     int
	refs   int
	closed bool
}

func (h *fdRef) acquire() (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return -1, errClosed
	}
	h.refs++
	return h.fd, nil
}

func (h *fdRef) release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.refs--
	if h.refs == 0 && h.closed && h.fd >= 0 {
		unix.Close(h.fd)
		h.fd = -1
	}
}

func (h *fdRef) close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return errClosed
	}
	h.closed = true
	if h.refs == 0 {
		fd := h.fd
		h.fd = -1
		if err := unix.Close(fd); err != nil {
			return fmt.Errorf("close: %w", err)
		}
	}
	return nil
}
