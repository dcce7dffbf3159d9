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
