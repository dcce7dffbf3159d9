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
	"strings"
	"unicode/utf8"

	"github.com/fsmcp/fsmcp/internal/toolset"
	"github.com/fsmcp/fsmcp/worker/confine"
	"github.com/fsmcp/fsmcp/worker/cursor"
	"github.com/fsmcp/fsmcp/worker/relpath"
)

// chunkBytes is the largest piece of source text in one read item.
const chunkBytes = 2048

type readArgs struct {
	Path      string          `json:"path"`
	StartLine json.RawMessage `json:"start_line"`
	Cursor    json.RawMessage `json:"cursor"`
	Limit     json.RawMessage `json:"limit"`
}

type chunk struct {
	ByteOffset int64  `json:"byte_offset"`
	Text       string `json:"text"`
}

type readCursor struct {
	Offset int64  `json:"o"`
	State  string `json:"s"`
}

// readLimit is the most chunks a read page may hold, and its default:
// enough for --max-read-bytes.
func (r *Root) readLimit() int {
	return int((r.lim.MaxReadBytes + chunkBytes - 1) / chunkBytes)
}

// The refusals of a read, in the order they are checked.
var (
	errNotServed   = toolErrorf("path is not served by this root")
	errExcluded    = toolErrorf("path matches an --exclude pattern of this root")
	errNotReadable = toolErrorf("path is not a readable regular file")
	errTooLarge    = toolErrorf("file exceeds the configured size limit")
	errNotUTF8     = toolErrorf("file is not valid UTF-8")
)

// openServedFile opens the file a read names. The name alone decides
// "excluded" and "not served" before any filesystem call; a symbolic link
// on the way is "not served" too, and anything else that cannot be opened
// as a regular file is "not readable".
func (r *Root) openServedFile(arg string) (string, *confine.Reader, confine.Identity, error) {
	path, err := relpath.Clean(arg)
	if err != nil {
		return "", nil, confine.Identity{}, toolErrorf("%v", err)
	}
	switch {
	case path == "":
		return "", nil, confine.Identity{}, errNotReadable
	case r.sel.Excluded(path):
		return "", nil, confine.Identity{}, errExcluded
	case !r.sel.Included(path):
		return "", nil, confine.Identity{}, errNotServed
	}
	f, id, err := r.dir.OpenReader(path)
	if err != nil {
		if errors.Is(err, confine.ErrSymlink) && r.linkAbove(path) {
			return "", nil, confine.Identity{}, errNotServed
		}
		return "", nil, confine.Identity{}, errNotReadable
	}
	if r.lim.MaxFileBytes > 0 && id.Size > r.lim.MaxFileBytes {
		f.Close()
		return "", nil, confine.Identity{}, errTooLarge
	}
	return path, f, id, nil
}

// linkAbove reports whether a symbolic link stands on the way to path (not
// at path itself).
func (r *Root) linkAbove(path string) bool {
	i := strings.LastIndexByte(path, '/')
	if i < 0 {
		return false
	}
	d, err := r.dir.OpenDir(path[:i])
	if err != nil {
		return errors.Is(err, confine.ErrSymlink)
	}
	d.Close()
	return false
}

// startLine reads a start_line argument: absent is 1.
func startLine(v json.RawMessage) (int64, error) {
	if v == nil {
		return 1, nil
	}
	n, ok := integer(v)
	if !ok || n < 1 {
		return 0, toolErrorf("start_line must be a positive integer")
	}
	return n, nil
}

