//go:build linux

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

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// launch is one server a printed host entry starts: what the host spawns,
// and the tools it should list.
type launch struct {
	name, command, dir string
	args, env          []string
	tools              []string // the tools the entry maps or expects, sorted
}

// printedLaunches reads the servers a host document of format declares, as
// the host reads them: mcpServers and VS Code entries start from / (as
// Claude Desktop does) with exactly their env, the placeholder of a key
// replaced by the key; a PtcRunner installation starts in its cwd relative
// to the document's folder, with a scrubbed environment plus its
// credential bindings, read from hostEnv.
func printedLaunches(t *testing.T, format, out, docDir string, hostEnv map[string]string) []launch {
	t.Helper()
	keyed := func(env map[string]string) []string {
		list := []string{}
		for k, v := range env {
			if v != "<base64url cursor key for root reader>" {
				t.Errorf("%s: env %s=%q, want the reader key's placeholder", format, k, v)
			}
			list = append(list, k+"="+hostEnv[k])
		}
		return list
	}
	everyTool := []string{"reader_list_directory", "reader_read_text_file", "reader_search_files", "reader_search_text", "writer_write_text_file"}
	var ls []launch
	switch format {
	case "mcp-json", "vscode":
		var doc struct {
			MCPServers map[string]struct {
				Command string            `json:"command"`
				Args    []string          `json:"args"`
				Env     map[string]string `json:"env"`
			} `json:"mcpServers"`
			Servers map[string]struct {
				Type    string            `json:"type"`
				Command string            `json:"command"`
				Args    []string          `json:"args"`
				Env     map[string]string `json:"env"`
			} `json:"servers"`
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatalf("%s: %v\n%s", format, err, out)
		}
		for name, s := range doc.MCPServers {
			ls = append(ls, launch{name: name, command: s.Command, args: s.Args, env: keyed(s.Env), dir: "/", tools: everyTool})
		}
		for name, s := range doc.Servers {
			if s.Type != "stdio" {
				t.Errorf("vscode server %s has type %q, want stdio", name, s.Type)
			}
			ls = append(ls, launch{name: name, command: s.Command, args: s.Args, env: keyed(s.Env), dir: "/", tools: everyTool})
		}
	case "ptc":
		var doc struct {
			Credentials map[string]struct{ Env string } `json:"credentials"`
			Install     map[string]struct {
				Transport struct {
					Command            string                              `json:"command"`
					Args               []string                            `json:"args"`
					Cwd                string                              `json:"cwd"`
					InheritEnvironment *bool                               `json:"inherit_environment"`
					Env                map[string]struct{ Binding string } `json:"env"`
				} `json:"transport"`
				Tools map[string]struct{ As string } `json:"tools"`
			} `json:"install"`
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatalf("ptc: %v\n%s", err, out)
		}
		for alias, inst := range doc.Install {
			tr := inst.Transport
			env := []string{}
			if tr.InheritEnvironment == nil || *tr.InheritEnvironment {
				t.Errorf("%s: inherit_environment is not false", alias)
			}
			for k, b := range tr.Env {
				env = append(env, k+"="+hostEnv[doc.Credentials[b.Binding].Env])
			}
			l := launch{name: alias, command: tr.Command, args: tr.Args, env: env, dir: filepath.Join(docDir, cmpOr(tr.Cwd, "."))}
			for upstream := range inst.Tools {
				l.tools = append(l.tools, upstream)
			}
			ls = append(ls, l)
		}
	}
	for i := range ls {
		slices.Sort(ls[i].tools)
	}
	return ls
}

