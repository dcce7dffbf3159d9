// Package hostentry renders the host configuration that starts
// fsmcp-supervisor on a manifest: the common mcpServers JSON, or a
// PtcRunner install block that also maps every tool the manifest exposes.
//
// Both spawn the supervisor by absolute path with an empty environment,
// plus one variable per root that declares cursor_key_env, whose value is a
// placeholder for the host's credential binding: a host entry names the
// key, it never carries it.
package hostentry

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/fsmcp/fsmcp/supervisor/front"
	"github.com/fsmcp/fsmcp/supervisor/manifest"
	"github.com/fsmcp/fsmcp/worker/toolset"
)

// Formats are the accepted --format values.
var Formats = []string{"mcp-json", "ptc"}

// Launch is how the host starts the supervisor.
type Launch struct {
	Name    string   // the entry's key in the host document
	Command string   // absolute path of fsmcp-supervisor
	Args    []string // its arguments: --manifest FILE, and --worker BIN where needed
}

// Env is the entry's environment: empty, plus a placeholder for each
// cursor-key variable the manifest declares.
func Env(m *manifest.Manifest) map[string]string {
	env := map[string]string{}
	for _, r := range m.Roots {
		if r.CursorKeyEnv != "" {
			env[r.CursorKeyEnv] = "<base64url cursor key for root " + r.Name + ">"
		}
	}
	return env
}

// Tool is one tool mapping of a PtcRunner install block: the upstream MCP
// tool a host capability resolves to, and whether it reads or writes.
type Tool struct {
	Tool   string `json:"tool"`
	Effect string `json:"effect"`
}

// Tools maps every tool the supervisor will serve for m, by its served
// name, to itself. Renaming a key renames the host capability; deleting
// one leaves that tool unmapped.
func Tools(m *manifest.Manifest) map[string]Tool {
	out := map[string]Tool{}
	for _, r := range m.Roots {
		for _, t := range r.Tools {
			effect := "read"
			if slices.Contains(toolset.Write, t) {
				effect = "write"
			}
			name := front.ToolName(r.Name, t)
			out[name] = Tool{Tool: name, Effect: effect}
		}
	}
	return out
}

type mcpServer struct {
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
}

type ptcTransport struct {
	Type               string            `json:"type"`
	Command            string            `json:"command"`
	Args               []string          `json:"args"`
	InheritEnvironment bool              `json:"inherit_environment"`
	Env                map[string]string `json:"env"`
}

type ptcInstall struct {
	Transport ptcTransport    `json:"transport"`
	Tools     map[string]Tool `json:"tools"`
}

// Build returns the host document for format ("mcp-json" or "ptc").
func Build(m *manifest.Manifest, l Launch, format string) (any, error) {
	env := Env(m)
	switch format {
	case "mcp-json":
		return map[string]map[string]mcpServer{
			"mcpServers": {l.Name: {Command: l.Command, Args: l.Args, Env: env}},
		}, nil
	case "ptc":
		return map[string]map[string]ptcInstall{
			"install": {l.Name: {
				Transport: ptcTransport{Type: "stdio", Command: l.Command, Args: l.Args, InheritEnvironment: false, Env: env},
				Tools:     Tools(m),
			}},
		}, nil
	}
	return nil, fmt.Errorf("unknown host format %q; use %s", format, strings.Join(Formats, " or "))
}

// Write renders doc as indented JSON on w.
func Write(w io.Writer, doc any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}
