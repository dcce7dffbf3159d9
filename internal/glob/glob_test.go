package glob

import (
	"strings"
	"testing"
)

func TestMatch(t *testing.T) {
	tests := []struct {
		pat, path string
		want      bool
	}{
		{"lib/**", "lib/a.ts", true},
		{"lib/**", "lib/deep/a.ts", true},
		{"lib/**", "lib", false},
		{"lib/**", "libx/a", false},
		{"**", "a", true},
		{"**", "a/b/c", true},
		{"*.md", "a.md", true},
		{"*.md", "d/a.md", false},
		{"**/*.md", "a.md", true},
		{"**/*.md", "d/e/a.md", true},
		{"**/secrets/**", "secrets/k", true},
		{"**/secrets/**", "a/secrets/b/k", true},
		{"**/secrets/**", "a/secretsx/k", false},
		{"a?c", "abc", true},
		{"a?c", "a/c", false},
		{"a?c", "aéc", true},
		{"a*b*c", "axxbyyc", true},
		{"a*b*c", "axxbyy", false},
		{"a/**/b", "a/b", true},
		{"a/**/b", "a/x/y/b", true},
		{"a/**/**/b", "a/b", true},
	}
	for _, tt := range tests {
		g, err := Compile(tt.pat, false)
		if err != nil {
			t.Fatalf("Compile(%q): %v", tt.pat, err)
		}
		if got := g.Match(tt.path); got != tt.want {
			t.Errorf("%q.Match(%q) = %v, want %v", tt.pat, tt.path, got, tt.want)
		}
	}
}

func TestCompileRefuses(t *testing.T) {
	for _, p := range []string{"", "/abs", `a\b`, "a//b", "a/../b", "./a", "a\x00"} {
		if _, err := Compile(p, false); err == nil {
			t.Errorf("Compile(%q) accepted", p)
		}
	}
}

func TestBelow(t *testing.T) {
	tests := []struct {
		pat, dir     string
		could, allOf bool
	}{
		{"lib/**", "lib", true, true},
		{"lib/**", "docs", false, false},
		{"lib/*.ts", "lib", true, false},
		{"lib/*.ts", "lib/deep", false, false},
		{"**/secrets/**", "a/secrets", true, true},
		{"**/secrets/**", "a", true, false},
		{"*.md", "docs", false, false},
		{"**", "x", true, true},
	}
	for _, tt := range tests {
		g, _ := Compile(tt.pat, false)
		if got := g.CouldMatchBelow(tt.dir); got != tt.could {
			t.Errorf("%q.CouldMatchBelow(%q) = %v", tt.pat, tt.dir, got)
		}
		if got := g.MatchesAllBelow(tt.dir); got != tt.allOf {
			t.Errorf("%q.MatchesAllBelow(%q) = %v", tt.pat, tt.dir, got)
		}
	}
}

func TestSelector(t *testing.T) {
	s, err := NewSelector(Options{
		Include:        []string{"**"},
		Exclude:        []string{"**/secrets/**", "Private"},
		DefaultExclude: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path string
		want bool
	}{
		{"a.txt", true},
		{"node_modules/x.js", false},
		{"NODE_MODULES/x.js", false},
		{"a/b/Node_Modules/c/x.js", false},
		{"src/.env", false},
		{"src/.ENV.local", false},
		{"key.PEM", false},
		{"id_rsa", false},
		{"id_rsa.pub", true},
		{"keynote.key", true},
		{"build/out.txt", true},
		{"x/secrets/y", false},
		{"Private/a", false},
		{"private/a", true},
	}
	for _, tt := range tests {
		if got := selected(s, tt.path); got != tt.want {
			t.Errorf("Selected(%q) = %v, want %v", tt.path, got, tt.want)
		}
	}
	for _, d := range []string{"node_modules", "a/.git", "x/secrets", "Private"} {
		if !s.PruneDir(d) {
			t.Errorf("PruneDir(%q) = false", d)
		}
	}
	if s.PruneDir("src") {
		t.Error("PruneDir(src) = true")
	}
}

func TestSelectorNoDefaults(t *testing.T) {
	s, _ := NewSelector(Options{Include: []string{"**"}})
	if !selected(s, "node_modules/x.js") || !selected(s, ".env") {
		t.Error("--no-default-exclude still excludes")
	}
}

func TestTopLevelAndLiteral(t *testing.T) {
	tests := []struct {
		include  []string
		top      bool
		defeated string
	}{
		{[]string{"lib/**"}, false, ""},
		{[]string{"lib/**", "*.md"}, true, ""},
		{[]string{"**"}, true, ""},
		{[]string{"**/*.md"}, true, ""},
		{[]string{"docs/a.md"}, false, ""},
		{[]string{".env"}, true, ".env"},
		{[]string{"node_modules/pkg/index.js"}, false, "node_modules/pkg/index.js"},
	}
	for _, tt := range tests {
		s, _ := NewSelector(Options{Include: tt.include, DefaultExclude: true})
		if got := s.ReachesTopLevel(); got != tt.top {
			t.Errorf("%v: ReachesTopLevel = %v", tt.include, got)
		}
		if got := strings.Join(s.LiteralIncludesDefeated(), ","); got != tt.defeated {
			t.Errorf("%v: LiteralIncludesDefeated = %q", tt.include, got)
		}
	}
}

// FuzzMatch checks that pruning never hides a match: when a path matches, no
// ancestor may claim nothing below it could.
func FuzzMatch(f *testing.F) {
	f.Add("lib/**", "lib/a/b.ts")
	f.Add("**/*.md", "a/b.md")
	f.Add("a*?b/**/c", "axb/q/c")
	f.Add("**/node_modules", "a/node_modules")
	f.Add("**/*.pem", "x/k.pem")
	f.Add("**/*", "a/b")
	f.Fuzz(func(t *testing.T, pat, path string) {
		g, err := Compile(pat, false)
		if err != nil || path == "" || strings.Contains(path, "//") || strings.HasPrefix(path, "/") || strings.HasSuffix(path, "/") {
			return
		}
		if g.base != "" {
			slow := *g
			slow.base = ""
			for _, p := range []string{path, path[:max(0, strings.LastIndexByte(path, '/'))]} {
				if p == "" {
					continue
				}
				if g.Match(p) != slow.Match(p) || g.CouldMatchBelow(p) != slow.CouldMatchBelow(p) || g.MatchesAllBelow(p) != slow.MatchesAllBelow(p) {
					t.Fatalf("%q on %q: the **/X fast path disagrees with the segment walk", pat, p)
				}
			}
		}
		if !g.Match(path) {
			return
		}
		for i := 0; i < len(path); i++ {
			if path[i] == '/' && !g.CouldMatchBelow(path[:i]) {
				t.Fatalf("%q matches %q but CouldMatchBelow(%q) is false", pat, path, path[:i])
			}
		}
	})
}

// selected reports whether a file at path is served, every ancestor
// checked too.
func selected(s *Selector, path string) bool { return s.Included(path) && !s.Excluded(path) }
