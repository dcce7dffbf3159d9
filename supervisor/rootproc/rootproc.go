// Package rootproc runs one root's worker process under go-plugin: it starts
// the worker with the root's flags and granted environment, holds the MCP
// client session to it, probes it while calls are pending, and restarts it
// with backoff when it dies or stops answering. A root that crashes too
// often is marked failed; a worker binary that cannot be started at all is
// retried with backoff without counting as a crash. Callers of a root that
// cannot take a call get an error naming the root and its state at once.
package rootproc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fsmcp/fsmcp/internal/jsonl"
	"github.com/fsmcp/fsmcp/internal/limits"
	"github.com/fsmcp/fsmcp/internal/nbio"
	"github.com/fsmcp/fsmcp/internal/wire"
	"github.com/fsmcp/fsmcp/supervisor/manifest"
	"github.com/fsmcp/fsmcp/supervisor/relay"
)

// Restart policy.
const (
	BackoffMin   = 100 * time.Millisecond
	BackoffMax   = 10 * time.Second
	HealthyAfter = time.Minute
	CrashWindow  = 60 * time.Second
	MaxCrashes   = 5 // more than this many in CrashWindow marks the root failed
	startTimeout = 15 * time.Second
	listTimeout  = 15 * time.Second
)

// State is a root's state.
type State int

// The states of a root.
const (
	Starting State = iota
	Ready
	Restarting
	Failed
	Stopped
	// NotResponding: the worker missed its probes; it was killed and is
	// being restarted.
	NotResponding
	// Unavailable: the worker binary could not be started (missing, not
	// executable); it is tried again with backoff.
	Unavailable
)

// Config describes how to run one root.
type Config struct {
	Root      manifest.Root
	WorkerBin string
	// Env is the worker's whole environment (only the root's granted
	// variables); go-plugin adds its handshake variables.
	Env []string
	// Stderr receives the worker's stderr, one prefixed line at a time.
	Stderr io.Writer
	// Logger gets one line per worker start, exit and restart (nil: none).
	// At trace level go-plugin's own log goes to it as well.
	Logger hclog.Logger
	// Version is the supervisor's version, sent to the worker as client info.
	Version string
}

// Proc supervises one root's worker.
type Proc struct {
	cfg Config

	mu      sync.Mutex
	state   State
	failedN int
	why     string // for Unavailable: why the worker cannot start
	client  *plugin.Client
	release func() // lets go of the thread that forked the worker
	session *mcp.ClientSession
	relay   *relay.Relay // tools/call, on the worker's call channel (wire.CallsPipes)
	cmd     *exec.Cmd
	exited  chan struct{} // closed when the current session ends
	hung    chan struct{} // closed when the probe finds the current worker stuck
	tools   []*mcp.Tool
	starts  int // worker processes launched so far

	suspect atomic.Bool // a call timed out: probe the worker even when idle
	// timedOut wakes an idle probe when a call times out (CallTimedOut).
	timedOut chan struct{}
}

// New returns a supervisor for cfg's root; nothing is started yet.
func New(cfg Config) *Proc {
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	return &Proc{cfg: cfg, state: Starting, timedOut: make(chan struct{}, 1)}
}

// Name is the root's name.
func (p *Proc) Name() string { return p.cfg.Root.Name }

// Limits are the root's limits: the manifest's, and the defaults for the
// rest.
func (p *Proc) Limits() limits.Limits { return p.cfg.Root.Values() }

// CallTimeout is how long one call to the root may take.
func (p *Proc) CallTimeout() time.Duration {
	if d := p.cfg.Root.CallTimeout; d > 0 {
		return d
	}
	return limits.DefaultCallTimeout
}

// CallTimedOut tells the root that a call to it ran past its timeout: its
// worker is probed until it answers a probe, and killed if it does not.
func (p *Proc) CallTimedOut() {
	p.suspect.Store(true)
	select {
	case p.timedOut <- struct{}{}:
	default:
	}
}

