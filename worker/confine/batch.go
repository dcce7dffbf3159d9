//go:build unix

package confine

// Opened is one file of OpenReaders: the Reader and its Identity, or the
// error OpenReader would have given.
type Opened struct {
	R   *Reader
	ID  Identity
	Err error
}

// BatchSize is the most files one OpenReaders call opens in one batch.
const BatchSize = 16

// openEach opens each file of rels with OpenReader.
func (r *Root) openEach(rels []string, out []Opened) {
	for i, rel := range rels {
		f, id, err := r.OpenReader(rel)
		out[i] = Opened{R: f, ID: id, Err: err}
	}
}
