package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/fsmcp/fsmcp/internal/version"
	"github.com/fsmcp/fsmcp/supervisor/hostentry"
	"github.com/fsmcp/fsmcp/supervisor/manifest"
)

var entryNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// hostEntry validates a manifest and prints a host entry that starts this
// supervisor on it.
func hostEntry(args []string, stdout, stderr io.Writer) int {
	fl := newFlags()
	manifestFile := fl.String("manifest", "", "")
	format := fl.String("format", "mcp-json", "")
	name := fl.String("name", "fsmcp", "")
	workerBin := fl.String("worker", "", "")
	perRoot := fl.Bool("per-root", false, "")
	const short = "usage: fsmcp-supervisor host-entry [--manifest] FILE [--format mcp-json|vscode|ptc] [--per-root] [--name fsmcp] [--worker BIN]"
	if _, code, ok := parseCommand(fl, args, short, manifestIn(manifestFile), stdout, stderr); !ok {
		return code
	}
	if goRun() {
		return usageError(stderr, errors.New("this fsmcp-supervisor was built by go run, into a temporary folder or the Go build cache that a host cannot rely on; install both binaries with go install ./cmd/... and run host-entry from the installed fsmcp-supervisor"))
	}
	if !entryNameRE.MatchString(*name) {
		return usageError(stderr, fmt.Errorf("--name %q is not an entry name; use letters, digits, '.', '_' or '-'", *name))
	}
	if !slices.Contains(hostentry.Formats, *format) {
		return usageError(stderr, fmt.Errorf("--format %q is not a host format; use %s", *format, strings.Join(hostentry.Formats, ", ")))
	}
	// Cursor-key variables are named in the entry, not read: the host sets
	// them.
	data, err := manifest.Read(*manifestFile)
	if err != nil {
		return usageError(stderr, err)
	}
	m, err := manifest.Parse(*manifestFile, data)
	if err != nil {
		return usageError(stderr, err)
	}
	file, err := filepath.Abs(*manifestFile)
	if err != nil {
		return usageError(stderr, err)
	}
	self, err := os.Executable()
	if err != nil {
		return usageError(stderr, fmt.Errorf("cannot tell where this binary is: %v", err))
	}
	// The host spawns with an empty environment, so there is no $PATH to
	// find the worker on: name it unless it sits beside the supervisor.
	launchArgs := []string{"--manifest", file}
	bin, err := findWorker(*workerBin)
	if err != nil {
		return usageError(stderr, err)
	}
	if bin != besideSelf() {
		launchArgs = append(launchArgs, "--worker", bin)
	}
	launch := hostentry.Launch{Name: *name, Command: self, Args: launchArgs, Worker: bin, Revision: hostentry.Revision(data, version.String())}
	doc, err := hostentry.Build(m, launch, *format, *perRoot)
	if err != nil {
		return usageError(stderr, err)
	}
	if err := hostentry.Write(stdout, doc); err != nil {
		fmt.Fprintf(stderr, "fsmcp-supervisor: %v\n", err)
		return 1
	}
	return 0
}