// cmpOr is s, or def when s is empty.
func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// TestHostEntriesWorkAsPrinted: every host entry host-entry prints, for
// mcpServers hosts (Claude Desktop, Cursor), VS Code and PtcRunner (one
// installation, or one per root), started the way its host starts it,
// serves the tools it names: it reads through the reader root with its
// cursor key and writes through the writer root. The manifest is named by
// a relative path from another folder than the host's, and the host's
// environment has no $PATH.
func TestHostEntriesWorkAsPrinted(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "proj", "ws", "a.md"), "alpha\n")
	writeFile(t, filepath.Join(dir, "proj", "out", ".keep"), "")
	writeFile(t, filepath.Join(dir, "proj", "fsmcp.yaml"), `version: 1
roots:
  - {name: reader, path: ws, include: ["**"], tools: read, cursor_key_env: FSMCP_E2E_READER_KEY}
  - {name: writer, path: out, include: ["*.md"], tools: write}
`)
	docDir := filepath.Join(dir, "host")
	if err := os.Mkdir(docDir, 0o755); err != nil {
		t.Fatal(err)
	}
	hostEnv := map[string]string{"FSMCP_E2E_READER_KEY": newKey(t, 32)}
	for _, tc := range []struct {
		format  string
		perRoot bool
		version string // the protocol revision the host speaks
		entries int
	}{
		{"mcp-json", false, "2025-11-25", 1},
		{"vscode", false, "2025-11-25", 1},
		{"ptc", false, "2026-07-28", 1},
		{"ptc", true, "2026-07-28", 2},
	} {
		name := tc.format
		if tc.perRoot {
			name += " per root"
		}
		t.Run(name, func(t *testing.T) {
			args := []string{"host-entry", filepath.Join("proj", "fsmcp.yaml"), "--format", tc.format}
			if tc.perRoot {
				args = append(args, "--per-root")
			}
			code, out, errOut := cliRun(t, dir, []string{}, supervisorBin, args...)
			if code != 0 || errOut != "" {
				t.Fatalf("%v: exit %d, stderr %q", args, code, errOut)
			}
			launches := printedLaunches(t, tc.format, out, docDir, hostEnv)
			if len(launches) != tc.entries {
				t.Fatalf("%d servers printed, want %d:\n%s", len(launches), tc.entries, out)
			}
			for _, l := range launches {
				if !filepath.IsAbs(l.command) {
					t.Errorf("%s: command %q is not absolute", l.name, l.command)
				}
				usePrinted(t, l, tc.version, filepath.Join(dir, "proj"))
			}
		})
	}
}

// usePrinted starts l as its host would, speaking version, and checks
// that it lists l's tools, reads a.md through the reader root and writes
// through the writer root (proj holds both).
func usePrinted(t *testing.T, l launch, version, proj string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.Command(l.command, l.args...)
	cmd.Dir, cmd.Env = l.dir, l.env
	cmd.Stderr = &testWriter{t: t}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e-host", Version: "1"}, nil).
		Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("%s: start %s %v as printed: %v", l.name, l.command, l.args, err)
	}
	defer cs.Close()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("%s: list tools: %v", l.name, err)
	}
	var listed []string
	for _, tool := range res.Tools {
		listed = append(listed, tool.Name)
	}
	slices.Sort(listed)
	if !slices.Equal(listed, l.tools) {
		t.Errorf("%s lists %v, want %v", l.name, listed, l.tools)
	}
	// A per-root installation is the root's own worker, whose tools have
	// no root prefix.
	for _, read := range []string{"reader_read_text_file", "read_text_file"} {
		if slices.Contains(listed, read) {
			r := callTool(t, cs, read, map[string]any{"path": "a.md"})
			if r.IsError || !strings.Contains(resultText(r), "alpha") {
				t.Errorf("%s: %s a.md: %q (error %v)", l.name, read, resultText(r), r.IsError)
			}
		}
	}
	for _, write := range []string{"writer_write_text_file", "write_text_file"} {
		if slices.Contains(listed, write) {
			note, content := l.name+".md", "from "+l.name+"\n"
			r := callTool(t, cs, write, map[string]any{"path": note, "content": content})
			if r.IsError {
				t.Fatalf("%s: %s %s: %s", l.name, write, note, resultText(r))
			}
			if got := readFile(t, filepath.Join(proj, "out", note)); got != content {
				t.Errorf("%s: out/%s holds %q, want %q", l.name, note, got, content)
			}
		}
	}
}
