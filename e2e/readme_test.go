//go:build linux

package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// readmeCommand is the first line of the README that starts with prefix,
// split into words as a shell would split it (single quotes only).
func readmeCommand(t *testing.T, prefix string) []string {
	t.Helper()
	data, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		var words []string
		var word strings.Builder
		quoted, inWord := false, false
		for _, r := range line {
			switch {
			case r == '\'':
				quoted, inWord = !quoted, true
			case r == ' ' && !quoted:
				if inWord {
					words = append(words, word.String())
					word.Reset()
					inWord = false
				}
			default:
				word.WriteRune(r)
				inWord = true
			}
		}
		if inWord {
			words = append(words, word.String())
		}
		return words
	}
	t.Fatalf("README has no line starting %q", prefix)
	return nil
}

// TestReadmeFirstCommand: the README's first command works from a fresh
// checkout with only Go installed: `go run` builds the supervisor, which
// builds the worker it cannot find, and prints the listing. .ci/run runs
// the same line.
func TestReadmeFirstCommand(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal("go is not on $PATH")
	}
	words := readmeCommand(t, "go run ./cmd/fsmcp-supervisor call ")
	ci, err := os.ReadFile("../.ci/run")
	if err != nil || !strings.Contains(string(ci), "\n"+strings.Join(words[:len(words)-1], " ")+" '"+words[len(words)-1]+"'\n") {
		t.Errorf(".ci/run does not run the README's first command %q (%v)", words, err)
	}
	cmd := exec.Command(goBin, words[1:]...)
	cmd.Dir = ".."
	// Only go's own folder on $PATH, so no installed fsmcp-worker is found.
	cmd.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "PATH=") }), "PATH="+filepath.Dir(goBin))
	var stdout, stderr syncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v: %s", err, stderr.String())
	}
	var page struct{ Items []struct{ Path, Type string } }
	if err := json.Unmarshal([]byte(stdout.String()), &page); err != nil || !slices.ContainsFunc(page.Items, func(it struct{ Path, Type string }) bool { return it.Path == "README.md" }) {
		t.Errorf("printed %q (%v), want the workspace listing with README.md", stdout.String(), err)
	}
}

// TestReadmeGoVersion: the README names the Go version go.mod requires.
func TestReadmeGoVersion(t *testing.T) {
	mod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(mod)
	readme, err := os.ReadFile("../README.md")
	if err != nil || m == nil {
		t.Fatalf("go.mod %q, README %v", m, err)
	}
	if want := "Go " + string(m[1]) + " or newer"; !strings.Contains(string(readme), want) || regexp.MustCompile(`Go 1\.[0-9.]+ or newer`).FindString(string(readme)) != want {
		t.Errorf("README does not say %q first", want)
	}
}

// TestReadmeLinks: every link from the README into docs/ names a file and,
// where it has one, a heading that exists there (GitHub's anchor rules).
func TestReadmeLinks(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	slug := func(h string) string {
		var b strings.Builder
		for _, r := range strings.ToLower(h) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9'):
				b.WriteRune(r)
			}
		}
		return b.String()
	}
	links := regexp.MustCompile(`\]\((docs/[a-z]+\.md)(?:#([^)]+))?\)`).FindAllStringSubmatch(string(readme), -1)
	if len(links) < 4 {
		t.Fatalf("only %d links into docs/", len(links))
	}
	for _, l := range links {
		doc, err := os.ReadFile(filepath.Join("..", l[1]))
		if err != nil {
			t.Errorf("README links %s: %v", l[1], err)
			continue
		}
		if l[2] == "" {
			continue
		}
		found := false
		for _, line := range strings.Split(string(doc), "\n") {
			if h, ok := strings.CutPrefix(strings.TrimLeft(line, "#"), " "); ok && strings.HasPrefix(line, "#") && slug(h) == l[2] {
				found = true
			}
		}
		if !found {
			t.Errorf("README links %s#%s, which has no such heading", l[1], l[2])
		}
	}
}
