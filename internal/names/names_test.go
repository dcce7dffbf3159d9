package names

import (
	"os"
	"strings"
	"testing"
)

func TestRoot(t *testing.T) {
	for s, want := range map[string]bool{
		"reader": true, "a": true, "a-1": true, "a" + strings.Repeat("b", 31): true,
		"": false, "Reader": false, "1a": false, "-a": false, "a_b": false, "a" + strings.Repeat("b", 32): false,
	} {
		if Root(s) != want {
			t.Errorf("Root(%q) = %v", s, !want)
		}
	}
}

func TestEnv(t *testing.T) {
	for s, want := range map[string]bool{
		"FSMCP_KEY": true, "_k": true, "k1": true,
		"": false, "1K": false, "A-B": false, "A B": false, "A=B": false,
	} {
		if Env(s) != want {
			t.Errorf("Env(%q) = %v", s, !want)
		}
	}
}

// TestDocsGivePattern: the README's --name option and the manifest
// reference's name row give RootPattern as it is.
func TestDocsGivePattern(t *testing.T) {
	for file, prefix := range map[string]string{
		"README.md":         "| `--name NAME` |",
		"docs/reference.md": "| `roots[].name` |",
	} {
		b, err := os.ReadFile("../../" + file)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for line := range strings.SplitSeq(string(b), "\n") {
			if strings.HasPrefix(line, prefix) {
				found = true
				if !strings.Contains(line, "`"+RootPattern+"`") {
					t.Errorf("%s: %q does not give `%s`", file, line, RootPattern)
				}
			}
		}
		if !found {
			t.Errorf("%s has no row starting %q", file, prefix)
		}
	}
}
