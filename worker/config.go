// Package worker is one confined, single-root filesystem MCP server: its
// configuration, the five tools, and the *mcp.Server that serves them.
//
// Open validates a Config and pins the root by descriptor; NewServer builds
// the server for an opened root. cmd/fsmcp-worker is a thin shell around the
// two.
package worker

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/fsmcp/fsmcp/internal/glob"
	"github.com/fsmcp/fsmcp/internal/limits"
	"github.com/fsmcp/fsmcp/internal/names"
	"github.com/fsmcp/fsmcp/internal/toolset"
	"github.com/fsmcp/fsmcp/worker/confine"
	"github.com/fsmcp/fsmcp/worker/cursor"
	"github.com/fsmcp/fsmcp/worker/paging"
	"github.com/fsmcp/fsmcp/worker/procs"
	"github.com/fsmcp/fsmcp/worker/walk"
	"github.com/fsmcp/fsmcp/worker/watch"
)

// Limits are a root's budgets and walk ceilings (package limits holds
// their defaults and ranges); Config takes them.
type Limits = limits.Limits

// DefaultLimits are the limits a root gets unless told otherwise.
var DefaultLimits = limits.Default

// Config describes one root.
type Config struct {
	Root             string   // host directory to confine to
	Include          []string // what the root may serve; required
	Exclude          []string // what it never serves
	NoDefaultExclude bool     // drop the built-in exclude list
	Limits           Limits
	Name             string       // the root's name in logs and cursor scopes; default "root"
	Tools            toolset.Mask // tools to register; nil means all
	CursorKey        []byte       // stable key for deterministic cursors; nil means process-affine
}

// ConfigError is an unusable configuration. Its text is one line fit for
// an operator.
type ConfigError struct{ Msg string }

func (e *ConfigError) Error() string { return e.Msg }

func configErrorf(format string, args ...any) error {
	return &ConfigError{Msg: fmt.Sprintf(format, args...)}
}

// Root is an opened, validated root, ready to serve.
type Root struct {
	cfg      Config
	lim      Limits
	dir      *confine.Root
	sel      *glob.Selector
	codec    *cursor.Codec
	mask     toolset.Mask
	warnings []string
	digests  *digestCache
	tree     *walk.Tree
	inv      *walk.Inventories
	pages    *paging.Engine
}

// Warnings are the operator notes the configuration earned (a root that
// can take no write, a literal include a built-in exclude defeats).
func (r *Root) Warnings() []string { return r.warnings }

// Close releases the root's descriptor.
func (r *Root) Close() error {
	r.pages.Close()
	r.inv.Close()
	return r.dir.Close()
}

// Deterministic reports whether cursors use a stable key and content digests.
func (r *Root) Deterministic() bool { return r.cfg.CursorKey != nil }

// Check validates what cfg says without touching the filesystem: the root
// and include are given, the limits are in range, the name and tool mask
// are usable. Open runs it first; a command line may run it early to
// report these before anything else. Every error is a *ConfigError with the
// text of docs/reference.md, Worker startup, where it has one.
func (cfg *Config) Check() error {
	if cfg.Root == "" {
		return configErrorf("--root is required")
	}
	if len(cfg.Include) == 0 {
		return configErrorf("at least one --include pattern is required")
	}
	lim := cfg.Limits
	if lim == (Limits{}) {
		lim = DefaultLimits
	}
	if err := lim.Validate(); err != nil {
		return &ConfigError{Msg: err.Error()}
	}
	if cfg.Name != "" && !names.Root(cfg.Name) {
		return configErrorf("--name %q must match %s", cfg.Name, names.RootPattern)
	}
	if cfg.Tools != nil && len(cfg.Tools) == 0 {
		return configErrorf("--tools names no tool")
	}
	return nil
}

