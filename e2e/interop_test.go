//go:build linux

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The interop client lives in ../interop: a Node script on the TypeScript
// MCP client, installed from the committed lockfile (interop_install_test.go
// runs `npm ci` when it is missing).
const interopDir = "../interop"

func readJSON(t testing.TB, file string, v any) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

// interopPlan is what drive.mjs reads; interopReport is what it prints.
type interopPlan struct {
	Command           string            `json:"command"`
	Args              []string          `json:"args"`
	Env               map[string]string `json:"env"`
	Home              string            `json:"home,omitempty"` // the Inspector's HOME
	Client            string            `json:"client"`         // sdk1, client2 or inspector
	Mode              any               `json:"mode,omitempty"` // client2's negotiation mode, the Inspector's --protocol-era; nil: its default
	Scenario          string            `json:"scenario"`       // host, refused, ownErrors or validate
	SupportedVersions []string          `json:"supportedVersions,omitempty"`
	Prefix            string            `json:"prefix"`
	Tools             []string          `json:"tools"`
	Listing           []map[string]any  `json:"listing"`
	BigFile           string            `json:"bigFile"`
	Files             map[string]string `json:"files"`
	Needle            string            `json:"needle"`
	WriteTool         string            `json:"writeTool"`
	WritePath         string            `json:"writePath"`
	ReadBackTool      string            `json:"readBackTool,omitempty"`
	StuckTool         string            `json:"stuckTool,omitempty"`
	HeldCalls         int               `json:"heldCalls,omitempty"`
	Answers           []map[string]any  `json:"answers,omitempty"` // validate: {method, answer}
}

type interopReport struct {
	Protocol      string   `json:"protocol"`
	Era           string   `json:"era"`
	LegacyAnswers int      `json:"legacyAnswers"`
	Tools         []string `json:"tools"`
	ListPages     int      `json:"listPages"`
	ReadPages     int      `json:"readPages"`
	SearchHits    []string `json:"searchHits"`
	ToolError     string   `json:"toolError"`
	Timeout       string   `json:"timeout"`
	Write         struct {
		Path  string `json:"path"`
		Bytes int    `json:"bytes"`
	} `json:"write"`
	Refused struct {
		Code      int      `json:"code"`
		Message   string   `json:"message"`
		Supported []string `json:"supported"`
	} `json:"refused"`
	Own struct {
		Timeout, Busy, Restarting, NotResponding, ShuttingDown string
	} `json:"own"`
}

// interopTree is the read root every scenario serves: a file that takes
// several 2048-byte chunks (multi-byte and escape-heavy text included), a
// subfolder, and a needle on known lines.
func interopTree(t *testing.T) (root string, files map[string]string, hits []string) {
	t.Helper()
	var big strings.Builder
	for i := 1; i <= 400; i++ {
		line := fmt.Sprintf("%04d café <tag> & \"quoted\" \\ text", i)
		if i%97 == 0 {
			line += " needle"
			hits = append(hits, fmt.Sprintf("big.txt:%d", i))
		}
		big.WriteString(line + "\n")
	}
	files = map[string]string{
		"a.txt":    "the needle is here\n",
		"big.txt":  big.String(),
		"sub/b.md": "nothing\nneedle again\n",
	}
	hits = append([]string{"a.txt:1"}, append(hits, "sub/b.md:2")...)
	return tree(t, files), files, hits
}

// The revisions each binary lists in server/discover.
var (
	workerVersions     = []string{"2026-07-28"}
	supervisorVersions = []string{"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"}
)

// interopListing is list_directory's answer for interopTree's root.
var interopListing = []map[string]any{{"name": "a.txt", "kind": "file", "path": "a.txt"}, {"name": "big.txt", "kind": "file", "path": "big.txt"}, {"name": "sub", "kind": "directory", "path": "sub"}}

// checkHostReport checks what a host scenario reports and left on disk.
func checkHostReport(t *testing.T, rep interopReport, hits []string, written string) {
	t.Helper()
	if rep.ListPages != 3 || rep.ReadPages < 5 {
		t.Errorf("pages: list %d (want 3 of 1 entry), read %d (want at least 5 chunks of 2048 bytes)", rep.ListPages, rep.ReadPages)
	}
	if !slices.Equal(rep.SearchHits, hits) {
		t.Errorf("search_text hits %v, want %v", rep.SearchHits, hits)
	}
	if rep.ToolError != "path is not a relative path inside the root" {
		t.Errorf("tool error %q", rep.ToolError)
	}
	got, err := os.ReadFile(written)
	if err != nil || !strings.HasPrefix(string(got), "written by ") || rep.Write.Path != "report.md" || rep.Write.Bytes != len(got) {
		t.Errorf("write: report %+v, on disk %q (%v)", rep.Write, got, err)
	}
}

