package hostentry

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsmcp/fsmcp/supervisor/manifest"
)

func parse(t *testing.T, body string) *manifest.Manifest {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{"docs", "out"} {
		os.Mkdir(filepath.Join(dir, d), 0o755)
	}
	m, err := manifest.Parse(filepath.Join(dir, "fsmcp.yaml"), []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

const twoRoots = `version: 1
roots:
  - name: docs
    path: docs
    include: ["**"]
    tools: [read_text_file, list_directory]
    cursor_key_env: DOCS_KEY
    limits: {max_result_bytes: 100000}
    call_timeout: 2m
  - name: out
    path: out
    include: ["*.md"]
    tools: all
`

var launch = Launch{Name: "files", Command: "/opt/fsmcp/fsmcp-supervisor", Args: []string{"--manifest", "/repo/fsmcp.yaml"}, Worker: "/opt/fsmcp/fsmcp-worker", Revision: "fsmcp-1"}

func TestRevision(t *testing.T) {
	base := Revision([]byte("version: 1\n"), "v0.1.0")
	for _, tc := range []struct {
		name, data, version string
		same                bool
	}{
		{"same", "version: 1\n", "v0.1.0", true},
		{"manifest changed", "version: 1\n# x\n", "v0.1.0", false},
		{"version changed", "version: 1\n", "v0.1.1", false},
		{"bytes moved across the separator", "version: 1\n", "v0.1.0\x00", false},
	} {
		got := Revision([]byte(tc.data), tc.version)
		if (got == base) != tc.same || !PtcName.MatchString(got) {
			t.Errorf("%s: %q vs %q", tc.name, got, base)
		}
	}
}

func TestBuildPtc(t *testing.T) {
	m := parse(t, twoRoots)
	doc, err := buildPtc(m, launch, false)
	if err != nil {
		t.Fatal(err)
	}
	inst := doc.Install["files"]
	if inst.Source != "mcp" || inst.InstallationRevision != "fsmcp-1" || inst.Transport.Command != launch.Command || inst.Transport.InheritEnvironment {
		t.Errorf("installation %+v", inst)
	}
	if b := inst.Transport.Env["DOCS_KEY"].Binding; b != "docs.cursor-key" || doc.Credentials[b].Env != "DOCS_KEY" || len(doc.Credentials) != 1 {
		t.Errorf("env %v, credentials %v", inst.Transport.Env, doc.Credentials)
	}
	want := map[string]PtcTool{
		"docs_list_directory": {"docs.list_directory", "read"}, "docs_read_text_file": {"docs.read_text_file", "read"},
		"out_list_directory": {"out.list_directory", "read"}, "out_search_files": {"out.search_files", "read"},
		"out_search_text": {"out.search_text", "read"}, "out_read_text_file": {"out.read_text_file", "read"},
		"out_write_text_file": {"out.write_text_file", "write"},
	}
	if fmt.Sprint(inst.Tools) != fmt.Sprint(want) || inst.Ceilings != (PtcCeilings{TimeoutMs: 121000, MaxCatalogTools: 7, MaxResultBytes: 100000}) {
		t.Errorf("tools %v, ceilings %+v", inst.Tools, inst.Ceilings)
	}

	doc, err = buildPtc(m, launch, true)
	if err != nil {
		t.Fatal(err)
	}
	docs, out := doc.Install["files.docs"], doc.Install["files.out"]
	if len(doc.Install) != 2 || docs.Transport.Command != launch.Worker || len(docs.Tools) != 2 || docs.Tools["read_text_file"].As != "docs.read_text_file" ||
		docs.Ceilings.MaxResultBytes != 100000 || docs.Ceilings.TimeoutMs != 121000 || len(docs.Transport.Env) != 1 {
		t.Errorf("per-root docs %+v", docs)
	}
	if len(out.Tools) != 5 || out.Tools["write_text_file"].Effect != "write" || out.Ceilings.MaxResultBytes != 48000 || out.Ceilings.TimeoutMs != 31000 || len(out.Transport.Env) != 0 ||
		strings.Join(out.Transport.Args, " ") != strings.Join(m.Roots[1].Args(), " ") {
		t.Errorf("per-root out %+v", out)
	}
}

func TestBuildBounds(t *testing.T) {
	many := "version: 1\nroots:\n"
	for i := range 26 {
		many += fmt.Sprintf("  - {name: r%d, path: out, include: ['**'], tools: all}\n", i)
	}
	for _, tc := range []struct {
		name, body, format string
		perRoot            bool
		launch             Launch
		want               string
	}{
		{"130 tools in one", many, "ptc", false, launch, "130 tools, more than the 128 one PtcRunner installation may list; --per-root"},
		{"reserved variable", strings.Replace(twoRoots, "DOCS_KEY", "HOME", 1), "ptc", false, launch, "cursor_key_env HOME is a variable PtcRunner does not let a transport set"},
		{"call timeout capped", strings.Replace(twoRoots, "2m", "24h", 1), "ptc", false, launch, ""},
		{"upper-case name", twoRoots, "ptc", false, Launch{Name: "Files"}, `--name "Files" is not a PtcRunner install name`},
		{"per-root mcp-json", twoRoots, "mcp-json", true, launch, "--per-root applies to --format ptc only"},
		{"unknown format", twoRoots, "toml", false, launch, `--format "toml" is not a host format`},
	} {
		doc, err := Build(parse(t, tc.body), tc.launch, tc.format, tc.perRoot)
		if tc.want == "" {
			if err != nil || doc.(*PtcDocument).Install["files"].Ceilings.TimeoutMs != ptcMaxTimeoutMs {
				t.Errorf("%s: %v, %+v", tc.name, err, doc)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	if _, err := Build(parse(t, many), launch, "ptc", true); err != nil {
		t.Errorf("26 roots per root: %v", err)
	}
}
