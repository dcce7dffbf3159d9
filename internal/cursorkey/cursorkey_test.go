package cursorkey

import (
	"encoding/base64"
	"os"
	"os/exec"
	"strings"
	"testing"
)

func TestDecode(t *testing.T) {
	good := base64.RawURLEncoding.EncodeToString(make([]byte, 32))
	if _, err := Decode(good); err != nil {
		t.Fatalf("good key refused: %v", err)
	}
	for name, v := range map[string]string{
		"empty":  "",
		"padded": base64.URLEncoding.EncodeToString(make([]byte, 32)),
		"short":  base64.RawURLEncoding.EncodeToString(make([]byte, 31)),
		"std":    strings.Repeat("+", 43),
		"junk":   "!!!!",
	} {
		_, err := Decode(v)
		if err == nil {
			t.Errorf("%s key accepted", name)
		} else if v != "" && strings.Contains(err.Error(), v) {
			t.Errorf("%s: error leaks the value", name)
		}
	}
}

// TestReadmeGivesCommand: the README offers Command to make a key.
func TestReadmeGivesCommand(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "\n"+Command+"\n") {
		t.Errorf("README does not give the key command %q on a line of its own", Command)
	}
}

// TestCommandMakesKey: Command, run by sh, prints a key Decode accepts
// (head, base64 and tr are on Linux and macOS alike).
func TestCommandMakesKey(t *testing.T) {
	for i := 0; i < 8; i++ {
		out, err := exec.Command("sh", "-c", Command).Output()
		if err != nil {
			t.Fatalf("%s: %v", Command, err)
		}
		k, err := Decode(string(out))
		if err != nil {
			t.Fatalf("%s printed a value that %v", Command, err)
		}
		if len(k) != MinBytes {
			t.Fatalf("%s printed %d bytes, want %d", Command, len(k), MinBytes)
		}
	}
}