// TestInteropWorker drives the worker with the TypeScript clients: the 2.x
// client negotiates 2026-07-28 pinned and in its auto mode (which probes
// a disposable sibling process first), and the Inspector's command line
// speaks it with --protocol-era modern; each lists the tools, pages a
// listing, a read and a search through next_cursor, gets a tool error as
// a result and writes a file the test finds on disk. A client of the 2025
// handshake (the 1.x SDK's, the 2.x client's default) is refused with
// -32022 and told to use the supervisor.
func TestInteropWorker(t *testing.T) {
	node := interopNode(t)
	for _, tc := range []struct {
		name, client string
		mode         any
		protocol     string // "": the Inspector, which does not say
	}{
		{"client2 pinned", "client2", map[string]string{"pin": "2026-07-28"}, "2026-07-28"},
		{"client2 auto", "client2", "auto", "2026-07-28"},
		{"inspector modern", "inspector", "modern", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root, files, hits := interopTree(t)
			// The Inspector's command line starts the worker for each
			// request, so its cursors need a key that outlives one.
			rep := runInterop(t, node, interopPlan{
				Command: workerBin, Args: []string{"--root", root, "--include", "**", "--cursor-key-env", keyVar}, Env: map[string]string{keyVar: newKey(t, 32)},
				Home: t.TempDir(), Client: tc.client, Mode: tc.mode, Scenario: "host", SupportedVersions: workerVersions,
				Tools:   []string{"list_directory", "search_files", "search_text", "read_text_file", "write_text_file"},
				Listing: interopListing, Files: map[string]string{"big.txt": files["big.txt"]}, BigFile: "big.txt", Needle: "needle",
				WriteTool: "write_text_file", WritePath: "report.md", ReadBackTool: "read_text_file",
			})
			if rep.Protocol != tc.protocol || rep.Era != "modern" {
				t.Errorf("negotiated %q (%s), want %q (modern)", rep.Protocol, rep.Era, tc.protocol)
			}
			checkHostReport(t, rep, hits, filepath.Join(root, "report.md"))
		})
	}
	for _, client := range []string{"sdk1", "client2"} {
		t.Run(client+" default refused", func(t *testing.T) {
			rep := runInterop(t, node, interopPlan{Command: workerBin, Args: []string{"--root", t.TempDir(), "--include", "**"}, Client: client, Scenario: "refused"})
			if rep.Refused.Code != -32022 || !slices.Equal(rep.Refused.Supported, workerVersions) || !strings.Contains(rep.Refused.Message, "connects through fsmcp-supervisor") {
				t.Errorf("refusal %+v, want -32022 naming 2026-07-28 and fsmcp-supervisor", rep.Refused)
			}
		})
	}
}

// TestInteropSupervisor drives the supervisor, started as its printed host
// entry says, with each client hosts ship, in the era it speaks by default
// and in the 2026-07-28 era: the 1.x SDK's Client with its stdio transport
// and default options, the 2.x client by default, in auto mode and pinned,
// and the Inspector's command line by default and with --protocol-era
// modern. Each lists the tools (no write tool on the reader root), pages
// a listing, a read and a search to their ends, gets a tool error as a
// result, writes through the writer root, and sees a call past
// call_timeout as a tool error. In the 2025 era every answer is checked
// against the 1.x SDK's schemas of that era.
func TestInteropSupervisor(t *testing.T) {
	node := interopNode(t)
	manifest, root, outbox, hits := erasManifest(t)
	s := mcpEntry(t, supervisorBin, "--manifest", manifest, "--worker", workerBin)
	if _, ok := s.Env[keyVar]; !ok {
		t.Fatalf("the host entry's env %v lacks the reader's %s", s.Env, keyVar)
	}
	s.Env[keyVar] = newKey(t, 32)
	for _, tc := range []struct {
		name, client string
		mode         any
		protocol     string // "": the Inspector, which does not say
		era          string
	}{
		{"sdk1 default", "sdk1", nil, "2025-11-25", "legacy"},
		{"client2 default", "client2", nil, "2025-11-25", "legacy"},
		{"client2 auto", "client2", "auto", "2026-07-28", "modern"},
		{"client2 pinned", "client2", map[string]string{"pin": "2026-07-28"}, "2026-07-28", "modern"},
		{"inspector default", "inspector", nil, "", "legacy"},
		{"inspector modern", "inspector", "modern", "", "modern"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_ = os.Remove(filepath.Join(outbox, "report.md"))
			rep := runInterop(t, node, interopPlan{
				Command: s.Command, Args: s.Args, Env: s.Env, Home: t.TempDir(),
				Client: tc.client, Mode: tc.mode, Scenario: "host", SupportedVersions: supervisorVersions,
				Prefix: "reader_", Tools: erasTools, Listing: interopListing, Files: map[string]string{"big.txt": readFile(t, filepath.Join(root, "big.txt"))},
				BigFile: "big.txt", Needle: "needle", WriteTool: "writer_write_text_file", WritePath: "report.md", StuckTool: "stuck_read_text_file",
			})
			if rep.Protocol != tc.protocol || rep.Era != tc.era {
				t.Errorf("negotiated %q (%s), want %q (%s)", rep.Protocol, rep.Era, tc.protocol, tc.era)
			}
			if tc.era == "legacy" && tc.client != "inspector" && rep.LegacyAnswers == 0 {
				t.Error("no answer was checked against the 2025 schemas")
			}
			checkHostReport(t, rep, hits, filepath.Join(outbox, "report.md"))
			if _, err := os.Stat(filepath.Join(root, "report.md")); err == nil {
				t.Errorf("the write landed in the read root")
			}
			if rep.Timeout != "root stuck: the call did not finish within 500ms (the root's call_timeout) and was cancelled" {
				t.Errorf("call past call_timeout: %q", rep.Timeout)
			}
		})
	}
}

