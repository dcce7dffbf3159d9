// Package supervisor runs fsmcp-supervisor: it loads a manifest, starts one
// worker per root, serves the union of their tools on one stdio MCP
// connection, and stops everything on SIGINT, SIGTERM or end of input. The
// actors (front server, one per root, signals) run in an oklog/run group.
package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/oklog/run"

	"github.com/fsmcp/fsmcp/internal/jsonl"
	"github.com/fsmcp/fsmcp/internal/version"
	"github.com/fsmcp/fsmcp/supervisor/front"
	"github.com/fsmcp/fsmcp/supervisor/manifest"
	"github.com/fsmcp/fsmcp/supervisor/rootproc"
)

// DefaultGrace is how long calls in flight may take to finish at shutdown.
const DefaultGrace = 5 * time.Second

// Options configure Run.
type Options struct {
	Manifest string
	// Roots, when set, is served instead of the Manifest file: a root
	// given on the command line (manifest.FromFlags).
	Roots     *manifest.Manifest
	WorkerBin string
	Stdin     io.Reader
	Stdout    io.Writer
	Stderr    io.Writer
	Grace     time.Duration
	// LookupEnv reads the supervisor's environment (os.LookupEnv if nil).
	LookupEnv func(string) (string, bool)
	// Logger receives the supervisor's log lines (nil: NewLogger on Stderr
	// at DefaultLogLevel).
	Logger hclog.Logger
}

// ConfigError is a configuration problem found before anything was served;
// the command exits 64 on it.
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

// Load reads and checks the manifest and the environment it needs.
func Load(file string, lookup func(string) (string, bool)) (*manifest.Manifest, error) {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	m, err := manifest.Load(file)
	if err != nil {
		return nil, &ConfigError{Err: err}
	}
	if err := m.CheckEnv(lookup); err != nil {
		return nil, &ConfigError{Err: err}
	}
	return m, nil
}

// load is the manifest to serve: Roots, or the Manifest file's.
func (o Options) load(lookup func(string) (string, bool)) (*manifest.Manifest, error) {
	if o.Roots == nil {
		return Load(o.Manifest, lookup)
	}
	if err := o.Roots.CheckEnv(lookup); err != nil {
		return nil, &ConfigError{Err: err}
	}
	return o.Roots, nil
}

// Run serves until stdin ends or a signal arrives. It returns nil on a clean
// stop, a *ConfigError for configuration problems found before serving.
func Run(ctx context.Context, o Options) error {
	if o.Grace <= 0 {
		o.Grace = DefaultGrace
	}
	lookup := o.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	if o.Logger == nil {
		o.Logger = NewLogger(o.Stderr, DefaultLogLevel)
	}
	// Signals are caught from the start: run.SignalHandler would subscribe
	// only once the group runs, after the front may already have answered,
	// and a SIGTERM in between would kill the supervisor outright.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	m, err := o.load(lookup)
	if err != nil {
		return err
	}
	procs, err := startAll(ctx, m, o, lookup)
	if err != nil {
		return err
	}
	roots := make([]front.Root, len(procs))
	for i, p := range procs {
		roots[i] = p
	}
	fs, err := front.New(&mcp.Implementation{Name: "fsmcp-supervisor", Version: version.String()}, roots, o.Grace, m.Versions)
	if err != nil {
		stopAll(procs)
		return &ConfigError{Err: err}
	}
	o.Logger.Info("serving", "manifest", o.Manifest, "roots", len(procs), "version", version.String())

	var g run.Group
	{
		// Front server on stdio. A stop lets the requests already read be
		// answered (within the grace period) before the connection ends.
		sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		served := make(chan struct{})
		w := maxWrite(m)
		g.Add(func() error {
			defer close(served)
			// A malformed line is answered, not the end of the session;
			// the front drains at end of input itself, within the grace.
			err := fs.Serve(sctx, &jsonl.Transport{Reader: struct{ io.Reader }{o.Stdin}, Writer: o.Stdout, MaxLine: jsonl.MaxLineFor(w), MaxText: jsonl.MaxTextFor(w), MaxInFlight: front.MaxInFlight})
			if err != nil {
				return fmt.Errorf("front server: %w", err)
			}
			return nil
		}, func(error) {
			fs.Stop()
			select {
			case <-served:
			case <-time.After(o.Grace + time.Second):
				cancel()
			}
		})
	}
	for _, p := range procs {
		pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		g.Add(func() error { return p.Run(pctx) }, func(error) { cancel() })
	}
	{
		sctx, cancel := context.WithCancel(ctx)
		g.Add(func() error {
			select {
			case sig := <-sigs:
				return run.SignalError{Signal: sig}
			case <-sctx.Done():
				return sctx.Err()
			}
		}, func(error) { cancel() })
	}
	err = runBounded(&g, fs, procs, o)
	var sig run.SignalError
	if err == nil || errors.As(err, &sig) || errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// backstop is how long past the grace period a stop may take before the
// workers are killed outright and Run returns; the exit then comes well
// within the grace period and a second.
const backstop = 500 * time.Millisecond

// runBounded runs the group. Once a stop has begun (end of input or a
// signal), the group has the grace period and backstop more to end;
// past that every worker still there is sent SIGKILL and Run returns
// without waiting for anything else, so nothing (a frozen worker, an RPC
// that never returns) can hold the supervisor.
func runBounded(g *run.Group, fs *front.Server, procs []*rootproc.Proc, o Options) error {
	result := make(chan error, 1)
	go func() { result <- g.Run() }()
	select {
	case err := <-result:
		return err
	case <-fs.Draining():
	}
	select {
	case err := <-result:
		return err
	case <-time.After(o.Grace + backstop):
	}
	o.Logger.Error(fmt.Sprintf("the stop took longer than the grace period (%s) and %s; killing the workers", o.Grace, backstop))
	for _, p := range procs {
		p.KillNow()
	}
	return nil
}

// startAll brings every root up at once; if one fails, the others are
// stopped and the error is returned (a *ConfigError when the worker refused
// its configuration with status 64).
func startAll(ctx context.Context, m *manifest.Manifest, o Options, lookup func(string) (string, bool)) ([]*rootproc.Proc, error) {
	procs := make([]*rootproc.Proc, len(m.Roots))
	errs := make(chan error, len(m.Roots))
	for i, r := range m.Roots {
		var env []string
		if r.CursorKeyEnv != "" {
			if v, ok := lookup(r.CursorKeyEnv); ok {
				env = append(env, r.CursorKeyEnv+"="+v)
			}
		}
		procs[i] = rootproc.New(rootproc.Config{
			Root: r, WorkerBin: o.WorkerBin, Env: env, Version: version.String(),
			Stderr: NewPrefixWriter(o.Stderr, r.Name+": "), Logger: rootLogger(o.Logger, r.Name),
		})
		go func(p *rootproc.Proc) { errs <- p.Start(ctx) }(procs[i])
	}
	var first error
	for range procs {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	if first != nil {
		stopAll(procs)
		if rootproc.IsExit(first, 64) {
			return nil, &ConfigError{Err: first}
		}
		return nil, first
	}
	return procs, nil
}

func stopAll(procs []*rootproc.Proc) {
	for _, p := range procs {
		p.Stop()
	}
}

// maxWrite is the largest write any root allows: the front accepts
// request lines that hold one.
func maxWrite(m *manifest.Manifest) int64 {
	var w int64
	for _, r := range m.Roots {
		w = max(w, r.Limits["max_write_bytes"])
	}
	return w
}
