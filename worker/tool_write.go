package worker

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"

	"github.com/fsmcp/fsmcp/worker/confine"
)

type writeArgs struct {
	Path    string  `json:"path"`
	Content *string `json:"content"`
}

type writeResult struct {
	Path        string `json:"path"`
	Bytes       int    `json:"bytes"`
	ContentHash string `json:"content_hash"`
}

// writeName is the rule for a write's path (docs/reference.md, Arguments):
// one lowercase basename, directly in the root. It also keeps the temporary
// files' names (which start with a dot) out of reach.
var writeName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,254}$`)

// The write tool's texts, verbatim (docs/reference.md, Errors).
const (
	errWriteName      = "path must be one lowercase basename of letters, digits, dots, underscores, or hyphens"
	errWriteExcluded  = "path matches an --exclude pattern of this root"
	errWriteNoInclude = "path matches no --include pattern of this root"
	errWriteNoTop     = "no --include pattern of this root matches a file in the root itself, so no write can be accepted; " +
		"a write names one basename and lands in the root, so add an --include pattern without a directory prefix, such as '**'"
	errWriteDest   = "destination is not a writable regular file"
	errWriteFailed = "write failed"
)

// writeTextFile checks a write in the documented order (name, size,
// exclude, include, destination; docs/reference.md, How a write is checked
// and made) and then replaces the file atomically.
func (r *Root) writeTextFile(_ context.Context, a writeArgs) ([]byte, error) {
	name := a.Path
	switch {
	case !writeName.MatchString(name):
		return nil, toolErrorf(errWriteName)
	case a.Content == nil:
		return nil, toolErrorf("content is required")
	}
	data := []byte(*a.Content)
	switch {
	case int64(len(data)) > r.lim.MaxWriteBytes:
		return nil, toolErrorf("content exceeds the %d-byte write limit", r.lim.MaxWriteBytes)
	case r.sel.Excluded(name):
		return nil, toolErrorf(errWriteExcluded)
	case !r.sel.ReachesTopLevel():
		return nil, toolErrorf(errWriteNoTop)
	case !r.sel.Included(name):
		return nil, toolErrorf(errWriteNoInclude)
	}
	if err := r.dir.WriteFileAtomic(name, data); err != nil {
		if errors.Is(err, confine.ErrNotWritable) {
			return nil, toolErrorf(errWriteDest)
		}
		return nil, toolErrorf(errWriteFailed)
	}
	return json.Marshal(writeResult{Path: name, Bytes: len(data), ContentHash: contentHash(data)})
}
