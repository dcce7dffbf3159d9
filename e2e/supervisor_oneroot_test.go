//go:build linux

package e2e

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestSupervisorOneRoot: one root needs no manifest file. The worker's own
// options on the supervisor's command line serve that root, its tools
// named root_<tool> (or <--name>_<tool>), to a host of either era, with
// the root's limits and call_timeout applied; a relative --root is the
// working directory's.
func TestSupervisorOneRoot(t *testing.T) {
	bins := buildSupervisorBins(t)
	ws := tree(t, map[string]string{"a.txt": "hello\n", "big.txt": strings.Repeat("x", 40000)})
	for _, tc := range []struct {
		name    string
		args    []string
		version string
		tools   []string
	}{
		{"read tools, 2025-11-25", []string{"--root", ws, "--include", "**", "--tools", "read"}, "2025-11-25",
			[]string{"root_list_directory", "root_read_text_file", "root_search_files", "root_search_text"}},
		{"named, all tools, 2026-07-28", []string{"--root", ".", "--include", "*.txt", "--name", "ws", "--max-read-bytes", "4096", "--call-timeout", "2s"}, "2026-07-28",
			[]string{"ws_list_directory", "ws_read_text_file", "ws_search_files", "ws_search_text", "ws_write_text_file"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := launchSupervisorIn(t, ws, append(tc.args, "--worker", bins.worker))
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			s, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil).Connect(ctx, &mcp.IOTransport{Reader: p.stdout, Writer: p.stdin}, &mcp.ClientSessionOptions{ProtocolVersion: tc.version})
			if err != nil {
				t.Fatalf("connect: %v\nstderr:\n%s", err, p.stderr)
			}
			p.session = s
			var names []string
			for name := range listToolNames(t, s) {
				names = append(names, name)
			}
			slices.Sort(names)
			if !slices.Equal(names, tc.tools) {
				t.Errorf("tools %v, want %v", names, tc.tools)
			}
			prefix := strings.TrimSuffix(tc.tools[0], "list_directory")
			r := ok(t, s, prefix+"read_text_file", map[string]any{"path": "big.txt"})
			// 8 chunks of 2048 bytes a page at the default 16384, 2 at 4096.
			want := 8
			if slices.Contains(tc.args, "--max-read-bytes") {
				want = 2
			}
			if len(r.page.Items) != want {
				t.Errorf("read big.txt: %d chunks on the first page, want %d", len(r.page.Items), want)
			}
		})
	}
}

// TestSupervisorOneRootErrors: a root on the command line is checked as a
// manifest's root is, every problem reported, each naming its option;
// --manifest with a root's options is refused.
func TestSupervisorOneRootErrors(t *testing.T) {
	bins := buildSupervisorBins(t)
	ws := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"missing folder, no include, bad tools", []string{"--root", "nope", "--tools", "rd"}, []string{
			`fsmcp-supervisor: --root: root folder "nope" does not exist (tried ` + filepath.Join(ws, "nope") + `); give the folder relative to the working directory or absolute`,
			`fsmcp-supervisor: --include: missing; give at least one --include GLOB, such as --include '**'`,
			`fsmcp-supervisor: --tools: unknown tool "rd"; use read, write, all or names from list_directory, search_files, search_text, read_text_file, write_text_file`,
		}},
		{"limit out of range", []string{"--root", ws, "--include", "**", "--max-scan-bytes", "10"}, []string{
			"fsmcp-supervisor: --max-scan-bytes: 10 is too small; use 16384 or more"}},
		{"cursor key not set", []string{"--root", ws, "--include", "**", "--cursor-key-env", "FSMCP_E2E_UNSET_KEY"}, []string{
			"fsmcp-supervisor: --cursor-key-env: environment variable FSMCP_E2E_UNSET_KEY is not set; a cursor key is unpadded base64url of 32 bytes or more, made with: head -c 32 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\\n'"}},
		{"cursor key malformed", []string{"--root", ws, "--include", "**", "--cursor-key-env", "FSMCP_E2E_SHORT_KEY"}, []string{
			"fsmcp-supervisor: --cursor-key-env: environment variable FSMCP_E2E_SHORT_KEY is not a cursor key: its value decodes to 5 bytes, fewer than 32; a cursor key is unpadded base64url of 32 bytes or more, made with: head -c 32 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\\n'"}},
		{"switch with a value", []string{"--root", ws, "--include", "**", "--no-default-exclude=false"}, []string{
			"fsmcp-supervisor: unknown option --no-default-exclude=false"}},
		{"two roots", []string{"--root", ws, "--root", ws, "--include", "**"}, []string{
			"fsmcp-supervisor: --root is given twice; the command line serves one root: to serve several, list them in a manifest (--manifest FILE)"}},
		{"manifest and root", []string{"--manifest", filepath.Join(ws, "m.yaml"), "--include", "**"}, []string{
			"fsmcp-supervisor: --manifest and the options of a root (--root, --include, ...) are two ways to name what to serve; give one"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := cliRun(t, ws, []string{"FSMCP_E2E_SHORT_KEY=c2hvcnQ"}, bins.supervisor, append(tc.args, "--worker", bins.worker)...)
			if code != 64 || out != "" || strings.TrimSpace(errOut) != strings.Join(tc.want, "\n") {
				t.Errorf("exit %d, stdout %q, stderr:\n%s\nwant exit 64 and:\n%s", code, out, errOut, strings.Join(tc.want, "\n"))
			}
		})
	}
}
