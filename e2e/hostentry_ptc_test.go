//go:build linux

package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"go.yaml.in/yaml/v3"
)

// ptcHostSchema is PtcRunner's host document as its specification
// states it: every object closed (its loader refuses unknown keys), every
// bound the spec lists. Only the MCP installation's stdio transport is
// described, the one fsmcp prints.
const ptcHostSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "$defs": {
    "name": {"type": "string", "pattern": "^[a-z][a-z0-9._-]{0,127}$"},
    "credential": {
      "type": "object", "minProperties": 1, "maxProperties": 1, "additionalProperties": false,
      "properties": {
        "env": {"type": "string", "minLength": 1},
        "file": {"type": "string", "minLength": 1},
        "literal": {"type": "string"}
      }
    },
    "transport": {
      "type": "object", "additionalProperties": false,
      "required": ["type", "command"],
      "properties": {
        "type": {"const": "stdio"},
        "command": {"type": "string", "minLength": 2, "maxLength": 4096, "pattern": "^/"},
        "args": {"type": "array", "maxItems": 256, "items": {"type": "string", "minLength": 1}},
        "cwd": {"type": "string", "minLength": 1},
        "inherit_environment": {"type": "boolean"},
        "env": {
          "type": "object",
          "propertyNames": {"not": {"enum": ["PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LC_ALL"]}},
          "additionalProperties": {
            "type": "object", "additionalProperties": false, "required": ["binding"],
            "properties": {"binding": {"$ref": "#/$defs/name"}}
          }
        },
        "start_timeout_ms": {"type": "integer", "minimum": 1, "maximum": 60000},
        "grace_ms": {"type": "integer", "minimum": 1, "maximum": 5000},
        "stderr_bytes": {"type": "integer", "minimum": 0, "maximum": 1048576}
      }
    },
    "tool": {
      "type": "object", "additionalProperties": false, "required": ["as", "effect"],
      "properties": {
        "as": {"$ref": "#/$defs/name"},
        "effect": {"enum": ["read", "write"]},
        "description": {"type": "string", "minLength": 1, "maxLength": 4096},
        "model_visible": {"type": "boolean"},
        "error_feedback": {"enum": ["closed", "bounded"]}
      }
    },
    "installation": {
      "type": "object", "additionalProperties": false,
      "required": ["source", "installation_revision", "transport", "tools"],
      "properties": {
        "source": {"const": "mcp"},
        "installation_revision": {"$ref": "#/$defs/name"},
        "transport": {"$ref": "#/$defs/transport"},
        "tools": {"type": "object", "minProperties": 1, "maxProperties": 128, "additionalProperties": {"$ref": "#/$defs/tool"}},
        "ceilings": {
          "type": "object", "additionalProperties": false,
          "properties": {
            "timeout_ms": {"type": "integer", "minimum": 1, "maximum": 300000},
            "max_catalog_tools": {"type": "integer", "minimum": 1, "maximum": 128},
            "max_result_bytes": {"type": "integer", "minimum": 1, "maximum": 1048576}
          }
        },
        "snapshot_identity": {},
        "data_class": {},
        "accepts_data": {}
      }
    }
  },
  "type": "object", "additionalProperties": false, "required": ["install"],
  "properties": {
    "$schema": {"type": "string"},
    "credentials": {
      "type": "object", "maxProperties": 128, "propertyNames": {"$ref": "#/$defs/name"},
      "additionalProperties": {"$ref": "#/$defs/credential"}
    },
    "install": {
      "type": "object", "minProperties": 1, "maxProperties": 128, "propertyNames": {"$ref": "#/$defs/name"},
      "additionalProperties": {"$ref": "#/$defs/installation"}
    },
    "limits": {},
    "runtime": {}
  }
}`

func ptcSchema(t *testing.T) *jsonschema.Resolved {
	t.Helper()
	var s jsonschema.Schema
	if err := json.Unmarshal([]byte(ptcHostSchema), &s); err != nil {
		t.Fatal(err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// TestPtcSchemaRefuses: the schema the host-entry tests validate against
// refuses what PtcRunner's loader refuses, so a pass means something.
func TestPtcSchemaRefuses(t *testing.T) {
	rs := ptcSchema(t)
	const good = `{"credentials":{"docs.cursor-key":{"env":"K"}},"install":{"fsmcp":{"source":"mcp","installation_revision":"fsmcp-1","transport":{"type":"stdio","command":"/bin/x","args":["a"],"inherit_environment":false,"env":{"K":{"binding":"docs.cursor-key"}}},"tools":{"docs_read_text_file":{"as":"docs.read_text_file","effect":"read"}},"ceilings":{"max_catalog_tools":1,"max_result_bytes":48000}}}}`
	for _, tc := range []struct{ name, old, new string }{
		{"good", "", ""},
		{"no source", `"source":"mcp",`, ``},
		{"no revision", `"installation_revision":"fsmcp-1",`, ``},
		{"upper-case revision", `"fsmcp-1"`, `"Fsmcp-1"`},
		{"relative command", `"/bin/x"`, `"bin/x"`},
		{"literal env", `{"binding":"docs.cursor-key"}`, `"<key>"`},
		{"reserved env", `"env":{"K"`, `"env":{"PATH"`},
		{"tool instead of as", `"as":"docs.read_text_file"`, `"tool":"docs_read_text_file"`},
		{"unknown effect", `"effect":"read"`, `"effect":"delete"`},
		{"unknown install key", `"source":"mcp",`, `"source":"mcp","comment":"x",`},
		{"unknown top key", `{"credentials"`, `{"servers":{},"credentials"`},
		{"catalog over 128", `"max_catalog_tools":1`, `"max_catalog_tools":129`},
		{"result over 1 MiB", `"max_result_bytes":48000`, `"max_result_bytes":1048577`},
		{"empty arg", `"args":["a"]`, `"args":[""]`},
	} {
		doc := good
		if tc.old != "" {
			if !strings.Contains(good, tc.old) {
				t.Fatalf("%s: %q not in the good document", tc.name, tc.old)
			}
			doc = strings.Replace(good, tc.old, tc.new, 1)
		}
		var v any
		if err := json.Unmarshal([]byte(doc), &v); err != nil {
			t.Fatal(err)
		}
		err := rs.Validate(v)
		if (err == nil) != (tc.name == "good") {
			t.Errorf("%s: validate = %v", tc.name, err)
		}
	}
}

// ptcDoc mirrors what host-entry --format ptc prints.
type ptcDoc struct {
	Credentials map[string]struct{ Env string } `json:"credentials"`
	Install     map[string]struct {
		Revision  string `json:"installation_revision"`
		Transport struct {
			Command string                              `json:"command"`
			Args    []string                            `json:"args"`
			Env     map[string]struct{ Binding string } `json:"env"`
		} `json:"transport"`
		Tools    map[string]struct{ As, Effect string } `json:"tools"`
		Ceilings struct {
			TimeoutMs       int64 `json:"timeout_ms"`
			MaxCatalogTools int   `json:"max_catalog_tools"`
			MaxResultBytes  int64 `json:"max_result_bytes"`
		} `json:"ceilings"`
	} `json:"install"`
}

// exampleRoot is what the test reads of an example manifest's root.
type exampleRoot struct {
	Name         string           `yaml:"name"`
	Limits       map[string]int64 `yaml:"limits"`
	CursorKeyEnv string           `yaml:"cursor_key_env"`
}

// TestHostEntryPtcExamples: for every example manifest, both the single
// installation and --per-root validate against PtcRunner's host schema,
// and each installation, started exactly as printed (scrubbed environment
// plus its credential bindings), lists exactly the tools it maps, so
// max_catalog_tools is the listed count; a per-root installation serves
// only its root.
func TestHostEntryPtcExamples(t *testing.T) {
	rs := ptcSchema(t)
	manifests, err := filepath.Glob("../manifests/*.yaml")
	if err != nil || len(manifests) == 0 {
		t.Fatalf("no example manifests: %v", err)
	}
	for _, file := range manifests {
		var ex struct{ Roots []exampleRoot }
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(data, &ex); err != nil {
			t.Fatal(err)
		}
		for _, perRoot := range []bool{false, true} {
			args := []string{"host-entry", "--manifest", file, "--format", "ptc"}
			if perRoot {
				args = append(args, "--per-root")
			}
			code, out, errOut := cliRun(t, "", []string{}, supervisorBin, args...)
			if code != 0 {
				t.Fatalf("%s %v: exit %d: %s", file, args, code, errOut)
			}
			var v any
			if err := json.Unmarshal([]byte(out), &v); err != nil {
				t.Fatalf("%s: %v", out, err)
			}
			if err := rs.Validate(v); err != nil {
				t.Errorf("%s per-root=%v: not a PtcRunner host document: %v\n%s", file, perRoot, err, out)
			}
			var doc ptcDoc
			if err := json.Unmarshal([]byte(out), &doc); err != nil {
				t.Fatal(err)
			}
			if want := map[bool]int{false: 1, true: len(ex.Roots)}[perRoot]; len(doc.Install) != want {
				t.Errorf("%s per-root=%v: %d installations, want %d", file, perRoot, len(doc.Install), want)
			}
			for alias, inst := range doc.Install {
				var roots []exampleRoot
				for _, r := range ex.Roots {
					if !perRoot || alias == "fsmcp."+r.Name {
						roots = append(roots, r)
					}
				}
				if len(roots) == 0 {
					t.Fatalf("%s: installation %q names no root", file, alias)
				}
				if !filepath.IsAbs(inst.Transport.Command) {
					t.Errorf("%s: command %q is not absolute", alias, inst.Transport.Command)
				}
				var ceiling int64 = 48000
				env := []string{}
				for _, r := range roots {
					ceiling = max(ceiling, r.Limits["max_result_bytes"])
					if r.CursorKeyEnv != "" {
						b := inst.Transport.Env[r.CursorKeyEnv].Binding
						if doc.Credentials[b].Env != r.CursorKeyEnv {
							t.Errorf("%s: %s is bound to credential %q, which reads %q", alias, r.CursorKeyEnv, b, doc.Credentials[b].Env)
						}
						env = append(env, r.CursorKeyEnv+"="+newKey(t, 32))
					}
				}
				if len(inst.Transport.Env) != len(env) {
					t.Errorf("%s: env %v, want a binding for each key variable of %v", alias, inst.Transport.Env, roots)
				}
				if inst.Ceilings.TimeoutMs != 31000 {
					t.Errorf("%s: timeout_ms %d, want the default call_timeout (30 s) and 1 s for its answer", alias, inst.Ceilings.TimeoutMs)
				}
				if inst.Ceilings.MaxResultBytes < ceiling {
					t.Errorf("%s: max_result_bytes %d, below the root's ceiling %d", alias, inst.Ceilings.MaxResultBytes, ceiling)
				}
				cs := connect(t, env, inst.Transport.Command, inst.Transport.Args...)
				res, err := cs.ListTools(t.Context(), nil)
				if err != nil {
					t.Fatalf("%s: list tools of the printed installation: %v", alias, err)
				}
				var listed, mapped []string
				for _, tool := range res.Tools {
					listed = append(listed, tool.Name)
				}
				for upstream, m := range inst.Tools {
					mapped = append(mapped, upstream)
					root, tool, _ := strings.Cut(m.As, ".")
					wantUp := root + "_" + tool
					if perRoot {
						wantUp = tool
					}
					effect := "read"
					if tool == "write_text_file" {
						effect = "write"
					}
					if upstream != wantUp || m.Effect != effect || !slices.ContainsFunc(roots, func(r exampleRoot) bool { return r.Name == root }) {
						t.Errorf("%s: %s maps to %+v", alias, upstream, m)
					}
				}
				slices.Sort(listed)
				slices.Sort(mapped)
				if !slices.Equal(listed, mapped) || inst.Ceilings.MaxCatalogTools != len(listed) {
					t.Errorf("%s: lists %v, maps %v with max_catalog_tools %d", alias, listed, mapped, inst.Ceilings.MaxCatalogTools)
				}
			}
		}
	}
}

// TestHostEntryRevision: the installation revision stays while the
// manifest's bytes do, and changes with them (the version's share is
// covered by hostentry's unit test, since one build has one version).
func TestHostEntryRevision(t *testing.T) {
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "ws"), 0o755)
	file := filepath.Join(dir, "fsmcp.yaml")
	const body = "version: 1\nroots:\n  - name: ws\n    path: ws\n    include: ['**']\n    tools: read\n"
	revision := func() string {
		t.Helper()
		code, out, errOut := cliRun(t, "", []string{}, supervisorBin, "host-entry", "--manifest", file, "--format", "ptc")
		var doc ptcDoc
		if code != 0 || json.Unmarshal([]byte(out), &doc) != nil {
			t.Fatalf("exit %d: %s%s", code, out, errOut)
		}
		return doc.Install["fsmcp"].Revision
	}
	writeFile(t, file, body)
	first := revision()
	if again := revision(); again != first {
		t.Errorf("same manifest, revisions %q and %q", first, again)
	}
	writeFile(t, file, body+"# a comment\n")
	if changed := revision(); changed == first {
		t.Errorf("manifest changed, revision stayed %q", first)
	}
	writeFile(t, file, body)
	if back := revision(); back != first {
		t.Errorf("manifest restored, revision %q, was %q", back, first)
	}
}
