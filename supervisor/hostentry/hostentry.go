// Package hostentry renders the host configuration that starts fsmcp on a
// manifest: the common mcpServers JSON, a VS Code servers entry, or a
// PtcRunner host document that also maps every tool the manifest exposes.
//
// All of them spawn by absolute path. The mcp-json and vscode forms carry an
// environment that is empty except for one variable per root that declares
// cursor_key_env, whose value is a placeholder for the host's secret: a host
// entry names the key, it never carries it. The ptc form binds those
// variables to credentials PtcRunner reads from its own environment.
package hostentry

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/fsmcp/fsmcp/internal/toolset"
	"github.com/fsmcp/fsmcp/supervisor/manifest"
)

// Formats are the accepted --format values.
var Formats = []string{"mcp-json", "vscode", "ptc"}

// Launch is how the host starts fsmcp.
type Launch struct {
	Name     string   // the entry's key in the host document
	Command  string   // absolute path of fsmcp-supervisor
	Args     []string // its arguments: --manifest FILE, and --worker BIN where needed
	Worker   string   // absolute path of fsmcp-worker, which a per-root entry starts itself
	Revision string   // the installation revision (see Revision)
}

// Revision derives a PtcRunner installation_revision from the manifest's
// bytes and the fsmcp version: it changes when either changes, and not
// otherwise, and matches ^[a-z][a-z0-9._-]{0,127}$.
func Revision(manifestData []byte, version string) string {
	h := sha256.New()
	h.Write([]byte(version))
	h.Write([]byte{0})
	h.Write(manifestData)
	return "fsmcp-" + hex.EncodeToString(h.Sum(nil))[:24]
}

// Env is the mcp-json and vscode entries' environment: empty, plus a
// placeholder for each cursor-key variable the manifest declares.
func Env(m *manifest.Manifest) map[string]string {
	env := map[string]string{}
	for _, r := range m.Roots {
		if r.CursorKeyEnv != "" {
			env[r.CursorKeyEnv] = "<base64url cursor key for root " + r.Name + ">"
		}
	}
	return env
}

// Effect is "write" for the write tool and "read" for the others.
func Effect(tool string) string {
	if slices.Contains(toolset.Write, tool) {
		return "write"
	}
	return "read"
}

type mcpServer struct {
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
}

type vscodeServer struct {
	Type    string            `json:"type"`
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env,omitempty"`
}

// Build returns the host document for format ("mcp-json", "vscode" or
// "ptc"). perRoot, for ptc only, prints one installation per root, each
// started as that root's own worker process.
func Build(m *manifest.Manifest, l Launch, format string, perRoot bool) (any, error) {
	if perRoot && format != "ptc" {
		return nil, fmt.Errorf("--per-root applies to --format ptc only")
	}
	switch format {
	case "mcp-json":
		return map[string]map[string]mcpServer{
			"mcpServers": {l.Name: {Command: l.Command, Args: l.Args, Env: Env(m)}},
		}, nil
	case "vscode":
		return map[string]map[string]vscodeServer{
			"servers": {l.Name: {Type: "stdio", Command: l.Command, Args: l.Args, Env: Env(m)}},
		}, nil
	case "ptc":
		return buildPtc(m, l, perRoot)
	}
	return nil, fmt.Errorf("--format %q is not a host format; use %s", format, strings.Join(Formats, ", "))
}

// Write renders doc as indented JSON on w.
func Write(w io.Writer, doc any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}
