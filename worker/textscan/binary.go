package textscan

import (
	"bytes"
	"io"
	"unicode/utf8"
)

// LooksBinary reports whether a file whose first min(size, HeadBytes) bytes
// are head should be skipped as binary: some single line within head both
// contains a NUL byte and is not valid UTF-8. A NUL on one line and an
// invalid byte on another do not condemn the file. When head is HeadBytes
// long its last line may be cut by the boundary: it is judged on what is
// there, and a UTF-8 sequence truncated exactly at the cut is not counted as
// invalid. Bytes beyond HeadBytes are ignored.
func LooksBinary(head []byte) bool {
	if len(head) > HeadBytes {
		head = head[:HeadBytes]
	}
	cut := len(head) == HeadBytes
	p := 0
	for {
		i := bytes.IndexByte(head[p:], 0)
		if i < 0 {
			return false
		}
		nul := p + i
		ls := bytes.LastIndexByte(head[:nul], '\n') + 1
		le := bytes.IndexByte(head[nul:], '\n')
		final := le < 0
		if final {
			le = len(head)
		} else {
			le += nul
		}
		ln := head[ls:le]
		if final && cut {
			ln = trimPartialTail(ln)
		}
		if !utf8.Valid(ln) {
			return true
		}
		if final {
			return false
		}
		p = le + 1
	}
}

// IsBinary reads the opening min(size, HeadBytes) bytes of r and applies
// LooksBinary to them.
//
// The bytes read stay in the Scanner for a Scan of the same r from offset
// 0 that follows at once, so a text file's head is read once, not twice.
func (s *Scanner) IsBinary(r io.ReaderAt, size int64) (bool, error) {
	s.buf, s.off, s.head = s.buf[:0], 0, nil
	if err := s.fill(r, 0, int(min(size, HeadBytes))); err != nil {
		return false, err
	}
	s.head = r
	return LooksBinary(s.buf), nil
}
