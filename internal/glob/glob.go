// Package glob compiles the include and exclude patterns of a root and
// decides, path by path, what the root serves. The worker serves by it;
// the supervisor's manifest checks its globs with it, so a pattern the
// manifest accepts is one the worker starts with.
//
// A pattern is slash-separated segments. Within a segment `*` matches any run
// of characters and `?` any one character, never a slash; a segment that is
// exactly `**` matches zero or more whole segments. Everything else is
// literal.
package glob

import (
	"errors"
	"strings"
	"unicode/utf8"
)

// Glob is one compiled pattern.
type Glob struct {
	src  string
	segs []string // "**" or a segment pattern; lower-cased when fold is set
	fold bool
	// base is set for a pattern of the form **/X with X one segment
	// pattern: it then matches exactly the paths whose last segment
	// matches X, which needs no walk over the segments. Most excludes,
	// the built-in list included, have this form.
	base string
	// any is set for a pattern that matches every non-empty path ("**").
	any bool
}

// Compile parses a pattern. fold makes the match ignore case.
func Compile(pattern string, fold bool) (*Glob, error) {
	switch {
	case pattern == "":
		return nil, errors.New("empty pattern")
	case strings.HasPrefix(pattern, "/"):
		return nil, errors.New("pattern must be relative to the root")
	case strings.ContainsAny(pattern, "\\\x00"):
		return nil, errors.New("pattern must not contain a backslash or NUL")
	}
	p := pattern
	if fold {
		p = strings.ToLower(p)
	}
	g := &Glob{src: pattern, fold: fold}
	for seg := range strings.SplitSeq(p, "/") {
		switch seg {
		case "":
			return nil, errors.New("pattern has an empty segment")
		case ".", "..":
			return nil, errors.New("pattern must not contain . or .. segments")
		}
		if seg == "**" && len(g.segs) > 0 && g.segs[len(g.segs)-1] == "**" {
			continue // a/**/**/b is a/**/b
		}
		g.segs = append(g.segs, seg)
	}
	// A trailing "**" names what is below, so it needs at least one
	// segment: "lib/**" selects lib/a but not a file named lib.
	if last := len(g.segs) - 1; g.segs[last] == "**" {
		g.segs = append(g.segs[:last], "*", "**")
	}
	if len(g.segs) == 2 && g.segs[0] == "**" && g.segs[1] != "**" {
		g.base = g.segs[1]
	}
	g.any = len(g.segs) == 2 && g.segs[0] == "*" && g.segs[1] == "**"
	return g, nil
}

// String returns the pattern as written.
func (g *Glob) String() string { return g.src }

// Literal reports whether the pattern has no wildcard.
func (g *Glob) Literal() bool { return !strings.ContainsAny(g.src, "*?") }

// Match reports whether the pattern matches the whole path.
func (g *Glob) Match(path string) bool {
	if g.any {
		return path != ""
	}
	if g.base != "" {
		name := path[strings.LastIndexByte(path, '/')+1:]
		if g.fold {
			name = lowerASCIIFirst(name)
		}
		return path != "" && matchSegment(g.base, name)
	}
	return g.run(path, func(states []bool) bool { return states[len(g.segs)] })
}

// CouldMatchBelow reports whether some path strictly below dir might match.
// It answers true when unsure, so it is only fit for pruning.
func (g *Glob) CouldMatchBelow(dir string) bool {
	if g.base != "" {
		return true
	}
	return g.run(dir, func(states []bool) bool {
		for i := 0; i < len(g.segs); i++ {
			if states[i] {
				return true
			}
		}
		return false
	})
}

// MatchesAllBelow reports whether every path strictly below dir matches.
func (g *Glob) MatchesAllBelow(dir string) bool {
	if g.base != "" {
		return g.base == "*" // as allStars: only **/* matches every name below
	}
	return g.run(dir, func(states []bool) bool {
		for i := 0; i < len(g.segs); i++ {
			if states[i] && allStars(g.segs[i:]) {
				return true
			}
		}
		return false
	})
}

// MatchesSomeTopLevelName reports whether some one-segment path matches:
// that is, whether a file directly in the root can be selected.
func (g *Glob) MatchesSomeTopLevelName() bool {
	fixed := 0
	for _, s := range g.segs {
		if s != "**" {
			fixed++
		}
	}
	return fixed <= 1
}

// allStars reports whether segs match every non-empty path: only "**" and
// at most one "*", which needs a "**" beside it.
func allStars(segs []string) bool {
	single, double := 0, 0
	for _, s := range segs {
		switch s {
		case "*":
			single++
		case "**":
			double++
		default:
			return false
		}
	}
	return single == 0 || (single == 1 && double > 0)
}

// run feeds the path's segments through the pattern as a small NFA whose
// states are pattern positions, and hands the final state set to accept.
func (g *Glob) run(path string, accept func([]bool) bool) bool {
	if g.fold {
		path = lowerASCIIFirst(path)
	}
	n := len(g.segs)
	var buf [2][17]bool
	cur, next := buf[0][:], buf[1][:]
	if n+1 > len(cur) {
		cur, next = make([]bool, n+1), make([]bool, n+1)
	} else {
		cur, next = cur[:n+1], next[:n+1]
	}
	cur[0] = true
	g.closure(cur)
	if path != "" {
		for seg := range strings.SplitSeq(path, "/") {
			clear(next)
			live := false
			for i := 0; i < n; i++ {
				if !cur[i] {
					continue
				}
				if g.segs[i] == "**" {
					next[i] = true
					live = true
				} else if matchSegment(g.segs[i], seg) {
					next[i+1] = true
					live = true
				}
			}
			if !live {
				return false
			}
			g.closure(next)
			cur, next = next, cur
		}
	}
	return accept(cur)
}

// closure adds the states reachable by letting a "**" match nothing.
func (g *Glob) closure(states []bool) {
	for i := 0; i < len(g.segs); i++ {
		if states[i] && g.segs[i] == "**" {
			states[i+1] = true
		}
	}
}

// matchSegment matches one segment against a pattern of literals, '*' and
// '?', with the usual single-star backtracking.
func matchSegment(pat, s string) bool {
	if pat == "*" {
		return true
	}
	p, i := 0, 0
	star, mark := -1, 0
	for i < len(s) {
		switch {
		case p < len(pat) && pat[p] == '?':
			_, size := utf8.DecodeRuneInString(s[i:])
			p++
			i += size
		case p < len(pat) && pat[p] == '*':
			star, mark = p, i
			p++
		case p < len(pat) && pat[p] == s[i]:
			p++
			i++
		case star >= 0:
			_, size := utf8.DecodeRuneInString(s[mark:])
			mark += size
			p, i = star+1, mark
		default:
			return false
		}
	}
	for p < len(pat) && pat[p] == '*' {
		p++
	}
	return p == len(pat)
}

// lowerASCIIFirst lower-cases s as strings.ToLower does, without
// allocating when s has no upper-case letter (the common case).
func lowerASCIIFirst(s string) string {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf || ('A' <= c && c <= 'Z') {
			return strings.ToLower(s)
		}
	}
	return s
}
