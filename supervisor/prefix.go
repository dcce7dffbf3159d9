package supervisor

import (
	"bytes"
	"io"
	"sync"
)

// outMu serialises whole lines from every root onto the shared stderr.
var outMu sync.Mutex

// PrefixWriter writes each complete line it receives to W with Prefix in
// front, so worker output on the supervisor's stderr says which root it
// came from.
type PrefixWriter struct {
	w      io.Writer
	prefix []byte
	mu     sync.Mutex
	buf    []byte
}

// NewPrefixWriter returns a PrefixWriter onto w.
func NewPrefixWriter(w io.Writer, prefix string) *PrefixWriter {
	return &PrefixWriter{w: w, prefix: []byte(prefix)}
}

func (p *PrefixWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.buf = append(p.buf, b...)
	for {
		i := bytes.IndexByte(p.buf, '\n')
		if i < 0 {
			break
		}
		line := append(append([]byte{}, p.prefix...), p.buf[:i+1]...)
		p.buf = p.buf[i+1:]
		outMu.Lock()
		_, err := p.w.Write(line)
		outMu.Unlock()
		if err != nil {
			return len(b), err
		}
	}
	return len(b), nil
}
