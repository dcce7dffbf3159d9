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

// IsBinary reads the opening bytes of r and applies LooksBinary to the
// first min(size, HeadBytes) of them.
//
// It reads at once what a Scan of r from offset 0 with budget would read
// first (its first round, up to headReadMax bytes), and those bytes stay in
// the Scanner for such a Scan that follows at once: a text file's opening
// is read once, and a file that fits in that read is read by one ReadAt in
// all. Bytes read here count against no budget; only what Scan scans does.
// Right after a binary file it reads HeadBytes only, as binary files tend to
// come together (a directory of images) and of the larger read they need
// only that.
func (s *Scanner) IsBinary(r io.ReaderAt, size, budget int64) (bool, error) {
	s.buf, s.off, s.head = s.buf[:0], 0, nil
	n := min(size, HeadBytes)
	if !s.lastBinary {
		n = min(size, max(HeadBytes, min(budget, int64(s.chunk+s.m.maxLen-1), headReadMax)))
	}
	if err := s.fill(r, 0, int(n)); err != nil {
		return false, err
	}
	s.head = r
	s.lastBinary = LooksBinary(s.buf)
	return s.lastBinary, nil
}

// headReadMax bounds IsBinary's read: a text file is read whole by it up to
// this size, and a binary file larger than HeadBytes costs this much
// copying instead of HeadBytes (ripgrep reads 64 KiB of each). A variable
// for BenchmarkHeadRead, which compares it with HeadBytes.
var headReadMax int64 = 128 << 10
