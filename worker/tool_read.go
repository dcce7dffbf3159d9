package worker

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"unicode/utf8"

	"github.com/fsmcp/fsmcp/worker/confine"
	"github.com/fsmcp/fsmcp/worker/cursor"
	"github.com/fsmcp/fsmcp/worker/relpath"
	"github.com/fsmcp/fsmcp/worker/toolset"
)

// chunkBytes is the largest piece of source text in one read item.
const chunkBytes = 2048

// Chunk counts a read page may hold.
const (
	defaultReadLimit = 512
	maxReadLimit     = 512
)

type readArgs struct {
	Path      string `json:"path"`
	StartLine *int64 `json:"start_line"`
	Cursor    string `json:"cursor"`
	Limit     *int   `json:"limit"`
}

type chunk struct {
	ByteOffset int64  `json:"byte_offset"`
	Text       string `json:"text"`
}

type readCursor struct {
	Offset int64  `json:"o"`
	State  string `json:"s"`
}

// openServedFile opens the file a content tool names, refusing anything the
// root does not serve with one answer, so unserved names do not leak.
func (r *Root) openServedFile(arg string) (string, *os.File, confine.Identity, error) {
	path, err := relpath.Clean(arg)
	if err != nil {
		return "", nil, confine.Identity{}, toolErrorf("%v", err)
	}
	notServed := toolErrorf("no served file at %s", display(path))
	// Ancestors are checked by PruneDir below, which covers exclusion.
	if path == "" || !r.sel.FileSelected(path) {
		return "", nil, confine.Identity{}, notServed
	}
	for i := 0; i < len(path); i++ {
		if path[i] == '/' && r.sel.PruneDir(path[:i]) {
			return "", nil, confine.Identity{}, notServed
		}
	}
	f, id, err := r.dir.OpenFile(path)
	switch {
	case errors.Is(err, confine.ErrSymlink):
		return "", nil, confine.Identity{}, toolErrorf("%s goes through a symbolic link, which this server does not follow", display(path))
	case err != nil:
		return "", nil, confine.Identity{}, notServed
	}
	if r.lim.MaxFileBytes > 0 && id.Size > r.lim.MaxFileBytes {
		f.Close()
		return "", nil, confine.Identity{}, toolErrorf("%s is %d bytes, larger than --max-file-bytes %d", display(path), id.Size, r.lim.MaxFileBytes)
	}
	return path, f, id, nil
}

func (r *Root) readTextFile(ctx context.Context, a readArgs) (*pageResult, error) {
	limit, err := pageLimit(a.Limit, defaultReadLimit, maxReadLimit)
	if err != nil {
		return nil, err
	}
	startLine := int64(1)
	if a.StartLine != nil {
		if *a.StartLine < 1 {
			return nil, toolErrorf("start_line must be 1 or more")
		}
		startLine = *a.StartLine
	}
	path, f, id, err := r.openServedFile(a.Path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	guard := r.dir.GuardFile(f) // for the length of the page's reads
	defer guard.Close()
	scope := cursor.Scope{Tool: toolset.ReadTextFile, Args: map[string]any{"path": path, "start_line": startLine}}
	state, err := r.fileState(f, id)
	if err != nil {
		return nil, err
	}
	var offset int64
	if a.Cursor != "" {
		var c readCursor
		if err := r.codec.Decode(a.Cursor, scope, &c); err != nil {
			return nil, toolErrorf("%v", err)
		}
		if c.State != state {
			return nil, toolErrorf("%v", cursor.ErrChanged)
		}
		if c.Offset < 0 || c.Offset > id.Size {
			return nil, toolErrorf("%v", cursor.ErrInvalid)
		}
		offset = c.Offset
	} else if startLine > 1 {
		if offset, err = r.seekLine(f, id.Size, startLine); err != nil {
			return nil, err
		}
	}

	// Read one page worth of source bytes, ending on a character boundary.
	// A write overlapping the read fails the page: it could hold bytes of
	// two versions of the file.
	n := min(r.lim.MaxReadBytes, id.Size-offset)
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, offset); err != nil && err != io.EOF {
		return nil, toolErrorf("cannot read %s", display(path))
	}
	if guard.Changed() {
		return nil, errChangedReading()
	}
	if offset+n < id.Size {
		buf = buf[:completePrefix(buf)]
	}
	if !utf8.Valid(buf) {
		return nil, toolErrorf("file is not valid UTF-8")
	}
	if len(buf) == 0 && offset < id.Size {
		return nil, toolErrorf("file is not valid UTF-8")
	}

	fit := newFitter(r.lim.MaxResultBytes)
	served := 0
	for served < len(buf) && len(fit.items) < limit {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		piece := buf[served:]
		if len(piece) > chunkBytes {
			piece = piece[:completePrefix(piece[:chunkBytes])]
		}
		// Shrink the piece until it fits what is left of the ceiling.
		for {
			b, _ := json.Marshal(chunk{ByteOffset: offset + int64(served), Text: string(piece)})
			if fit.add(b) {
				break
			}
			if len(piece) <= 1 || len(fit.items) > 0 {
				piece = nil
				break
			}
			piece = piece[:completePrefix(piece[:len(piece)/2])]
		}
		if piece == nil {
			break
		}
		served += len(piece)
	}
	if served == 0 && len(buf) > 0 {
		return nil, errors.New("read page could not fit one chunk")
	}
	end := offset + int64(served)
	var next *string
	if end < id.Size {
		tok, err := r.codec.Encode(scope, readCursor{Offset: end, State: state})
		if err != nil {
			return nil, err
		}
		next = &tok
	}
	// Identity checked again after the read: a change meanwhile fails the
	// page rather than tearing it.
	if err := changedSince(osFile{f}, id); err != nil {
		return nil, err
	}
	return &pageResult{fitter: fit, next: next, hash: sha256Hex(buf[:served])}, nil
}

