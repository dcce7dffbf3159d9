package relpath

import (
	"strings"
	"testing"
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
		{in: "a//b", bad: true},
		{in: "a/", bad: true},
		{in: strings.Repeat("a", 256), bad: true},
		{in: strings.Repeat("a/", 2100) + "a", bad: true},
		{in: "...", want: "..."},
		{in: "ab:c", want: "ab:c"},
	}
	for _, tt := range tests {
		got, err := Clean(tt.in)
		if tt.bad {
			if err == nil {
				t.Errorf("Clean(%q) = %q, want an error", tt.in, got)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("Clean(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestWithin(t *testing.T) {
	tests := []struct {
		path, dir string
		want      bool
	}{
		{"a/b", "", true},
		{"a/b", "a", true},
		{"a", "a", true},
		{"ab/c", "a", false},
		{"a", "a/b", false},
	}
	for _, tt := range tests {
		if got := Within(tt.path, tt.dir); got != tt.want {
			t.Errorf("Within(%q, %q) = %v", tt.path, tt.dir, got)
		}
	}
}

func FuzzClean(f *testing.F) {
	for _, s := range []string{"", ".", "a/b", "../x", "/abs", `a\b`, "a//b", "C:/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		got, err := Clean(p)
		if err != nil {
			return
		}
		again, err := Clean(got)
		if err != nil || again != got {
			t.Fatalf("Clean is not idempotent on %q: %q, %v", got, again, err)
		}
		if got == "" {
			return
		}
		for seg := range strings.SplitSeq(got, "/") {
			if seg == "" || seg == "." || seg == ".." || strings.ContainsAny(seg, "\\\x00") {
				t.Fatalf("Clean(%q) = %q holds a bad segment %q", p, got, seg)
			}
		}
	})
}