// Open validates cfg and opens its root. Every error is a *ConfigError.
func Open(cfg Config) (*Root, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	if cfg.Limits == (Limits{}) {
		cfg.Limits = DefaultLimits
	}
	if cfg.Name == "" {
		cfg.Name = "root"
	}
	mask := cfg.Tools
	if mask == nil {
		mask = toolset.Mask(toolset.All)
	}
	sel, err := glob.NewSelector(glob.Options{
		Include:        cfg.Include,
		Exclude:        cfg.Exclude,
		DefaultExclude: !cfg.NoDefaultExclude,
		Hidden:         func(p string) bool { return !strings.Contains(p, "/") && confine.IsTempName(p) },
	})
	if err != nil {
		return nil, &ConfigError{Msg: err.Error()}
	}
	key := cfg.CursorKey
	if key == nil {
		key = cursor.RandomKey()
	} else if len(key) < cursor.MinKeyBytes {
		return nil, configErrorf("cursor key must be at least %d bytes", cursor.MinKeyBytes)
	}
	codec, err := cursor.New(key, cfg.Name)
	if err != nil {
		return nil, &ConfigError{Msg: err.Error()}
	}
	dir, err := confine.Open(cfg.Root)
	switch {
	case errors.Is(err, confine.ErrNotExist):
		return nil, configErrorf("root does not exist")
	case errors.Is(err, confine.ErrSymlink):
		return nil, configErrorf("root must not be a symbolic link")
	case errors.Is(err, confine.ErrNotDir):
		return nil, configErrorf("root is not a directory")
	case err != nil:
		return nil, configErrorf("root cannot be opened: %v", errors.Unwrap(err))
	}
	// One budget of watches for the root: its kept inventories, and the
	// watches its read guards keep idle (which give way to inventories).
	watches := watch.NewBudget(maxWatches)
	dir.KeepIdleWatches(watches, watchIdle)
	r := &Root{cfg: cfg, lim: cfg.Limits, dir: dir, sel: sel, codec: codec, mask: mask}
	r.tree = walk.New(dir, sel, cfg.Limits)
	r.inv = walk.NewInventories(watches, watchIdle)
	r.pages = r.newPages(paging.Options{})
	if cfg.CursorKey != nil {
		r.digests = newDigestCache(int(cfg.Limits.MaxFiles))
	}
	if !sel.ReachesTopLevel() && mask.Has(toolset.WriteTextFile) {
		r.warnings = append(r.warnings, "no --include pattern matches a file in the root itself, so write_text_file will refuse every call.")
	}
	for _, p := range sel.LiteralIncludesDefeated() {
		r.warnings = append(r.warnings, fmt.Sprintf("--include %s matches a built-in exclude, so nothing it names is served. Pass --no-default-exclude to drop the built-in list.", p))
	}
	return r, nil
}

// maxWatches bounds the inotify watches one root holds for its kept
// inventories (one per directory of each kept scope, and per file with
// more than one link) and its read guards' idle watches. A scope that
// would need more is inventoried on every page instead. It is
// the smaller of 32,768 and an eighth of the user's inotify watch limit as
// the process starts (see userWatchLimit), so a handful of workers never
// use up what the user's other programs need.
var maxWatches = min(1<<15, userWatchLimit()/8)

// userWatchLimit is the number of inotify watches this process's user may
// hold: fs.inotify.max_user_watches, or the user namespace's own limit
// (user.max_inotify_watches) where that is lower. Where neither can be
// read it is 8<<15, so the cap stays 32,768.
func userWatchLimit() int {
	limit := 8 << 15
	for _, f := range []string{"/proc/sys/fs/inotify/max_user_watches", "/proc/sys/user/max_inotify_watches"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && n >= 0 {
			limit = min(limit, n)
		}
	}
	return limit
}

// watchIdle is how long kept inventories outlive the last text search of
// their root: then their watches are given back, and the next search walks
// again. FSMCP_TEST_WATCH_IDLE (a Go duration) sets it for tests only; it is
// not an interface.
var watchIdle = func() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("FSMCP_TEST_WATCH_IDLE")); err == nil && d > 0 {
		return d
	}
	return time.Minute
}()

// newPages is the paging engine of r's search_text pages, with opts.
func (r *Root) newPages(opts paging.Options) *paging.Engine {
	cfg := paging.Config{ScanBytes: r.lim.MaxScanBytes, ResultBytes: r.lim.MaxResultBytes, Item: textMatchOf, Cost: itemCost}
	return paging.New(r.dir, cfg, opts)
}

// SetSearchProcs lets each search_text page raise GOMAXPROCS to n (at most
// the number of CPUs) while it scans files ahead, and a walk while it runs
// on two goroutines; it goes back procs.Linger after the last such page or
// walk ends. A worker launched by the supervisor runs with one P (see
// cmd/fsmcp-worker); this lets its searches use a second core.
func SetSearchProcs(n int) { procs.Allow(n) }
