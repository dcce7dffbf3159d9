package hostentry

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/fsmcp/fsmcp/supervisor/manifest"
)

func testManifest(t *testing.T) *manifest.Manifest {
	t.Helper()
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "docs"), 0o755)
	os.Mkdir(filepath.Join(dir, "out"), 0o755)
	m, err := manifest.Parse(filepath.Join(dir, "fsmcp.yaml"), []byte(`version: 1
roots:
  - name: docs
    path: docs
    include: ["**"]
    tools: [read_text_file, list_directory]
    cursor_key_env: DOCS_KEY
  - name: out
    path: out
    include: ["*.md"]
    tools: all
`))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestBuild(t *testing.T) {
	m := testManifest(t)
	l := Launch{Name: "files", Command: "/opt/fsmcp/fsmcp-supervisor", Args: []string{"--manifest", "/repo/fsmcp.yaml"}}
	var out bytes.Buffer
	doc, err := Build(m, l, "ptc")
	if err != nil {
		t.Fatal(err)
	}
	if err := Write(&out, doc); err != nil {
		t.Fatal(err)
	}
	var got map[string]map[string]map[string]any
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	inst := got["install"]["files"]
	tr := inst["transport"].(map[string]any)
	if tr["inherit_environment"] != false || tr["type"] != "stdio" || tr["command"] != l.Command {
		t.Errorf("transport %v", tr)
	}
	env := tr["env"].(map[string]any)
	if len(env) != 1 || env["DOCS_KEY"] != "<base64url cursor key for root docs>" {
		t.Errorf("env %v", env)
	}
	tools := inst["tools"].(map[string]any)
	want := map[string]string{
		"docs_list_directory": "read", "docs_read_text_file": "read",
		"out_list_directory": "read", "out_search_files": "read", "out_search_text": "read",
		"out_read_text_file": "read", "out_write_text_file": "write",
	}
	if len(tools) != len(want) {
		t.Errorf("tools %v", tools)
	}
	for name, effect := range want {
		tm, _ := tools[name].(map[string]any)
		if tm["tool"] != name || tm["effect"] != effect {
			t.Errorf("%s: %v, want itself, %s", name, tm, effect)
		}
	}
	if _, err := Build(m, l, "toml"); err == nil {
		t.Error("unknown format accepted")
	}
}
