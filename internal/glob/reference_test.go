package glob

import (
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// referenceRegexp translates a pattern, as the package documents it, into a
// regular expression over whole paths: `*` is any run within a segment,
// `?` one character of it, a `**` segment zero or more whole segments, a
// trailing `**` one or more, and everything else literal.
func referenceRegexp(pattern string) *regexp.Regexp {
	segs := strings.Split(pattern, "/")
	var b strings.Builder
	b.WriteString(`^`)
	for i, seg := range segs {
		last := i == len(segs)-1
		switch {
		case seg == "**" && last:
			b.WriteString(`[^/]+(?:/[^/]+)*`)
		case seg == "**":
			b.WriteString(`(?:[^/]+/)*`)
		default:
			for _, r := range seg {
				switch r {
				case '*':
					b.WriteString(`[^/]*`)
				case '?':
					b.WriteString(`[^/]`)
				default:
					b.WriteString(regexp.QuoteMeta(string(r)))
				}
			}
			if !last {
				b.WriteString(`/`)
			}
		}
	}
	b.WriteString(`$`)
	return regexp.MustCompile(b.String())
}

// FuzzMatchReference checks Match against referenceRegexp, with and without
// case folding (both sides lower-cased), for every valid UTF-8 pattern and
// clean path.
func FuzzMatchReference(f *testing.F) {
	for _, s := range [][2]string{
		{"lib/**", "lib/a/b.ts"}, {"lib/**", "lib"}, {"**", "a"}, {"**/*.md", "a.md"}, {"**/*.md", "x/y/a.md"},
		{"a/**/b", "a/b"}, {"a/**/**/b", "a/x/b"}, {"**/secrets/**", "secrets/k"}, {"*.PEM", "key.pem"},
		{"a?c", "aéc"}, {"a*b*c", "axxbyyc"}, {"*a*", "bab"}, {"**/node_modules", "a/NODE_MODULES"},
		{"x/**/y/**", "x/y/z"}, {"?", "é"}, {"**/.env.*", "a/.env.local"}, {"*", "a/b"}, {"a/*", "a/b/c"},
		{"**/*", "a"}, {"İ*", "i̇x"}, {"[a]", "[a]"}, {"a.b", "axb"}, {"(x)+", "(x)+"},
	} {
		f.Add(s[0], s[1], false)
		f.Add(s[0], s[1], true)
	}
	f.Fuzz(func(t *testing.T, pat, path string, fold bool) {
		if !utf8.ValidString(pat) || !utf8.ValidString(path) || path == "" ||
			strings.Contains(path, "//") || strings.HasPrefix(path, "/") || strings.HasSuffix(path, "/") {
			return
		}
		g, err := Compile(pat, fold)
		if err != nil {
			return
		}
		rp, rs := pat, path
		if fold {
			rp, rs = strings.ToLower(pat), strings.ToLower(path)
		}
		if want := referenceRegexp(rp).MatchString(rs); g.Match(path) != want {
			t.Fatalf("Compile(%q, fold=%v).Match(%q) = %v, reference says %v", pat, fold, path, !want, want)
		}
		// Pruning never hides a match: a directory above a matching path
		// may hold a match, and if every path below it matches, so does
		// this one.
		for i := 0; i < len(path); i++ {
			if path[i] != '/' {
				continue
			}
			dir := path[:i]
			if g.Match(path) && !g.CouldMatchBelow(dir) {
				t.Fatalf("%q matches %q but CouldMatchBelow(%q) is false", pat, path, dir)
			}
			if g.MatchesAllBelow(dir) && !g.Match(path) {
				t.Fatalf("%q: MatchesAllBelow(%q) but %q does not match", pat, dir, path)
			}
		}
	})
}