func (r *Root) readTextFile(ctx context.Context, a readArgs) (*pageResult, error) {
	limit, err := pageLimit(toolset.ReadTextFile, a.Limit, r.readLimit(), r.readLimit(), false)
	if err != nil {
		return nil, err
	}
	if a.Path == "" {
		return nil, schemaError(toolset.ReadTextFile, "path must be a non-empty string")
	}
	line, err := startLine(a.StartLine)
	if err != nil {
		return nil, err
	}
	path, f, id, err := r.openServedFile(a.Path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	guard := r.dir.GuardReader(f) // for the length of the page's reads
	defer guard.Close()
	scope := cursor.Scope{Tool: toolset.ReadTextFile, Args: map[string]any{"path": path, "start_line": line}}
	offset, state, err := r.readStart(f, id, scope, a.Cursor, line)
	if err != nil {
		return nil, err
	}
	buf, err := r.readPage(f, id, guard, offset)
	if err != nil {
		return nil, err
	}
	fit, served, err := chunked(ctx, buf, offset, limit, r.lim.MaxResultBytes)
	if err != nil {
		return nil, err
	}
	var next *string
	if end := offset + int64(served); end < id.Size {
		tok, err := r.codec.Encode(scope, readCursor{Offset: end, State: state})
		if err != nil {
			return nil, err
		}
		next = &tok
	}
	// Identity checked again after the read: a change meanwhile fails the
	// page rather than tearing it.
	if err := changedSince(f, id); err != nil {
		return nil, err
	}
	return &pageResult{fitter: fit, next: next}, nil
}

// readStart is where a read page starts in the file f (identity id) and
// the state its cursor binds: the cursor's offset, checked against the
// file's state now, or the start of the 1-based line.
func (r *Root) readStart(f *confine.Reader, id confine.Identity, scope cursor.Scope, arg json.RawMessage, line int64) (offset int64, state string, err error) {
	var resumed *readCursor
	if err := r.resume(arg, scope, &resumed); err != nil {
		return 0, "", err
	}
	if state, err = r.fileState(f, id); err != nil {
		return 0, "", err
	}
	switch {
	case resumed == nil && line > 1:
		offset, err = r.seekLine(f, id.Size, line)
		return offset, state, err
	case resumed == nil:
		return 0, state, nil
	case resumed.State != state:
		return 0, "", toolErrorf("%v", cursor.ErrChanged)
	case resumed.Offset < 0 || resumed.Offset > id.Size:
		return 0, "", toolErrorf("%v", cursor.ErrPosition)
	}
	return resumed.Offset, state, nil
}

// readPage reads one page worth of source bytes from offset, ending on a
// character boundary unless the file ends first. A write overlapping the
// read fails the page: it could hold bytes of two versions of the file.
func (r *Root) readPage(f *confine.Reader, id confine.Identity, guard *confine.Guard, offset int64) ([]byte, error) {
	n := min(r.lim.MaxReadBytes, id.Size-offset)
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, offset); err != nil && err != io.EOF {
		if err := changedSince(f, id); err != nil {
			return nil, err
		}
		return nil, errNotReadable
	}
	if guard.Changed() {
		return nil, errChangedWhileReading
	}
	if offset+n < id.Size {
		buf = buf[:completePrefix(buf)]
	}
	if !utf8.Valid(buf) || len(buf) == 0 && offset < id.Size {
		return nil, errNotUTF8
	}
	return buf, nil
}

// chunked packs buf, the file's bytes from offset, into a page of at most
// limit chunks of at most chunkBytes under the result ceiling, and returns
// it with how many of buf's bytes it holds.
func chunked(ctx context.Context, buf []byte, offset int64, limit int, ceiling int64) (*fitter, int, error) {
	fit := newFitter(ceiling)
	served := 0
	for served < len(buf) && len(fit.items) < limit {
		if err := ctx.Err(); err != nil {
			return nil, 0, err
		}
		piece := buf[served:]
		if len(piece) > chunkBytes {
			piece = piece[:completePrefix(piece[:chunkBytes])]
		}
		b, _ := json.Marshal(chunk{ByteOffset: offset + int64(served), Text: string(piece)})
		if !fit.add(b, piece) {
			break
		}
		served += len(piece)
	}
	if served == 0 && len(buf) > 0 {
		return nil, 0, toolErrorf("one result item exceeds the result ceiling")
	}
	return fit, served, nil
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

// seekLine finds the offset at which the 1-based line starts by counting
// newlines, at most --max-scan-bytes of them. A line past the end of the
// file gives the file's size (an empty page).
func (r *Root) seekLine(f io.ReaderAt, size, line int64) (int64, error) {
	buf := make([]byte, 64<<10)
	var off int64
	seen := int64(1)
	for off < size {
		if off >= r.lim.MaxScanBytes {
			return 0, toolErrorf("start_line is further into the file than one page may scan")
		}
		n := min(int64(len(buf)), size-off, r.lim.MaxScanBytes-off)
		b := buf[:n]
		if _, err := f.ReadAt(b, off); err != nil && err != io.EOF {
			return 0, errNotReadable
		}
		for len(b) > 0 {
			i := bytes.IndexByte(b, '\n')
			if i < 0 {
				break
			}
			seen++
			if seen == line {
				return off + int64(n-int64(len(b))) + int64(i) + 1, nil
			}
			b = b[i+1:]
		}
		off += n
	}
	return size, nil
}

// fileState is what a read cursor binds: the file's physical identity by
// default, its size and SHA-256 digest with a stable key.
func (r *Root) fileState(f *confine.Reader, id confine.Identity) (string, error) {
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

// errChangedWhileReading is the answer when a file changed while a call
// read or hashed it.
var errChangedWhileReading = toolErrorf("filesystem changed while reading")

// identified is an open file that can tell its identity now, as a
// *confine.Reader does.
type identified interface {
	Identity() (confine.Identity, error)
}

// changedSince is errChangedWhileReading when the open file f no longer has
// the identity id it was opened with (or cannot be stat'ed), else nil.
// Checked after reading, it turns a concurrent change into a refusal
// instead of a torn answer.
func changedSince(f identified, id confine.Identity) error {
	if after, err := f.Identity(); err != nil || after != id {
		return errChangedWhileReading
	}
	return nil
}