// Tools lists the worker's tools as it reported them at the first start.
func (p *Proc) Tools() []*mcp.Tool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.tools
}

// PID is the current worker's process id, or 0.
func (p *Proc) PID() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Session returns the live session to the worker, or an error naming the
// root and its state.
func (p *Proc) Session() (*mcp.ClientSession, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state == Ready && p.session != nil {
		return p.session, nil
	}
	return nil, p.stateErrorLocked()
}

// Relay returns the live call relay to the worker, or an error naming the
// root and its state.
func (p *Proc) Relay() (*relay.Relay, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state == Ready && p.relay != nil {
		return p.relay, nil
	}
	return nil, p.stateErrorLocked()
}

// StateError describes why the root cannot take a call now.
func (p *Proc) StateError() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stateErrorLocked()
}

func (p *Proc) stateErrorLocked() error {
	name := p.cfg.Root.Name
	switch p.state {
	case Starting:
		return fmt.Errorf("root %s is starting; try again shortly", name)
	case Restarting:
		return fmt.Errorf("root %s is restarting after its worker exited; try again shortly", name)
	case Failed:
		return fmt.Errorf("root %s failed after %d crashes within %s; its tools stay unavailable until the supervisor is restarted", name, p.failedN, seconds(CrashWindow))
	case Stopped:
		return fmt.Errorf("root %s is stopped; the supervisor is shutting down", name)
	case NotResponding:
		return fmt.Errorf("root %s is not responding: its worker missed %d health probes in a row, so it was killed and is restarting; try again shortly", name, MaxMissedProbes)
	case Unavailable:
		return fmt.Errorf("root %s cannot start its worker: %s; the supervisor keeps trying", name, p.why)
	}
	// Ready, but a call just failed: the worker died and the watcher has
	// not noticed yet.
	return fmt.Errorf("root %s is restarting after its worker exited; try again shortly", name)
}

// ExitError is a worker that exited before it was ready.
type ExitError struct {
	Root string
	Code int // the worker's exit code, -1 if unknown
	Err  error
	// NeverRan: the process could not be started at all (the binary is
	// missing or not executable); not a crash.
	NeverRan bool
}

// maxSocketPath is the longest path a Unix socket can be bound to: the
// size of sun_path less its terminating NUL, on macOS (104) which is
// shorter than Linux (108).
const maxSocketPath = 103

// socketDirBase is where workers' socket directories are made: the
// temporary directory, unless it is so deep that the socket's path (a
// directory and a file name, each with up to 10 random digits) would not
// fit, as under a deep $TMPDIR; then /tmp, where go-plugin would have put
// the socket anyway.
func socketDirBase() string {
	base := os.TempDir()
	if len(base)+len("/fsmcp-4294967295/plugin4294967295") > maxSocketPath {
		return "/tmp"
	}
	return base
}

// errSocketDir is a worker start that failed before the process: the
// directory for its go-plugin socket could not be made.
var errSocketDir = errors.New("create the worker's socket directory")

// Why says in a few words why a worker that never ran could not start,
// without the binary's path (it goes to tool errors; the log has it).
func (e *ExitError) Why() string {
	switch {
	case errors.Is(e.Err, errSocketDir):
		return "no directory for the worker's socket can be made in the temporary directory"
	case errors.Is(e.Err, os.ErrNotExist):
		return "the worker binary is missing"
	case errors.Is(e.Err, os.ErrPermission):
		return "the worker binary is not executable (permission denied)"
	case errors.Is(e.Err, syscall.ENOEXEC):
		return "the worker binary is not a program this OS and architecture can run"
	}
	return "the worker process could not be started"
}

func (e *ExitError) Error() string {
	if e.Code >= 0 {
		return fmt.Sprintf("root %s: worker exited with status %d before it was ready; its stderr is above, prefixed \"%s: \"", e.Root, e.Code, e.Root)
	}
	// go-plugin's errors can span many lines; keep the first.
	msg, _, _ := strings.Cut(strings.TrimSpace(e.Err.Error()), "\n")
	return fmt.Sprintf("root %s: worker did not start: %s", e.Root, msg)
}

