package worker

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"sync"

	"github.com/fsmcp/fsmcp/worker/confine"
)

// digestCache remembers content digests by physical identity, so a file
// that has not changed is hashed once per process. It holds at most max
// entries and forgets the oldest first.
type digestCache struct {
	mu    sync.Mutex
	max   int
	m     map[confine.Identity]string
	order []confine.Identity
}

func newDigestCache(max int) *digestCache {
	return &digestCache{max: max, m: map[confine.Identity]string{}}
}

func (c *digestCache) get(id confine.Identity) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, ok := c.m[id]
	return d, ok
}

func (c *digestCache) put(id confine.Identity, d string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[id]; ok {
		return
	}
	for len(c.order) >= c.max && len(c.order) > 0 {
		delete(c.m, c.order[0])
		c.order = c.order[1:]
	}
	c.m[id] = d
	c.order = append(c.order, id)
}

// hashBudget is the uncached hashing one call may still do.
type hashBudget struct{ left int64 }

// digest returns the SHA-256 of the open file f whose identity is id,
// hashing through that descriptor and checking the identity again after, so
// a file changed meanwhile fails rather than yielding a mixed digest.
func (r *Root) digest(f *confine.Reader, id confine.Identity, b *hashBudget) (string, error) {
	if d, ok := r.digests.get(id); ok {
		return d, nil
	}
	if id.Size > b.left {
		return "", hashBudgetError(r.lim.MaxCursorHashBytes)
	}
	b.left -= id.Size
	h := sha256.New()
	guard := r.dir.GuardReader(f)
	defer guard.Close()
	if _, err := io.Copy(h, io.NewSectionReader(f, 0, id.Size)); err != nil {
		return "", toolErrorf("cannot read the file to bind its cursor")
	}
	if guard.Changed() {
		return "", errChangedWhileReading
	}
	if err := changedSince(f, id); err != nil {
		return "", err
	}
	d := hex.EncodeToString(h.Sum(nil))
	r.digests.put(id, d)
	return d, nil
}

// hashBudgetError is the actionable error for a call that would hash more
// uncached bytes than --max-cursor-hash-bytes allows.
func hashBudgetError(limit int64) error {
	return toolErrorf("deterministic cursor hashing exceeds the configured byte ceiling")
}
