package glob

import (
	"fmt"
	"strings"
)

// DefaultExcludes is the built-in exclude list: dependency and tool output
// directories, and file names that hold credentials more often than content.
// Each entry matches a path segment at any depth, without regard to case.
var DefaultExcludes = []string{
	"**/node_modules", "**/_build", "**/deps", "**/__pycache__", "**/bower_components",
	"**/.git", "**/.hg", "**/.svn", "**/.venv", "**/.tox", "**/.next", "**/.nuxt",
	"**/.gradle", "**/.terraform", "**/.turbo", "**/.cargo", "**/.bundle", "**/.elixir_ls",
	"**/.mypy_cache", "**/.pytest_cache", "**/.parcel-cache", "**/.ruff_cache",
	"**/.env", "**/.env.*", "**/*.pem", "**/*.p12", "**/*.pfx",
	"**/id_rsa", "**/id_dsa", "**/id_ecdsa", "**/id_ed25519", "**/id_ecdsa_sk", "**/id_ed25519_sk",
}

// Selector decides what a root serves: a file is served when an include
// pattern matches its path and no exclude pattern matches it or any of its
// ancestors. Excludes only narrow.
type Selector struct {
	include []*Glob
	// Excludes of the form **/name with a literal name, by exact and by
	// lower-cased name: a set lookup instead of one match per pattern.
	// The built-in list is almost all of this form.
	exactNames, foldNames map[string]bool
	// Case-insensitive excludes **/X with a wildcard in X: X lower-cased.
	foldBases []string
	exclude   []*Glob // the other excludes
	defaults  []*Glob // the built-in ones again, for LiteralIncludesDefeated
	hidden    func(path string) bool
}

// addExclude files g under the cheapest check that decides it.
func (s *Selector) addExclude(g *Glob) {
	switch {
	case g.base == "" || (!g.fold && strings.ContainsAny(g.base, "*?")):
		s.exclude = append(s.exclude, g)
		return
	case strings.ContainsAny(g.base, "*?"):
		s.foldBases = append(s.foldBases, g.base)
		return
	}
	set := &s.exactNames
	if g.fold {
		set = &s.foldNames
	}
	if *set == nil {
		*set = map[string]bool{}
	}
	(*set)[g.base] = true
}

// Options configure a Selector.
type Options struct {
	Include        []string
	Exclude        []string
	DefaultExclude bool
	// Hidden, if set, hides paths whatever the patterns say (the worker's
	// temporary write files).
	Hidden func(path string) bool
}

// NewSelector compiles the patterns; an error names the bad pattern.
func NewSelector(o Options) (*Selector, error) {
	s := &Selector{hidden: o.Hidden}
	for _, p := range o.Include {
		g, err := Compile(p, false)
		if err != nil {
			return nil, fmt.Errorf("--include %q: %w", p, err)
		}
		s.include = append(s.include, g)
	}
	for _, p := range o.Exclude {
		g, err := Compile(p, false)
		if err != nil {
			return nil, fmt.Errorf("--exclude %q: %w", p, err)
		}
		s.addExclude(g)
	}
	if o.DefaultExclude {
		for _, p := range DefaultExcludes {
			g, err := Compile(p, true)
			if err != nil {
				panic(err) // the list is a constant
			}
			s.defaults = append(s.defaults, g)
			s.addExclude(g)
		}
	}
	return s, nil
}

// ExcludesSelf reports whether an exclude pattern matches path itself (its
// ancestors are not consulted; a walk has already checked them).
func (s *Selector) ExcludesSelf(path string) bool {
	if s.hidden != nil && s.hidden(path) {
		return true
	}
	if path != "" {
		name := path[strings.LastIndexByte(path, '/')+1:]
		if s.exactNames[name] {
			return true
		}
		if s.foldNames != nil || s.foldBases != nil {
			lower := lowerASCIIFirst(name)
			if s.foldNames[lower] {
				return true
			}
			for _, b := range s.foldBases {
				if matchSegment(b, lower) {
					return true
				}
			}
		}
	}
	return matchAny(s.exclude, path)
}

// Excluded reports whether path or any ancestor of it is excluded.
func (s *Selector) Excluded(path string) bool {
	for i := 0; i < len(path); i++ {
		if path[i] == '/' && s.ExcludesSelf(path[:i]) {
			return true
		}
	}
	return path != "" && s.ExcludesSelf(path)
}

// PruneDir reports whether a walk may skip the directory dir (its ancestors
// already checked): it is excluded, everything below it is excluded, or no
// include pattern can match below it.
func (s *Selector) PruneDir(dir string) bool {
	if dir == "" {
		return false
	}
	if s.ExcludesSelf(dir) {
		return true
	}
	for _, g := range s.exclude {
		if g.MatchesAllBelow(dir) {
			return true
		}
	}
	for _, g := range s.include {
		if g.CouldMatchBelow(dir) {
			return false
		}
	}
	return true
}

// Included reports whether an include pattern matches path.
func (s *Selector) Included(path string) bool {
	return matchAny(s.include, path)
}

// FileSelected reports whether a file at path is served, given that a walk
// has already accepted its ancestors.
func (s *Selector) FileSelected(path string) bool {
	return s.Included(path) && !s.ExcludesSelf(path)
}

// ReachesTopLevel reports whether some include pattern can select a file
// directly in the root, where every write lands.
func (s *Selector) ReachesTopLevel() bool {
	for _, g := range s.include {
		if g.MatchesSomeTopLevelName() {
			return true
		}
	}
	return false
}

// LiteralIncludesDefeated lists the literal (wildcard-free) include patterns
// that a built-in exclude covers, so the operator can be told.
func (s *Selector) LiteralIncludesDefeated() []string {
	var out []string
	for _, g := range s.include {
		if !g.Literal() {
			continue
		}
		p := g.String()
		for i := 0; i <= len(p); i++ {
			if i < len(p) && p[i] != '/' {
				continue
			}
			if matchAny(s.defaults, p[:i]) {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

func matchAny(gs []*Glob, path string) bool {
	for _, g := range gs {
		if g.Match(path) {
			return true
		}
	}
	return false
}
