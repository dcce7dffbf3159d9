//go:build !fsmcp_portable

package confine

import (
	"sync"

	"golang.org/x/sys/unix"

	"github.com/fsmcp/fsmcp/worker/uring"
)

// ringPool holds a Root's idle rings, so a search page takes one rather
// than setting one up. Once io_uring turns out to be unavailable it is
// not tried again.
type ringPool struct {
	mu   sync.Mutex
	free []*uring.Ring
	off  bool // unavailable, or the Root closed: no ring is kept
}

// maxIdleRings bounds the rings a Root keeps idle.
const maxIdleRings = 4

func (p *ringPool) get() *uring.Ring {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.off {
		return nil
	}
	if n := len(p.free); n > 0 {
		ring := p.free[n-1]
		p.free = p.free[:n-1]
		return ring
	}
	ring, err := uring.New(2 * BatchSize)
	if err != nil {
		p.off = true
		return nil
	}
	return ring
}

func (p *ringPool) put(ring *uring.Ring) {
	if ring == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.off || len(p.free) >= maxIdleRings {
		ring.Close()
		return
	}
	p.free = append(p.free, ring)
}

// broken closes a ring that failed a submission.
func (p *ringPool) broken(ring *uring.Ring) { ring.Close() }

// close closes the idle rings; a ring in use is closed when put back.
func (p *ringPool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.off = true
	for _, ring := range p.free {
		ring.Close()
	}
	p.free = nil
}

// A Closer closes Readers a batch at a time: Close queues a Reader, and
// each BatchSize queued are closed by one io_uring submission (one by one
// where there is no ring); End closes the rest, and any Reader given after
// is closed at once. Safe for concurrent use. A nil Closer closes each
// Reader at once.
type Closer struct {
	r     *Root
	mu    sync.Mutex
	fds   []int // at most BatchSize
	ended bool
}

// NewCloser returns an empty Closer; End it when done.
func (r *Root) NewCloser() *Closer { return &Closer{r: r, fds: make([]int, 0, BatchSize)} }

// Close closes f, now or with the next batch; f must not be used after.
func (c *Closer) Close(f *Reader) {
	if c == nil {
		f.Close()
		return
	}
	c.mu.Lock()
	if c.ended {
		c.mu.Unlock()
		f.Close()
		return
	}
	c.fds = append(c.fds, f.fd)
	var full [BatchSize]int
	n := 0
	if len(c.fds) >= BatchSize {
		n = copy(full[:], c.fds)
		c.fds = c.fds[:0]
	}
	c.mu.Unlock()
	c.r.closeFDs(full[:n])
}

// End closes every Reader queued; Close then closes at once.
func (c *Closer) End() {
	c.mu.Lock()
	fds := c.fds
	c.fds, c.ended = nil, true
	c.mu.Unlock()
	c.r.closeFDs(fds)
}

// closeFDs closes fds in submissions of BatchSize.
func (r *Root) closeFDs(fds []int) {
	for len(fds) > BatchSize {
		r.closeFDs(fds[:BatchSize])
		fds = fds[BatchSize:]
	}
	if len(fds) == 0 {
		return
	}
	ring := r.rings.get()
	if ring == nil {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return
	}
	var buf [BatchSize]uring.Op
	ops := buf[:len(fds)]
	for i, fd := range fds {
		ops[i] = uring.Close(fd)
	}
	if ring.Run(ops) != nil {
		// Which closes ran is not known, and closing a number again
		// could close a file another goroutine has opened since: the
		// rest leak (a ring fails only on a kernel fault).
		r.rings.broken(ring)
		return
	}
	r.rings.put(ring)
}
