// Command fsmcp-supervisor serves several confined roots, each in its own
// fsmcp-worker process, on one stdio MCP connection. See the manifest
// reference in manifests/.
//
//	fsmcp-supervisor --manifest FILE [--worker BIN] [--grace 5s] [--log-level warn]
//	fsmcp-supervisor --root DIR --include GLOB [--tools read] [...]   one root, no manifest file
//	fsmcp-supervisor tools [--manifest] FILE             list the tools a host would see
//	fsmcp-supervisor call --manifest FILE TOOL [JSON] [--all]   make one call, print the result
//	fsmcp-supervisor check [--manifest] FILE...          validate manifests, start nothing
//	fsmcp-supervisor host-entry [--manifest] FILE [--format mcp-json|vscode|ptc] [--per-root]   print a host entry
package main

import (
	"context"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"

	"github.com/fsmcp/fsmcp/internal/cursorkey"
	"github.com/fsmcp/fsmcp/internal/nbio"
	"github.com/fsmcp/fsmcp/internal/version"
	"github.com/fsmcp/fsmcp/supervisor"
	"github.com/fsmcp/fsmcp/supervisor/manifest"
)

const exitUsage = 64

const usage = `Usage: fsmcp-supervisor --manifest FILE [--worker BIN] [--grace 5s] [--log-level warn]
       fsmcp-supervisor --root DIR --include GLOB [root options] [--worker BIN] [--grace 5s] [--log-level warn]
       fsmcp-supervisor tools [--manifest] FILE [--json]
       fsmcp-supervisor call --manifest FILE TOOL [JSON-ARGUMENTS] [--all]
       fsmcp-supervisor check [--manifest] FILE...
       fsmcp-supervisor host-entry [--manifest] FILE [--format mcp-json|vscode|ptc] [--per-root] [--name fsmcp] [--worker BIN]

Serve the roots of a manifest (YAML, version 1) on one stdio MCP connection,
one fsmcp-worker process per root.

  --manifest FILE   the manifest; relative root paths are resolved against its folder
  --root DIR        instead of a manifest, serve one root named by the worker's own
                    options: --root, --include (required), --exclude,
                    --no-default-exclude, --tools (all), --name (root; its tools are
                    <name>_<tool>), the --max-* limits and --cursor-key-env, and
                    --call-timeout D (30s)
  --worker BIN      the fsmcp-worker binary (default: next to this binary, then $PATH)
  --grace D         how long calls in flight may run at shutdown (5s)
  --log-level L     trace, debug, info, warn, error or off (warn); hclog lines on stderr
  --version         print the version

  tools             start the manifest's roots and list the tools a host would see
                    (name, effect, description; --json: the tools/list entries)
  call TOOL [JSON]  start the manifest's roots, make one tool call with the JSON
                    object as arguments, print its structuredContent as indented
                    JSON and exit; --all follows next_cursor and prints each page
                    as it arrives, one JSON document a line. Under go run both
                    commands start the worker built from the same checkout
  check FILE...     validate manifests without starting anything: exit 0, or 64
                    with a FILE:LINE: field: message line for every error; warns
                    (exit 0) above 64 roots, with the memory they take. A
                    cursor-key variable that is set must hold a key; one that
                    is not set is left to the host
  host-entry        print a host entry that starts this supervisor on the manifest,
                    by absolute paths with an empty environment: --format mcp-json
                    (an mcpServers entry, the default), vscode (.vscode/mcp.json
                    servers) or ptc (a PtcRunner host document mapping each tool;
                    --per-root: one installation per root, each its own worker);
                    --name sets the entry's key (fsmcp)
`

func main() {
	oneProc()
	os.Exit(run(os.Args[1:], nbio.Reader(nbio.Pollable(os.Stdin, os.O_RDONLY)), nbio.Writer(nbio.Pollable(os.Stdout, os.O_WRONLY)), os.Stderr))
}