func (e *ExitError) Unwrap() error { return e.Err }

// Start launches the worker and lists its tools. It is called once before
// Run; an error means the root could not be brought up.
func (p *Proc) Start(ctx context.Context) error {
	if err := p.launch(ctx); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, listTimeout)
	defer cancel()
	p.mu.Lock()
	s := p.session
	p.mu.Unlock()
	res, err := s.ListTools(ctx, nil)
	if err != nil {
		p.kill()
		return &ExitError{Root: p.Name(), Code: -1, Err: fmt.Errorf("list tools: %w", err)}
	}
	var tools []*mcp.Tool
	for _, t := range res.Tools {
		if p.cfg.Root.Tools.Has(t.Name) {
			tools = append(tools, t)
		}
	}
	p.mu.Lock()
	p.tools = tools
	p.mu.Unlock()
	return nil
}

// bothEnds is the reader of the call channel, whose Close closes the
// writer too: the channel is two pipes, and the connection closes only
// its reader.
type bothEnds struct {
	io.ReadCloser
	w io.Closer
}

func (b bothEnds) Close() error { return errors.Join(b.ReadCloser.Close(), b.w.Close()) }

func (p *Proc) launch(ctx context.Context) error {
	cmd := exec.Command(p.cfg.WorkerBin, p.cfg.Root.Args()...)
	cmd.Env = append([]string{}, p.cfg.Env...)
	setParentDeath(cmd)
	// The call channel (see wire.CallsPipes): the worker's ends go to it
	// as descriptors wire.CallsInFD and wire.CallsOutFD and are closed
	// here once it has started.
	calls, callsRemote, err := wire.CallsPipes()
	if err != nil {
		return &ExitError{Root: p.Name(), Code: -1, Err: err}
	}
	// The gRPC connection's TLS keys (see wire.NewKeys): the worker's
	// reach it through a pipe at descriptor wire.KeysFD, whose read end
	// is closed here with the call channel's.
	keys, keysFile, err := workerKeys()
	if err != nil {
		_ = calls.Close()
		_ = callsRemote.Close()
		return &ExitError{Root: p.Name(), Code: -1, Err: err, NeverRan: true}
	}
	closeRemote := func() {
		_ = callsRemote.Close()
		_ = keysFile.Close()
	}
	cmd.ExtraFiles = append(callsRemote.ExtraFiles(), keysFile)
	cmd.Env = append(cmd.Env, wire.CallsEnvValue(), wire.KeysEnvValue())
	// go-plugin's worker listens on a Unix socket it creates in
	// $PLUGIN_UNIX_SOCKET_DIR (else the temporary directory) and unlinks
	// only when it returns from serving; a worker ended with SIGKILL, as
	// kill ends them, would leave it behind. Each worker gets a directory
	// of its own, removed as soon as the supervisor is connected, or by
	// fail for a start that ends before that.
	sockDir, err := os.MkdirTemp(socketDirBase(), "fsmcp-")
	if err != nil {
		_ = calls.Close()
		closeRemote()
		return &ExitError{Root: p.Name(), Code: -1, Err: fmt.Errorf("%w: %w", errSocketDir, err), NeverRan: true}
	}
	cmd.Env = append(cmd.Env, plugin.EnvUnixSocketDir+"="+sockDir)
	removeSockDir := func() { _ = os.RemoveAll(sockDir) }
	stderr := p.stderr()
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  wire.Handshake,
		Plugins:          wire.Plugins(),
		Cmd:              cmd,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		TLSConfig:        keys.Client,
		GRPCDialOptions:  wire.DialOptions(),
		SkipHostEnv:      true,
		StartTimeout:     startTimeout,
		Stderr:           stderr,
		SyncStderr:       stderr,
		SyncStdout:       stderr,
		Logger:           p.pluginLogger(),
	})
	release := removeSockDir
	fail := func(err error) error {
		_ = calls.Close()
		closeRemote()
		killProcess(cmd)
		code := -1
		if reap(client, release, nil) && cmd.ProcessState != nil && client.Exited() {
			code = cmd.ProcessState.ExitCode()
		}
		return &ExitError{Root: p.Name(), Code: code, Err: err, NeverRan: cmd.Process == nil}
	}
	rpc, releaseThread, err := clientOnOwnThread(client)
	release = func() { releaseThread(); removeSockDir() }
	if err != nil {
		return fail(err)
	}
	// The worker holds its ends now; the supervisor's copies would keep
	// the channel open after the worker died.
	closeRemote()
	raw, err := rpc.Dispense(wire.PluginName)
	if err != nil {
		return fail(fmt.Errorf("dispense plugin: %w", err))
	}
	wc, ok := raw.(*wire.Client)
	if !ok {
		return fail(fmt.Errorf("plugin is %T, not a wire client", raw))
	}
	mc := mcp.NewClient(&mcp.Implementation{Name: "fsmcp-supervisor/" + p.Name(), Version: p.cfg.Version}, nil)
	cctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	session, err := mc.Connect(cctx, wc.Transport(), nil)
	if err != nil {
		return fail(fmt.Errorf("connect MCP session: %w", err))
	}
	// Closing the connection closes its reader; that closes both ends, so
	// the worker reads the end of its requests.
	in, out := nbio.Reader(calls.In), nbio.Writer(calls.Out)
	conn, err := (&jsonl.Transport{Reader: bothEnds{in, out}, Writer: out, MaxLine: answerLimit(p.cfg.Root), ReadsAnswers: true}).Connect(cctx)
	if err != nil {
		session.Close()
		return fail(fmt.Errorf("open the call channel: %w", err))
	}
	rl := relay.New(conn, out)
	// Any answer shows the worker serves the channel; a worker that does
	// not would leave every relayed call waiting.
	if _, err := rl.Call(cctx, "ping", json.RawMessage(`{}`)); err != nil {
		_ = rl.Close()
		session.Close()
		return fail(fmt.Errorf("the worker does not answer on its call channel: %w", err))
	}
	// Connected: the gRPC connection never dials the path again
	// (wire.DialOptions), so a supervisor killed from here on leaves no
	// socket behind, and the worker's end is only the thread to let go.
	removeSockDir()
	release = releaseThread
	exited, hung := make(chan struct{}), make(chan struct{})
	go func() {
		_ = session.Wait()
		close(exited)
	}()
	p.mu.Lock()
	p.client, p.session, p.relay, p.cmd, p.exited, p.hung, p.release = client, session, rl, cmd, exited, hung, release
	if p.state != Failed && p.state != Stopped {
		p.state = Ready
	}
	p.suspect.Store(false)
	p.starts++
	restarts := p.starts - 1
	p.mu.Unlock()
	if restarts == 0 {
		p.cfg.Logger.Info("worker started", "pid", cmd.Process.Pid, "tools", p.cfg.Root.Tools.String())
	} else {
		p.cfg.Logger.Info("worker restarted", "pid", cmd.Process.Pid, "restarts", restarts)
	}
	p.cfg.Logger.Debug("worker command", "path", cmd.Path, "args", cmd.Args[1:], "env", envNames(cmd.Env))
	go p.probe(rl, cmd.Process, hung)
	return nil
}

