package relpath

import (
	"path"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestClean(t *testing.T) {
	tests := []struct {
		in, want string
		bad      bool
	}{
		{in: "", want: ""},
		{in: ".", want: ""},
		{in: "a", want: "a"},
		{in: "lib/deep/a.ts", want: "lib/deep/a.ts"},
		{in: "./lib", bad: true},
		{in: "lib/.", bad: true},
		{in: "lib/../x", bad: true},
		{in: "..", bad: true},
		{in: "/etc/passwd", bad: true},
		{in: "C:/x", bad: true},
		{in: "c:x", bad: true},
		{in: `lib\a`, bad: true},
		{in: "a\x00b", bad: true},
		{in: "a//b", want: "a/b"},
		{in: "a/", want: "a"},
		{in: "lib///deep//", want: "lib/deep"},
		{in: "./", bad: true},
		{in: ".//", bad: true},
		{in: "./lib/", bad: true},
		{in: "lib/./x", bad: true},
		{in: "lib//x/", want: "lib/x"},
		{in: "//a", bad: true},
		{in: strings.Repeat("a", 256), want: strings.Repeat("a", 256)},
		{in: strings.Repeat("é", 1024), want: strings.Repeat("é", 1024)},
		{in: strings.Repeat("é", 1025), bad: true},
		{in: strings.Repeat("a/", 512) + "a", bad: true},
		{in: "...", want: "..."},
		{in: "ab:c", want: "ab:c"},
	}
	for _, tt := range tests {
		got, err := Clean(tt.in)
		if tt.bad {
			if err != ErrNotRelative {
				t.Errorf("Clean(%q) = %q, %v; want ErrNotRelative", tt.in, got, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("Clean(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

// FuzzClean holds Clean to the path rules (docs/reference.md, Paths) from
// both sides: what it accepts is returned unchanged, already clean by
// path.Clean, local by filepath.IsLocal (no climb, not absolute, no drive
// or reserved name trick), within the size limits and free of backslash and
// NUL; and what it refuses breaks one of those rules, so nothing valid is
// turned away.
func FuzzClean(f *testing.F) {
	for _, s := range []string{"", ".", "a/b", "../x", "/abs", `a\b`, "a//b", "C:/", "..", "a/..", "a/../b", "./a", "a/.", "./", ".//",
		"...", "a/.../b", "..a", "a..", ". a", "a\x00", "c:", "ab:c", "a/b:", "C:x", "//", "/..", "a/", "~/x", "%2e%2e",
		"\u2025", "\uff0e\uff0e/x", strings.Repeat("a", 255), strings.Repeat("a", 256), strings.Repeat("ab/", 1365) + "a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		got, err := Clean(p)
		// Trailing and doubled slashes are dropped; what is left must
		// follow every rule.
		trimmed := strings.TrimRight(p, "/")
		for strings.Contains(trimmed, "//") {
			trimmed = strings.ReplaceAll(trimmed, "//", "/")
		}
		if strings.HasPrefix(p, "/") {
			trimmed = "/" + trimmed
		}
		if err != nil {
			// Refused: it must break a rule ("./" is a dot segment
			// followed by a slash).
			if trimmed != "" && trimmed != "." && utf8.RuneCountInString(p) <= MaxPathChars && path.Clean(trimmed) == trimmed && filepath.IsLocal(trimmed) &&
				!strings.ContainsAny(p, "\\\x00") && !(len(p) >= 2 && p[1] == ':' && isASCIILetter(p[0])) {
				t.Fatalf("Clean(%q) refused a valid path: %v", p, err)
			}
			return
		}
		// Only a bare "." names the root.
		if p == "." {
			trimmed = ""
		}
		if got != trimmed {
			t.Fatalf("Clean(%q) = %q; want %q", p, got, trimmed)
		}
		if got == "" {
			return
		}
		again, err := Clean(got)
		if err != nil || again != got {
			t.Fatalf("Clean is not idempotent on %q: %q, %v", got, again, err)
		}
		if path.Clean(got) != got || !filepath.IsLocal(got) || utf8.RuneCountInString(got) > MaxPathChars ||
			strings.ContainsAny(got, "\\\x00") || (got[1%len(got)] == ':' && isASCIILetter(got[0])) {
			t.Fatalf("Clean(%q) accepted a path that breaks the path rules", p)
		}
		for seg := range strings.SplitSeq(got, "/") {
			if seg == "" || seg == "." || seg == ".." {
				t.Fatalf("Clean(%q) = %q holds a bad segment %q", p, got, seg)
			}
		}
		// Below the root means below it: joined to a root, the path stays
		// there.
		if j := filepath.Join("/root", got); !strings.HasPrefix(j, "/root/") {
			t.Fatalf("Clean(%q) accepted a path that joins to %q", p, j)
		}
	})
}
