package worker

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"unicode"

	"github.com/fsmcp/fsmcp/worker/confine"
	"github.com/fsmcp/fsmcp/worker/relpath"
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

func (r *Root) writeTextFile(_ context.Context, a writeArgs) ([]byte, error) {
	name, err := relpath.Clean(a.Path)
	switch {
	case err != nil:
		return nil, toolErrorf("%v", err)
	case name == "":
		return nil, toolErrorf("path must name a file: one lowercase basename in the root")
	case strings.Contains(name, "/"):
		return nil, toolErrorf("write_text_file takes one basename in the root, not a path with directories")
	case strings.IndexFunc(name, unicode.IsUpper) >= 0:
		return nil, toolErrorf("write_text_file takes a lowercase basename")
	case strings.IndexFunc(name, unicode.IsControl) >= 0:
		return nil, toolErrorf("path must not contain control characters")
	case confine.IsTempName(name):
		return nil, toolErrorf("%q is reserved for the server's temporary files", name)
	case a.Content == nil:
		return nil, toolErrorf("content is required")
	}
	if !r.sel.ReachesTopLevel() {
		return nil, toolErrorf("no --include pattern of this root matches a file in the root itself")
	}
	if !r.sel.Included(name) {
		return nil, toolErrorf("%q is not matched by any --include pattern of this root, so it could not be read back", name)
	}
	if r.sel.Excluded(name) {
		return nil, toolErrorf("%q is excluded (by --exclude or the built-in list), so it could not be read back", name)
	}
	data := []byte(*a.Content)
	if int64(len(data)) > r.lim.MaxWriteBytes {
		return nil, toolErrorf("content is %d bytes; --max-write-bytes allows %d", len(data), r.lim.MaxWriteBytes)
	}
	if r.lim.MaxFileBytes > 0 && int64(len(data)) > r.lim.MaxFileBytes {
		return nil, toolErrorf("content is %d bytes; files over --max-file-bytes %d are not served, so it could not be read back", len(data), r.lim.MaxFileBytes)
	}
	if err := r.dir.WriteFileAtomic(name, data); err != nil {
		if errors.Is(err, confine.ErrNotRegular) {
			return nil, toolErrorf("%q exists and is not a regular file", name)
		}
		return nil, toolErrorf("could not write %q; the old contents, if any, are unchanged", name)
	}
	return json.Marshal(writeResult{Path: name, Bytes: len(data), ContentHash: "sha256:" + sha256Hex(data)})
}