// workerKeys makes the TLS keys of one worker start and the pipe that
// hands the worker its side.
func workerKeys() (*wire.Keys, *os.File, error) {
	keys, err := wire.NewKeys()
	if err != nil {
		return nil, nil, err
	}
	f, err := keys.Pipe()
	if err != nil {
		return nil, nil, err
	}
	return keys, f, nil
}

// answerLimit bounds a line the supervisor reads from the worker's call
// channel: the root's result ceiling, with room for the response around
// the result. A longer answer fails its call rather than be held.
func answerLimit(r manifest.Root) int {
	ceiling := limits.Default.MaxResultBytes
	if v, ok := r.Limits["max_result_bytes"]; ok {
		ceiling = v
	}
	return int(ceiling) + 64<<10
}

// pluginLogger is the logger handed to go-plugin: silent below trace, since
// its lines repeat what the root's own log and prefixed stderr already say.
func (p *Proc) pluginLogger() hclog.Logger {
	if p.cfg.Logger.GetLevel() != hclog.Trace {
		return hclog.NewNullLogger()
	}
	return p.cfg.Logger.Named("go-plugin")
}

// envNames lists the variable names of env, never their values.
func envNames(env []string) []string {
	names := make([]string, 0, len(env))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		names = append(names, name)
	}
	return names
}

