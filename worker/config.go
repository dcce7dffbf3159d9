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
	"regexp"
	"strings"

	"github.com/fsmcp/fsmcp/worker/confine"
	"github.com/fsmcp/fsmcp/worker/cursor"
	"github.com/fsmcp/fsmcp/worker/glob"
	"github.com/fsmcp/fsmcp/worker/toolset"
	"github.com/fsmcp/fsmcp/worker/watch"
)

// Limits are a root's budgets and walk ceilings. Zero MaxFileBytes means no
// size cap, zero MaxDepth that no directory below the root is walked; every
// other field must be positive. All-zero Limits mean DefaultLimits.
type Limits struct {
	MaxFiles           int64 // files one traversal may select
	MaxDirectories     int64 // directories one traversal may enter
	MaxDepth           int64 // deepest directory nesting walked; 0: the root may hold no directory
	MaxEntries         int64 // directory entries one traversal may read
	MaxScanBytes       int64 // source bytes scanned per search_text page (and per start_line seek)
	MaxFileBytes       int64 // files larger than this are not served; 0 = no cap
	MaxReadBytes       int64 // source bytes considered per read page
	MaxResultBytes     int64 // ceiling on the complete decoded tool result
	MaxWriteBytes      int64 // largest write_text_file payload
	MaxCursorHashBytes int64 // uncached bytes hashed per deterministic call
}

// DefaultLimits are the limits a root gets unless told otherwise.
var DefaultLimits = Limits{
	MaxFiles:           50000,
	MaxDirectories:     50000,
	MaxDepth:           64,
	MaxEntries:         1000000,
	MaxScanBytes:       4194304,
	MaxReadBytes:       16384,
	MaxResultBytes:     48000,
	MaxWriteBytes:      65536,
	MaxCursorHashBytes: 16777216,
}

// Bounds of the limits that have them.
const (
	MinScanBytes   = 16384
	MinReadBytes   = 4
	MaxReadBytes   = 1048576
	MinResultBytes = 48000
	MaxResultBytes = 1048576
)

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

var namePattern = regexp.MustCompile(`^[a-z][a-z0-9-]{0,31}$`)

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
	inv      *inventories
	next     nextPages
}

// Warnings are the operator notes the configuration earned (a root that
// can take no write, a literal include a built-in exclude defeats).
func (r *Root) Warnings() []string { return r.warnings }

// Name is the root's name.
func (r *Root) Name() string { return r.cfg.Name }

// Close releases the root's descriptor.
func (r *Root) Close() error {
	r.next.close()
	r.inv.close()
	return r.dir.Close()
}

// Deterministic reports whether cursors use a stable key and content digests.
func (r *Root) Deterministic() bool { return r.cfg.CursorKey != nil }

// limitBounds are the accepted ranges of the limits, by option; a zero max
// means no upper bound.
var limitBounds = map[string]struct{ min, max int64 }{
	"--max-files":             {1, 0},
	"--max-directories":       {1, 0},
	"--max-depth":             {0, 0},
	"--max-entries":           {1, 0},
	"--max-scan-bytes":        {MinScanBytes, 0},
	"--max-file-bytes":        {0, 0},
	"--max-read-bytes":        {MinReadBytes, MaxReadBytes},
	"--max-result-bytes":      {MinResultBytes, MaxResultBytes},
	"--max-write-bytes":       {1, 0},
	"--max-cursor-hash-bytes": {1, 0},
}

// CheckLimit reports whether v is in the range of the limit set by flag
// (such as --max-depth), with the startup text the worker would print. A
// manifest checks its limits with it, so a root it accepts starts.
func CheckLimit(flag string, v int64) error {
	b, ok := limitBounds[flag]
	switch {
	case !ok:
		return configErrorf("unknown option %s", flag)
	case v < b.min || (b.max > 0 && v > b.max):
		if b.max > 0 {
			return configErrorf("limits are not valid: %s must be between %d and %d, got %d", flag, b.min, b.max, v)
		}
		return configErrorf("limits are not valid: %s must be at least %d, got %d", flag, b.min, v)
	}
	return nil
}

func (l Limits) validate() error {
	checks := []struct {
		flag string
		v    int64
	}{
		{"--max-files", l.MaxFiles},
		{"--max-directories", l.MaxDirectories},
		{"--max-depth", l.MaxDepth},
		{"--max-entries", l.MaxEntries},
		{"--max-scan-bytes", l.MaxScanBytes},
		{"--max-file-bytes", l.MaxFileBytes},
		{"--max-read-bytes", l.MaxReadBytes},
		{"--max-result-bytes", l.MaxResultBytes},
		{"--max-write-bytes", l.MaxWriteBytes},
		{"--max-cursor-hash-bytes", l.MaxCursorHashBytes},
	}
	for _, c := range checks {
		if err := CheckLimit(c.flag, c.v); err != nil {
			return err
		}
	}
	return nil
}

// Check validates what cfg says without touching the filesystem: the root
// and include are given, the limits are in range, the name and tool mask
// are usable. Open runs it first; a command line may run it early to
// report these before anything else. Every error is a *ConfigError with the
// wire contract's text where it has one.
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
	if err := lim.validate(); err != nil {
		return err
	}
	if cfg.Name != "" && !namePattern.MatchString(cfg.Name) {
		return configErrorf("--name %q must match [a-z][a-z0-9-]{0,31}", cfg.Name)
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
	r := &Root{cfg: cfg, lim: cfg.Limits, dir: dir, sel: sel, codec: codec, mask: mask, inv: newInventories(watches)}
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
