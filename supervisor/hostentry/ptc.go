package hostentry

import (
	"fmt"
	"regexp"
	"slices"

	"github.com/fsmcp/fsmcp/internal/limits"
	"github.com/fsmcp/fsmcp/supervisor/front"
	"github.com/fsmcp/fsmcp/supervisor/manifest"
)

// Bounds PtcRunner's loader checks (see PtcRunner's host-config schema).
const (
	ptcMaxTools   = 128
	ptcMaxArgs    = 256
	ptcMaxCommand = 4096
)

// PtcName is the pattern of PtcRunner's install, credential and capability
// names.
var PtcName = regexp.MustCompile(`^[a-z][a-z0-9._-]{0,127}$`)

// ptcReservedEnv are the variables a PtcRunner transport may not set.
var ptcReservedEnv = []string{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LC_ALL"}

// PtcDocument is a PtcRunner host document.
type PtcDocument struct {
	Credentials map[string]PtcCredential `json:"credentials,omitempty"`
	Install     map[string]PtcInstall    `json:"install"`
}

// PtcCredential names the host variable a credential is read from.
type PtcCredential struct {
	Env string `json:"env"`
}

// PtcInstall is one MCP installation.
type PtcInstall struct {
	Source               string             `json:"source"`
	InstallationRevision string             `json:"installation_revision"`
	Transport            PtcTransport       `json:"transport"`
	Tools                map[string]PtcTool `json:"tools"`
	Ceilings             PtcCeilings        `json:"ceilings"`
}

// PtcTransport starts the process over stdio with a scrubbed environment.
type PtcTransport struct {
	Type               string                `json:"type"`
	Command            string                `json:"command"`
	Args               []string              `json:"args"`
	InheritEnvironment bool                  `json:"inherit_environment"`
	Env                map[string]PtcBinding `json:"env,omitempty"`
}

// PtcBinding passes a declared credential as a variable's value.
type PtcBinding struct {
	Binding string `json:"binding"`
}

// PtcTool maps an upstream tool to the capability programs use.
type PtcTool struct {
	As     string `json:"as"`
	Effect string `json:"effect"`
}

// PtcCeilings bounds what the installation may list and return, and how
// long PtcRunner waits for a call.
type PtcCeilings struct {
	TimeoutMs       int64 `json:"timeout_ms"`
	MaxCatalogTools int   `json:"max_catalog_tools"`
	MaxResultBytes  int64 `json:"max_result_bytes"`
}

// ptcMaxTimeoutMs is the longest call timeout PtcRunner accepts.
const ptcMaxTimeoutMs = 300000

// timeoutSlackMs lets the root's own call_timeout answer first: its tool
// error names the root and the timeout, PtcRunner's own would not.
const timeoutSlackMs = 1000

// buildPtc returns one installation for the whole manifest (the supervisor),
// or with perRoot one per root, each its own worker serving only that root.
func buildPtc(m *manifest.Manifest, l Launch, perRoot bool) (*PtcDocument, error) {
	if !PtcName.MatchString(l.Name) {
		return nil, fmt.Errorf("--name %q is not a PtcRunner install name; use ^[a-z][a-z0-9._-]{0,127}$", l.Name)
	}
	doc := &PtcDocument{Credentials: map[string]PtcCredential{}, Install: map[string]PtcInstall{}}
	bindings := map[string]PtcBinding{} // variable -> credential
	for _, r := range m.Roots {
		if r.CursorKeyEnv == "" {
			continue
		}
		if slices.Contains(ptcReservedEnv, r.CursorKeyEnv) {
			return nil, fmt.Errorf("root %s: cursor_key_env %s is a variable PtcRunner does not let a transport set; choose another name", r.Name, r.CursorKeyEnv)
		}
		if _, done := bindings[r.CursorKeyEnv]; done {
			continue
		}
		cred := r.Name + ".cursor-key"
		doc.Credentials[cred] = PtcCredential{Env: r.CursorKeyEnv}
		bindings[r.CursorKeyEnv] = PtcBinding{Binding: cred}
	}
	if !perRoot {
		inst, err := ptcInstall(m.Roots, l.Revision, l.Command, l.Args, bindings, front.ToolName)
		if err != nil {
			return nil, fmt.Errorf("%w; --per-root prints one installation per root", err)
		}
		doc.Install[l.Name] = inst
		return doc, nil
	}
	for _, r := range m.Roots {
		direct := func(_, tool string) string { return tool }
		inst, err := ptcInstall([]manifest.Root{r}, l.Revision, l.Worker, r.Args(), bindings, direct)
		if err != nil {
			return nil, fmt.Errorf("root %s: %w", r.Name, err)
		}
		doc.Install[l.Name+"."+r.Name] = inst
	}
	return doc, nil
}

// ptcInstall is the installation of a process serving roots, whose tools it
// lists under upstream(root, tool).
func ptcInstall(roots []manifest.Root, revision, command string, args []string, bindings map[string]PtcBinding, upstream func(root, tool string) string) (PtcInstall, error) {
	inst := PtcInstall{
		Source: "mcp", InstallationRevision: revision,
		Transport: PtcTransport{Type: "stdio", Command: command, Args: args, InheritEnvironment: false, Env: map[string]PtcBinding{}},
		Tools:     map[string]PtcTool{},
	}
	if len(command) > ptcMaxCommand {
		return inst, fmt.Errorf("the command path is longer than PtcRunner's %d bytes", ptcMaxCommand)
	}
	if len(args) > ptcMaxArgs {
		return inst, fmt.Errorf("%d arguments, more than PtcRunner's %d", len(args), ptcMaxArgs)
	}
	for _, r := range roots {
		for _, t := range r.Tools {
			inst.Tools[upstream(r.Name, t)] = PtcTool{As: r.Name + "." + t, Effect: Effect(t)}
		}
		if r.CursorKeyEnv != "" {
			inst.Transport.Env[r.CursorKeyEnv] = bindings[r.CursorKeyEnv]
		}
		// The manifest holds max_result_bytes to the worker's range, whose
		// top (1048576) is also PtcRunner's.
		ceiling := limits.Default.MaxResultBytes
		if v, ok := r.Limits["max_result_bytes"]; ok {
			ceiling = v
		}
		inst.Ceilings.MaxResultBytes = max(inst.Ceilings.MaxResultBytes, ceiling)
		inst.Ceilings.TimeoutMs = max(inst.Ceilings.TimeoutMs, min(r.CallTimeout.Milliseconds()+timeoutSlackMs, ptcMaxTimeoutMs))
	}
	if len(inst.Tools) > ptcMaxTools {
		return inst, fmt.Errorf("%d tools, more than the %d one PtcRunner installation may list", len(inst.Tools), ptcMaxTools)
	}
	inst.Ceilings.MaxCatalogTools = len(inst.Tools)
	return inst, nil
}