// oneProc runs Go code on one thread at a time (GOMAXPROCS=1) unless the
// environment sets GOMAXPROCS. The supervisor only relays: each call is a
// chain of goroutine hand-offs from the host's line to the worker and
// back, and with a second P idle every hand-off wakes another thread that
// finds nothing to do, which costs more than the hand-off itself. With one
// P the next goroutine runs on the same thread. Start-up, where the
// supervisor generates one TLS key per root, is no slower for it.
func oneProc() {
	if _, set := os.LookupEnv("GOMAXPROCS"); !set {
		runtime.GOMAXPROCS(1)
	}
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "tools":
			return tools(args[1:], stdout, stderr)
		case "call":
			return call(args[1:], stdout, stderr)
		case "check":
			return check(args[1:], stdout, stderr)
		case "host-entry":
			return hostEntry(args[1:], stdout, stderr)
		case "entry": // the earlier spelling of host-entry --format mcp-json
			return hostEntry(args[1:], stdout, stderr)
		}
	}
	fl := newFlags()
	manifestFile := fl.String("manifest", "", "")
	workerBin := fl.String("worker", "", "")
	grace := fl.Duration("grace", supervisor.DefaultGrace, "")
	logLevel := fl.String("log-level", supervisor.DefaultLogLevel.String(), "")
	showVersion := fl.Bool("version", false, "")
	root := oneRoot(fl)
	const short = "usage: fsmcp-supervisor --manifest FILE | --root DIR --include GLOB [root options] [--worker BIN] [--grace 5s] [--log-level warn]"
	if code, done := parseFlags(fl, args, short, stdout, stderr); done {
		return code
	}
	if *showVersion {
		fmt.Fprintln(stdout, version.String())
		return 0
	}
	switch {
	case root.switchValue != "":
		return usageError(stderr, fmt.Errorf("unknown option %s", root.switchValue))
	case root.roots > 1:
		return usageError(stderr, errors.New("--root is given twice; the command line serves one root: to serve several, list them in a manifest (--manifest FILE)"))
	case *manifestFile != "" && (root.Root != "" || rootOptionGiven(fl)):
		return usageError(stderr, errors.New("--manifest and the options of a root (--root, --include, ...) are two ways to name what to serve; give one"))
	case (*manifestFile == "" && root.Root == "") || fl.NArg() > 0:
		fmt.Fprintln(stderr, "fsmcp-supervisor: "+short)
		return exitUsage
	}
	level, err := supervisor.ParseLogLevel(*logLevel)
	if err != nil {
		return usageError(stderr, err)
	}
	opts := supervisor.Options{Manifest: *manifestFile, Stdin: stdin, Stdout: stdout, Stderr: stderr, Grace: *grace,
		Logger: supervisor.NewLogger(stderr, level)}
	if root.Root != "" {
		if opts.Roots, err = rootManifest(&root.RootFlags); err != nil {
			var all manifest.Errors
			if !errors.As(err, &all) {
				return usageError(stderr, err)
			}
			for _, e := range all {
				fmt.Fprintf(stderr, "fsmcp-supervisor: %v\n", e)
			}
			return exitUsage
		}
	}
	if opts.WorkerBin, err = findWorker(*workerBin); err != nil {
		return usageError(stderr, err)
	}
	err = supervisor.Run(context.Background(), opts)
	var ce *supervisor.ConfigError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ce):
		return usageError(stderr, err)
	default:
		fmt.Fprintf(stderr, "fsmcp-supervisor: %v\n", err)
		return 1
	}
}

// rootManifest is the manifest of the root given on the command line,
// relative to the working directory.
func rootManifest(f *manifest.RootFlags) (*manifest.Manifest, error) {
	dir, err := os.Getwd()
	if err != nil {
		return nil, fmt.Errorf("the working directory: %w", err)
	}
	return manifest.FromFlags(dir, *f)
}

func newFlags() *flag.FlagSet {
	fl := flag.NewFlagSet("fsmcp-supervisor", flag.ContinueOnError)
	fl.SetOutput(io.Discard)
	return fl
}

// parseFlags parses args into fl. done reports that the command is over:
// --help printed the usage (0) or a bad flag printed one line (64).
func parseFlags(fl *flag.FlagSet, args []string, short string, stdout, stderr io.Writer) (code int, done bool) {
	return flagResult(fl.Parse(args), short, stdout, stderr)
}

func usageError(stderr io.Writer, err error) int {
	fmt.Fprintf(stderr, "fsmcp-supervisor: %v\n", err)
	return exitUsage
}

// placeholderKey is a well-formed cursor key, for where a key variable
// is named but not set.
var placeholderKey = base64.RawURLEncoding.EncodeToString(make([]byte, cursorkey.MinBytes))

// checkEnv is the environment check validates a manifest in: a cursor-key
// variable that is set must hold a key, as at startup; one that is not set
// is left to the host that starts the supervisor (and check runs in CI,
// where the key is not).
func checkEnv(name string) (string, bool) {
	if v, ok := os.LookupEnv(name); ok {
		return v, true
	}
	return placeholderKey, true
}

// check validates manifests without starting anything. Every error of each
// manifest gets its own FILE:LINE: field: message line, the form editors
// and CI annotations pick up; a manifest with many roots gets a warning.
// The manifests are named as the other commands name one (--manifest
// FILE, repeatable) or as arguments.
func check(args []string, stdout, stderr io.Writer) int {
	fl := newFlags()
	var files repeated
	fl.Var(&files, "manifest", "")
	const short = "usage: fsmcp-supervisor check [--manifest] FILE..."
	pos, code, ok := parseCommand(fl, args, short, func(pos []string) bool { return len(files)+len(pos) > 0 }, stdout, stderr)
	if !ok {
		return code
	}
	files = append(files, pos...)
	code = 0
	for _, file := range files {
		m, err := supervisor.Load(file, checkEnv)
		var all manifest.Errors
		switch {
		case errors.As(err, &all):
			for _, e := range all {
				fmt.Fprintln(stderr, e)
			}
			code = exitUsage
		case err != nil:
			fmt.Fprintln(stderr, err)
			code = exitUsage
		default:
			if w := m.Warning(); w != "" {
				fmt.Fprintf(stderr, "%s: warning: %s\n", file, w)
			}
		}
	}
	return code
}