// TestInteropSupervisorOwnErrors: each tool error the supervisor makes
// itself reaches the 2.x client, in both eras, as a result it accepts
// (not INVALID_RESULT): a call past call_timeout, a call past a root's 64
// in flight, a call to a root whose worker was killed, one to a worker
// that stopped answering its probes, and one once a stop has begun.
func TestInteropSupervisorOwnErrors(t *testing.T) {
	node := interopNode(t)
	bins := buildSupervisorBins(t)
	root, _, _ := interopTree(t)
	stuck, _ := stuckMount(t)
	manifest := filepath.Join(t.TempDir(), "fsmcp.yaml")
	writeFile(t, manifest, fmt.Sprintf(`version: 1
roots:
  - {name: reader, path: %q, include: ["**"], tools: read}
  - {name: stuck, path: %q, include: ["**"], tools: read, call_timeout: 500ms}
  - {name: held, path: %q, include: ["**"], tools: read, call_timeout: 60s}
`, root, stuck, stuck))
	for _, tc := range []struct {
		name string
		mode any
	}{
		{"2026-07-28", map[string]string{"pin": "2026-07-28"}},
		{"2025-11-25", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := runInterop(t, node, interopPlan{
				Command: bins.supervisor, Args: []string{"--manifest", manifest, "--worker", bins.worker, "--grace", "1s"}, Env: map[string]string{},
				Client: "client2", Mode: tc.mode, Scenario: "ownErrors", SupportedVersions: supervisorVersions, HeldCalls: 64,
			})
			own := rep.Own
			for _, c := range []struct{ what, got, want string }{
				{"timeout", own.Timeout, "root stuck: the call did not finish within 500ms (the root's call_timeout) and was cancelled"},
				{"busy", own.Busy, "root held has 64 calls in flight, as many as it takes at once; try again when one of them is answered"},
				{"restarting", own.Restarting, "restarting"},
				{"not responding", own.NotResponding, "root reader is not responding: its worker missed 3 health probes in a row"},
				{"shutting down", own.ShuttingDown, "the supervisor is shutting down; no new calls are taken"},
			} {
				if !strings.Contains(c.got, c.want) || !strings.Contains(c.got, "root") && c.what != "shutting down" {
					t.Errorf("%s: %q, want %q", c.what, c.got, c.want)
				}
			}
		})
	}
}

func readFile(t *testing.T, file string) string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// runInterop writes plan to a file, runs drive.mjs on it and decodes the
// report it prints.
func runInterop(t *testing.T, node string, plan interopPlan) interopReport {
	t.Helper()
	planFile := filepath.Join(t.TempDir(), "plan.json")
	data, _ := json.Marshal(plan)
	if err := os.WriteFile(planFile, data, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(interopDir, "drive.mjs"), planFile)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node drive.mjs: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	if stderr.Len() > 0 {
		t.Logf("stderr:\n%s", stderr.String())
	}
	if strings.Contains(stderr.String(), "DATA RACE") {
		t.Error("race detected in the supervisor or a worker")
	}
	var rep interopReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("report %q: %v", stdout.String(), err)
	}
	return rep
}