// completePrefix returns the length of the longest prefix of b that does
// not end inside a multi-byte UTF-8 sequence. Invalid bytes are left for
// the validity check to catch.
func completePrefix(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		c := b[i]
		if c < utf8.RuneSelf {
			return len(b)
		}
		if utf8.RuneStart(c) {
			if utf8.FullRune(b[i:]) {
				return len(b)
			}
			return i
		}
	}
	return len(b)
}

// seekLine finds the offset at which 1-based line starts by counting
// newlines, charged against --max-scan-bytes.
func (r *Root) seekLine(f *os.File, size, line int64) (int64, error) {
	buf := make([]byte, 64<<10)
	var off int64
	seen := int64(1)
	for off < size {
		if off >= r.lim.MaxScanBytes {
			return 0, toolErrorf("start_line %d was not reached within the first %d bytes (--max-scan-bytes); read with a cursor from an earlier line, or raise --max-scan-bytes", line, r.lim.MaxScanBytes)
		}
		n := min(int64(len(buf)), size-off, r.lim.MaxScanBytes-off)
		b := buf[:n]
		if _, err := f.ReadAt(b, off); err != nil && err != io.EOF {
			return 0, toolErrorf("cannot read the file")
		}
		for len(b) > 0 {
			i := bytes.IndexByte(b, '\n')
			if i < 0 {
				break
			}
			seen++
			if seen == line {
				start := off + int64(n-int64(len(b))) + int64(i) + 1
				if start >= size {
					return 0, toolErrorf("start_line %d is past the end of the file (%d lines)", line, seen-1)
				}
				return start, nil
			}
			b = b[i+1:]
		}
		off += n
	}
	return 0, toolErrorf("start_line %d is past the end of the file (%d lines)", line, seen)
}

// fileState is what a read cursor binds: the file's physical identity by
// default, its size and SHA-256 digest with a stable key.
func (r *Root) fileState(f *os.File, id confine.Identity) (string, error) {
	if !r.Deterministic() {
		return identityState(id), nil
	}
	d, err := r.digest(f, id, &hashBudget{left: r.lim.MaxCursorHashBytes})
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%d:%s", id.Size, d), nil
}

func identityState(id confine.Identity) string {
	h := sha256.Sum256(appendIdentity(nil, id))
	return hex.EncodeToString(h[:16])
}

// appendIdentity appends a NUL and the fields of a physical identity in a
// fixed binary layout.
func appendIdentity(b []byte, id confine.Identity) []byte {
	b = append(b, 0)
	for _, v := range []uint64{id.Dev, id.Ino, uint64(id.Size), uint64(id.MtimeNs), uint64(id.CtimeNs), uint64(id.Mode)} {
		b = binary.LittleEndian.AppendUint64(b, v)
	}
	return b
}
