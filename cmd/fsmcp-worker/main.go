// Command fsmcp-worker serves one confined root over MCP on stdio.
//
// Run by hand (or by an MCP host) it is an ordinary stdio server; launched
// by fsmcp-supervisor through go-plugin it serves the same tools over the
// plugin's stream instead.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/fsmcp/fsmcp/internal/jsonl"
	"github.com/fsmcp/fsmcp/internal/limits"
	"github.com/fsmcp/fsmcp/internal/nbio"
	"github.com/fsmcp/fsmcp/internal/profile"
	"github.com/fsmcp/fsmcp/internal/version"
	"github.com/fsmcp/fsmcp/internal/wire"
	"github.com/fsmcp/fsmcp/worker"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// exitUsage is the exit status of a configuration error (EX_USAGE).
const exitUsage = 64

// usage is the --help text. The limits' lines come from limits.Table.
func usage() string {
	var b strings.Builder
	b.WriteString(`Usage: fsmcp-worker --root DIR --include GLOB [options]

Serve one directory over MCP (protocol 2026-07-28) on stdin/stdout.

`)
	line := func(opt, doc string) { fmt.Fprintf(&b, "  %-28s%s\n", opt, doc) }
	line("--root DIR", "directory to confine to (required)")
	line("--include GLOB", "serve matching paths; required, repeatable")
	line("--exclude GLOB", "never serve matching paths; repeatable")
	line("--no-default-exclude", "drop the built-in exclude list")
	for _, l := range limits.Table {
		note := l.DefaultText()
		if l.Min != 1 || l.Max != limits.MaxInteger {
			note += "; " + l.Range()
		}
		line(l.Flag()+" N", fmt.Sprintf("%s (%s)", l.Doc, note))
	}
	line("--cursor-key-env NAME", "deterministic cursors keyed by this variable (base64url, >= 32 bytes)")
	line("--tools LIST", "tools to register: read, write, all, or names (all)")
	line("--name NAME", "the root's name in logs and cursor scopes (root)")
	line("--help", "show this help and exit")
	line("--version", "print the version and exit")
	b.WriteString(`
Integer options take decimal digits. A startup error exits 64 with one line
on stderr.
`)
	return b.String()
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fail := func(err error) int {
		fmt.Fprintf(stderr, "fsmcp-worker: %v\n", err)
		return exitUsage
	}
	o, err := parse(args)
	if err != nil {
		return fail(err)
	}
	if o.help {
		fmt.Fprint(stdout, usage())
		return 0
	}
	if o.version {
		fmt.Fprintln(stdout, version.String())
		return 0
	}
	if err := o.cfg.Check(); err != nil {
		return fail(err)
	}
	if o.keyEnv != nil {
		key, err := cursorKey(*o.keyEnv, os.LookupEnv)
		if err != nil {
			return fail(err)
		}
		o.cfg.CursorKey = key
	}
	root, err := worker.Open(o.cfg)
	if err != nil {
		return fail(err)
	}
	defer root.Close()
	for _, w := range root.Warnings() {
		fmt.Fprintf(stderr, "fsmcp-worker: %s\n", w)
	}
	srv := worker.NewServer(root, nil)
	// The worker runs Go code on one thread at a time unless GOMAXPROCS is
	// set: a call passes from the transport to the SDK to its handler and
	// back, and with a second P each hand-off wakes a thread that finds
	// nothing to do, which costs more than the call on a machine where a
	// wake-up is slow (see oneProc in fsmcp-supervisor, and docs/design.md,
	// "Raw non-blocking I/O"). A search_text page that scans files ahead
	// takes a second P while it does (docs/design.md, "How a search page
	// uses two cores").
	if _, set := os.LookupEnv("GOMAXPROCS"); !set {
		runtime.GOMAXPROCS(1)
		worker.SetSearchProcs(2)
	}
	if wire.Launched() {
		if err := wire.Serve(srv, jsonl.MaxLineFor(o.cfg.Limits.MaxWriteBytes), jsonl.MaxTextFor(o.cfg.Limits.MaxWriteBytes)); err != nil {
			fmt.Fprintf(stderr, "fsmcp-worker: plugin: %v\n", err)
			return 1
		}
		return 0
	}
	return serveStdio(srv, o.cfg.Limits.MaxWriteBytes, stderr)
}

// drainTimeout bounds how long a stop waits for calls in flight.
const drainTimeout = 5 * time.Second

// afterDrain is how long the server may still take to end once its input
// is over and drained, before the process exits regardless.
const afterDrain = 250 * time.Millisecond

// serveStdio serves srv on stdin and stdout until the input ends or
// SIGINT or SIGTERM arrives. Calls read before then get drainTimeout to be
// answered; a handler blocked for good (a read from a file system whose
// server is gone, which no cancellation reaches) does not hold the
// process: it exits once the time is up. Pipes are reopened non-blocking
// and read and written with raw system calls (see nbio), so with one P
// the process waits for input in the runtime's poller, not in a thread.
func serveStdio(srv *profile.Server, maxWrite int64, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ended := make(chan struct{})
	t := &jsonl.Transport{Reader: nbio.Reader(nbio.Pollable(os.Stdin, os.O_RDONLY)), Writer: nbio.Writer(nbio.Pollable(os.Stdout, os.O_WRONLY)), MaxLine: jsonl.MaxLineFor(maxWrite), MaxText: jsonl.MaxTextFor(maxWrite),
		DrainTimeout: drainTimeout, Ended: func() { close(ended) }}
	done := make(chan error, 1)
	go func() { done <- worker.Serve(ctx, srv, t) }()
	var err error
	select {
	case err = <-done:
	case <-ended:
		select {
		case err = <-done:
		case <-time.After(afterDrain):
			return 0
		}
	case <-ctx.Done():
		select {
		case err = <-done:
		case <-time.After(drainTimeout):
			return 0
		}
	}
	if err != nil && ctx.Err() == nil && !errors.Is(err, io.EOF) && !errors.Is(err, mcp.ErrConnectionClosed) {
		fmt.Fprintf(stderr, "fsmcp-worker: %v\n", err)
		return 1
	}
	return 0
}
