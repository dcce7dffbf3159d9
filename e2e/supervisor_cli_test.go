package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestSupervisorEntry: the entry subcommand prints a host entry that runs
// this supervisor on the manifest, by absolute paths.
func TestSupervisorEntry(t *testing.T) {
	bins := buildSupervisorBins(t)
	good, _ := exampleManifest(t, "reader-writer.yaml", "workspace", "outbox")
	out, err := exec.Command(bins.supervisor, "entry", good).Output()
	if err != nil {
		t.Fatal(err)
	}
	var e struct {
		MCPServers map[string]struct {
			Command string            `json:"command"`
			Args    []string          `json:"args"`
			Env     map[string]string `json:"env"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal(out, &e); err != nil {
		t.Fatalf("entry output %q: %v", out, err)
	}
	s, ok := e.MCPServers["fsmcp"]
	if !ok || s.Command != bins.supervisor || !slices.Equal(s.Args, []string{"--manifest", good}) {
		t.Errorf("entry %s", out)
	}
	if s.Env == nil || len(s.Env) != 0 {
		t.Errorf("entry env %v, want an empty object", s.Env)
	}
	// A root with a cursor key names its variable (never a value), and the
	// variable need not be set to print the entry.
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "ws"), 0o755)
	keyed := filepath.Join(dir, "m.yaml")
	writeFile(t, keyed, "version: 1\nroots:\n  - name: reader\n    path: ws\n    include: ['**']\n    tools: read\n    cursor_key_env: FSMCP_E2E_UNSET_KEY\n")
	cmd := exec.Command(bins.supervisor, "entry", keyed)
	cmd.Env = []string{}
	out, err = cmd.Output()
	if err != nil {
		t.Fatalf("entry with an unset key variable: %v", err)
	}
	if !strings.Contains(string(out), `"FSMCP_E2E_UNSET_KEY": "<base64url cursor key for root reader>"`) {
		t.Errorf("entry %s does not name the key variable", out)
	}
}

// TestSupervisorCLI: usage mistakes and the check subcommand answer with
// one short stderr line and status 64 (0 for a good manifest), never a hang.
func TestSupervisorCLI(t *testing.T) {
	bins := buildSupervisorBins(t)
	good, _ := exampleManifest(t, "outbox.yaml", "outbox")
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	writeFile(t, bad, "version: 1\nroots:\n  - name: x\n    path: nowhere\n    include: ['**']\n    tools: read\n")
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"no manifest", nil, 64, "usage: fsmcp-supervisor --manifest FILE"},
		{"unknown flag", []string{"--manifest", good, "--colour"}, 64, "flag provided but not defined: -colour"},
		{"missing manifest file", []string{"--manifest", "/nonexistent/m.yaml", "--worker", bins.worker}, 64, "/nonexistent/m.yaml: cannot read manifest: no such file or directory"},
		{"missing worker binary", []string{"--manifest", good, "--worker", "/nonexistent/fsmcp-worker"}, 64, "worker binary /nonexistent/fsmcp-worker: no such file or directory"},
		{"check good", []string{"check", good}, 0, ""},
		{"help", []string{"--help"}, 0, ""},
		{"version", []string{"--version"}, 0, ""},
		{"check bad", []string{"check", bad}, 64, bad + ":4: roots[0].path: root folder \"nowhere\" does not exist"},
		{"entry bad", []string{"entry", bad}, 64, bad + ":4: roots[0].path"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bins.supervisor, tc.args...)
			cmd.Env = os.Environ()
			var stderr syncBuffer
			cmd.Stderr = &stderr
			_ = cmd.Run()
			if code := cmd.ProcessState.ExitCode(); code != tc.code {
				t.Fatalf("exit %d, want %d; stderr %q", code, tc.code, stderr.String())
			}
			got := stderr.String()
			if tc.stderr == "" {
				if got != "" {
					t.Errorf("stderr %q, want none", got)
				}
				return
			}
			if strings.Count(got, "\n") != 1 || !strings.Contains(got, tc.stderr) {
				t.Errorf("stderr %q, want one line containing %q", got, tc.stderr)
			}
		})
	}
}