// Run watches the worker started by Start and restarts it with backoff until
// ctx is done, then stops it. It returns nil when stopped by ctx.
func (p *Proc) Run(ctx context.Context) error {
	var pol policy
	var launchErr error // why the last restart failed, nil if it ran
	for {
		p.mu.Lock()
		exited, stuck, started := p.exited, p.hung, time.Now()
		p.mu.Unlock()
		if exited != nil && launchErr == nil {
			select {
			case <-ctx.Done():
				p.stop()
				return nil
			case <-exited:
			case <-stuck:
			}
		}
		pid, status := p.kill()
		var delay time.Duration
		var ee *ExitError
		if errors.As(launchErr, &ee) && ee.NeverRan {
			// Not a crash: nothing ran. Say why and keep trying.
			delay = pol.startFailure()
			p.mu.Lock()
			if p.state != Stopped {
				p.state, p.why = Unavailable, ee.Why()
			}
			p.mu.Unlock()
			p.cfg.Logger.Error(fmt.Sprintf("worker cannot start: %s; trying again in %s", ee.Why(), delay), "path", p.cfg.WorkerBin, "error", firstLine(ee.Err))
		} else {
			var failed bool
			var n int
			delay, failed, n = pol.crash(time.Now(), time.Since(started))
			p.mu.Lock()
			hung := p.state == NotResponding
			switch {
			case failed:
				p.state, p.failedN = Failed, n
			case !hung:
				p.state = Restarting
			}
			p.mu.Unlock()
			if failed {
				p.cfg.Logger.Error(fmt.Sprintf("worker failed after %d crashes within %s; its tools are disabled", n, seconds(CrashWindow)), "pid", pid, "status", status)
				<-ctx.Done()
				p.stop()
				return nil
			}
			what := "worker exited"
			if hung {
				what = "worker killed after missing its probes"
			}
			p.cfg.Logger.Warn(fmt.Sprintf("%s; restarting in %s", what, delay), "pid", pid, "status", status)
		}
		select {
		case <-ctx.Done():
			p.stop()
			return nil
		case <-time.After(delay):
		}
		launchErr = p.launch(ctx)
		if launchErr != nil && !(errors.As(launchErr, &ee) && ee.NeverRan) {
			p.cfg.Logger.Error("worker restart failed", "error", launchErr)
		}
	}
}

// firstLine is err's text up to its first line break.
func firstLine(err error) string {
	msg, _, _ := strings.Cut(strings.TrimSpace(err.Error()), "\n")
	return msg
}

func (p *Proc) stderr() io.Writer {
	if p.cfg.Stderr != nil {
		return p.cfg.Stderr
	}
	return os.Stderr
}

// IsExit reports whether err is a worker that exited with code before it
// was ready.
func IsExit(err error, code int) bool {
	var e *ExitError
	return errors.As(err, &e) && e.Code == code
}

// seconds renders d as whole seconds ("60s" rather than "1m0s").
func seconds(d time.Duration) string { return fmt.Sprintf("%ds", int(d/time.Second)) }
