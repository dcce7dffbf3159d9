// Command fsmcp-supervisor serves several confined roots, each in its own
// fsmcp-worker process, on one stdio MCP connection. See the manifest
// reference in manifests/.
//
//	fsmcp-supervisor --manifest FILE [--worker BIN] [--grace 5s]
//	fsmcp-supervisor check FILE    validate a manifest, start nothing
//	fsmcp-supervisor entry FILE    print a host entry for the manifest
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/fsmcp/fsmcp/supervisor"
	"github.com/fsmcp/fsmcp/worker"
)

const exitUsage = 64

const usage = `Usage: fsmcp-supervisor --manifest FILE [--worker BIN] [--grace 5s]
       fsmcp-supervisor check FILE
       fsmcp-supervisor entry FILE

Serve the roots of a manifest (YAML, version 1) on one stdio MCP connection,
one fsmcp-worker process per root.

  --manifest FILE   the manifest; relative root paths are resolved against its folder
  --worker BIN      the fsmcp-worker binary (default: next to this binary, then $PATH)
  --grace D         how long calls in flight may run at shutdown (5s)
  --version         print the version
  check FILE        validate a manifest and exit 0, or 64 with file:line: field: message
  entry FILE        print an mcpServers host entry for the manifest
`

func main() { os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "check":
			return check(args[1:], stderr)
		case "entry":
			return entry(args[1:], stdout, stderr)
		}
	}
	fl := flag.NewFlagSet("fsmcp-supervisor", flag.ContinueOnError)
	fl.SetOutput(io.Discard)
	manifestFile := fl.String("manifest", "", "manifest file (YAML, version 1)")
	workerBin := fl.String("worker", "", "fsmcp-worker binary (default: next to this binary, then $PATH)")
	grace := fl.Duration("grace", supervisor.DefaultGrace, "how long calls in flight may run at shutdown")
	version := fl.Bool("version", false, "print the version")
	if err := fl.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, usage)
			return 0
		}
		fmt.Fprintf(stderr, "fsmcp-supervisor: %v; usage: fsmcp-supervisor --manifest FILE [--worker BIN] [--grace 5s]\n", err)
		return exitUsage
	}
	if *version {
		fmt.Fprintf(stdout, "fsmcp-supervisor %s\n", worker.Version())
		return 0
	}
	if *manifestFile == "" || fl.NArg() > 0 {
		fmt.Fprintln(stderr, "fsmcp-supervisor: usage: fsmcp-supervisor --manifest FILE [--worker BIN] [--grace 5s]")
		return exitUsage
	}
	bin, err := findWorker(*workerBin)
	if err != nil {
		fmt.Fprintf(stderr, "fsmcp-supervisor: %v\n", err)
		return exitUsage
	}
	err = supervisor.Run(context.Background(), supervisor.Options{
		Manifest: *manifestFile, WorkerBin: bin, Stdin: stdin, Stdout: stdout, Stderr: stderr, Grace: *grace,
	})
	var ce *supervisor.ConfigError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ce):
		fmt.Fprintf(stderr, "fsmcp-supervisor: %v\n", err)
		return exitUsage
	default:
		fmt.Fprintf(stderr, "fsmcp-supervisor: %v\n", err)
		return 1
	}
}

// check validates a manifest without starting anything.
func check(args []string, stderr io.Writer) int {
	if len(args) != 1 {
		fmt.Fprintln(stderr, "fsmcp-supervisor: usage: fsmcp-supervisor check FILE")
		return exitUsage
	}
	if _, err := supervisor.Load(args[0], nil); err != nil {
		fmt.Fprintf(stderr, "fsmcp-supervisor: %v\n", err)
		return exitUsage
	}
	return 0
}

// entry validates a manifest and prints a host entry that starts this
// supervisor on it.
func entry(args []string, stdout, stderr io.Writer) int {
	if len(args) != 1 {
		fmt.Fprintln(stderr, "fsmcp-supervisor: usage: fsmcp-supervisor entry FILE")
		return exitUsage
	}
	// The entry names the key variables, not their values, so they need
	// not be set to print it.
	m, err := supervisor.Load(args[0], func(string) (string, bool) { return "placeholder", true })
	if err != nil {
		fmt.Fprintf(stderr, "fsmcp-supervisor: %v\n", err)
		return exitUsage
	}
	file, err := filepath.Abs(args[0])
	if err != nil {
		fmt.Fprintf(stderr, "fsmcp-supervisor: %v\n", err)
		return exitUsage
	}
	self, err := os.Executable()
	if err != nil {
		self = "fsmcp-supervisor"
	}
	// An empty environment, plus the cursor-key variables the manifest
	// declares, each with a placeholder for the host's credential binding.
	env := map[string]string{}
	for _, r := range m.Roots {
		if r.CursorKeyEnv != "" {
			env[r.CursorKeyEnv] = "<base64url cursor key for root " + r.Name + ">"
		}
	}
	type server struct {
		Command string            `json:"command"`
		Args    []string          `json:"args"`
		Env     map[string]string `json:"env"`
	}
	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(map[string]map[string]server{
		"mcpServers": {"fsmcp": {Command: self, Args: []string{"--manifest", file}, Env: env}},
	}); err != nil {
		fmt.Fprintf(stderr, "fsmcp-supervisor: %v\n", err)
		return 1
	}
	return 0
}

func findWorker(flagValue string) (string, error) {
	if flagValue != "" {
		if _, err := os.Stat(flagValue); err != nil {
			return "", fmt.Errorf("worker binary %s: %w", flagValue, errors.Unwrap(err))
		}
		return filepath.Abs(flagValue)
	}
	if self, err := os.Executable(); err == nil {
		cand := filepath.Join(filepath.Dir(self), "fsmcp-worker")
		if _, err := os.Stat(cand); err == nil {
			return cand, nil
		}
	}
	p, err := exec.LookPath("fsmcp-worker")
	if err != nil {
		return "", fmt.Errorf("cannot find fsmcp-worker next to this binary or on $PATH; pass --worker BIN")
	}
	return p, nil
}
