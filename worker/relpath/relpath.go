// Package relpath is the path contract of a served root: the only spelling
// of a path a client may use. A path is relative, slash-separated and already
// clean; anything that would need resolving is refused rather than resolved.
package relpath

import (
	"errors"
	"strings"
)

// Limits on a path's size, in bytes.
const (
	MaxPathBytes    = 4096
	MaxSegmentBytes = 255
)

// Clean checks p against the contract and returns its canonical form: ""
// names the root (a bare "." is accepted as another spelling of it); every
// other path is segments joined by single slashes. Absolute paths, drive
// letters, backslashes, NUL bytes, empty segments and "." or ".." segments
// are refused.
func Clean(p string) (string, error) {
	if p == "" || p == "." {
		return "", nil
	}
	if len(p) > MaxPathBytes {
		return "", errors.New("path is longer than 4096 bytes")
	}
	if strings.IndexByte(p, 0) >= 0 {
		return "", errors.New("path contains a NUL byte")
	}
	if strings.IndexByte(p, '\\') >= 0 {
		return "", errors.New("path contains a backslash; use forward slashes")
	}
	if p[0] == '/' {
		return "", errors.New("path must be relative to the root, not absolute")
	}
	if len(p) >= 2 && p[1] == ':' && isASCIILetter(p[0]) {
		return "", errors.New("path must be relative to the root, not a drive path")
	}
	for seg := range strings.SplitSeq(p, "/") {
		switch {
		case seg == "":
			return "", errors.New("path has an empty segment (a doubled or trailing slash)")
		case seg == "." || seg == "..":
			return "", errors.New("path must not contain . or .. segments")
		case len(seg) > MaxSegmentBytes:
			return "", errors.New("path has a segment longer than 255 bytes")
		}
	}
	return p, nil
}

// Join joins a clean directory path and one name.
func Join(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// Within reports whether path is dir or lies below it.
func Within(path, dir string) bool {
	if dir == "" {
		return true
	}
	return path == dir || (len(path) > len(dir) && path[len(dir)] == '/' && path[:len(dir)] == dir)
}

func isASCIILetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }
