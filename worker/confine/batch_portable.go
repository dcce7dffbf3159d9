//go:build !linux || fsmcp_portable

package confine

// OpenReaders opens the regular files at rels (at most BatchSize) as
// OpenReader does, one Opened each in out: in the portable backend, one
// after the other.
func (r *Root) OpenReaders(rels []string, out []Opened) { r.openEach(rels, out) }

// A Closer closes Readers for a search: in the portable backend, each at
// once. Safe for concurrent use; a nil Closer does the same.
type Closer struct{}

// NewCloser returns a Closer; End it when done.
func (r *Root) NewCloser() *Closer { return &Closer{} }

// Close closes f; f must not be used after.
func (c *Closer) Close(f *Reader) { f.Close() }

// End does nothing: nothing is queued.
func (c *Closer) End() {}
