// Package relpath holds the path rules of a served root (docs/reference.md,
// Paths): the only spelling of a path a client may use. A path is relative
// and slash-separated; a trailing or doubled slash is dropped, and anything
// else that would need resolving is refused rather than resolved.
package relpath

import (
	"errors"
	"strings"
	"unicode/utf8"
)

// MaxPathChars is the longest path accepted, in characters.
const MaxPathChars = 1024

// ErrNotRelative is the one answer for a path that breaks the rules.
var ErrNotRelative = errors.New("path is not a relative path inside the root")

// Clean checks p against the path rules and returns its canonical form: ""
// names the root, and so does a bare "."; every other path is its segments
// joined by single slashes ("lib/" and "lib//x" are "lib" and "lib/x").
// Absolute paths, drive prefixes, backslashes, NUL bytes, "." or ".."
// segments (so "./", ".//", "./lib" and "lib/." too) and paths over
// MaxPathChars characters are refused with ErrNotRelative.
func Clean(p string) (string, error) {
	if utf8.RuneCountInString(p) > MaxPathChars || strings.ContainsAny(p, "\x00\\") ||
		strings.HasPrefix(p, "/") || len(p) >= 2 && p[1] == ':' && isASCIILetter(p[0]) {
		return "", ErrNotRelative
	}
	if p == "." {
		return "", nil
	}
	segs := make([]string, 0, strings.Count(p, "/")+1)
	for seg := range strings.SplitSeq(p, "/") {
		switch seg {
		case "":
			continue
		case ".", "..":
			return "", ErrNotRelative
		}
		segs = append(segs, seg)
	}
	return strings.Join(segs, "/"), nil
}

// Join joins a clean directory path and one name.
func Join(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

func isASCIILetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }
