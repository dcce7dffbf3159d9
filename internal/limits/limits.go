// Package limits declares a root's budgets and walk ceilings once: each
// limit's manifest key, worker option, accepted range, default and
// meaning. The worker's options and usage text, the manifest's keys and
// checks, and (by tests) the JSON Schema and the docs come from Table, so
// a value the manifest accepts is one the worker starts with.
package limits

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Limits are a root's budgets and walk ceilings. Zero MaxFileBytes means no
// size cap, zero MaxDepth that no directory below the root is walked; every
// other field must be positive. All-zero Limits mean Default. Each field's
// meaning and range are its entry in Table.
type Limits struct {
	MaxFiles           int64
	MaxDirectories     int64
	MaxDepth           int64
	MaxEntries         int64
	MaxScanBytes       int64
	MaxFileBytes       int64
	MaxReadBytes       int64
	MaxResultBytes     int64
	MaxWriteBytes      int64
	MaxCursorHashBytes int64
}

// MaxInteger is the largest value a limit takes: 2^53-1, the largest
// integer ptc-fs-mcp (JavaScript) represents exactly, whose command line
// the worker's follows.
const MaxInteger = 1<<53 - 1

// A Limit is one entry of Table.
type Limit struct {
	// Key is the manifest key, snake_case; the worker option is its
	// kebab-case (Flag).
	Key string
	// Doc says what the limit bounds, in a phrase for usage text and
	// schema descriptions.
	Doc string
	// Default is the value a root gets unless told otherwise; with NoCap,
	// zero and no bound.
	Default int64
	// Min and Max are the range a manifest or command line may set; Max is
	// MaxInteger where nothing else bounds it.
	Min, Max int64
	// NoCap marks a limit whose default is no bound at all: zero in Limits,
	// which no option spells.
	NoCap bool

	field func(*Limits) *int64
}

// Table is every limit, in the order the worker's usage lists them.
var Table = []Limit{
	{Key: "max_files", Doc: "files one traversal may select", Default: 50000, Min: 1, Max: MaxInteger,
		field: func(l *Limits) *int64 { return &l.MaxFiles }},
	{Key: "max_directories", Doc: "directories one traversal may enter", Default: 50000, Min: 1, Max: MaxInteger,
		field: func(l *Limits) *int64 { return &l.MaxDirectories }},
	{Key: "max_depth", Doc: "deepest directory nesting walked; 0 serves the root's own files only", Default: 64, Min: 0, Max: MaxInteger,
		field: func(l *Limits) *int64 { return &l.MaxDepth }},
	{Key: "max_entries", Doc: "directory entries one traversal may read", Default: 1000000, Min: 1, Max: MaxInteger,
		field: func(l *Limits) *int64 { return &l.MaxEntries }},
	{Key: "max_scan_bytes", Doc: "source bytes scanned per search_text page and per start_line seek", Default: 4194304, Min: 16384, Max: MaxInteger,
		field: func(l *Limits) *int64 { return &l.MaxScanBytes }},
	{Key: "max_file_bytes", Doc: "files larger than this are not served", NoCap: true, Min: 1, Max: MaxInteger,
		field: func(l *Limits) *int64 { return &l.MaxFileBytes }},
	{Key: "max_read_bytes", Doc: "source bytes per read_text_file page", Default: 16384, Min: 4, Max: 1048576,
		field: func(l *Limits) *int64 { return &l.MaxReadBytes }},
	{Key: "max_result_bytes", Doc: "ceiling on the whole decoded tool result", Default: 48000, Min: 48000, Max: 1048576,
		field: func(l *Limits) *int64 { return &l.MaxResultBytes }},
	{Key: "max_write_bytes", Doc: "largest write_text_file payload", Default: 65536, Min: 1, Max: MaxInteger,
		field: func(l *Limits) *int64 { return &l.MaxWriteBytes }},
	{Key: "max_cursor_hash_bytes", Doc: "uncached bytes hashed per deterministic call", Default: 16777216, Min: 1, Max: MaxInteger,
		field: func(l *Limits) *int64 { return &l.MaxCursorHashBytes }},
}

// Default are the limits a root gets unless told otherwise.
var Default = func() Limits {
	var l Limits
	for _, e := range Table {
		e.Set(&l, e.Default)
	}
	return l
}()

// Flag is the worker option that sets the limit: max_read_bytes ->
// --max-read-bytes.
func (e Limit) Flag() string { return "--" + strings.ReplaceAll(e.Key, "_", "-") }

// Get is the limit's value in l.
func (e Limit) Get(l Limits) int64 { return *e.field(&l) }

// Set sets the limit's value in l.
func (e Limit) Set(l *Limits, v int64) { *e.field(l) = v }

// Range says what the limit accepts, as the docs and messages print it:
// "1 or more", "0 or more", "16384 or more", "4 to 1048576".
func (e Limit) Range() string {
	if e.Max == MaxInteger {
		return strconv.FormatInt(e.Min, 10) + " or more"
	}
	return fmt.Sprintf("%d to %d", e.Min, e.Max)
}

// DefaultText is the default as the docs print it: the number, or "no cap".
func (e Limit) DefaultText() string {
	if e.NoCap {
		return "no cap"
	}
	return strconv.FormatInt(e.Default, 10)
}

// Lookup is the limit with manifest key key.
func Lookup(key string) (Limit, bool) {
	for _, e := range Table {
		if e.Key == key {
			return e, true
		}
	}
	return Limit{}, false
}

// Keys are the manifest keys of Table, in its order.
func Keys() []string {
	keys := make([]string, len(Table))
	for i, e := range Table {
		keys[i] = e.Key
	}
	return keys
}

// Check reports whether v is in the range a manifest or command line may
// set, with the worker's startup text ("limits are not valid", then which
// option and why: docs/reference.md, Worker startup).
func (e Limit) Check(v int64) error {
	switch {
	case v >= e.Min && v <= e.Max:
		return nil
	case v < e.Min && e.Max == MaxInteger:
		return fmt.Errorf("limits are not valid: %s must be at least %d, got %d", e.Flag(), e.Min, v)
	case e.Max == MaxInteger:
		return fmt.Errorf("limits are not valid: %s must be at most %d, got %d", e.Flag(), e.Max, v)
	}
	return fmt.Errorf("limits are not valid: %s must be between %d and %d, got %d", e.Flag(), e.Min, e.Max, v)
}

// Validate checks every limit of l, in Table's order. A NoCap limit may
// also be zero, its default.
func (l Limits) Validate() error {
	for _, e := range Table {
		v := e.Get(l)
		if v == 0 && e.NoCap {
			continue
		}
		if err := e.Check(v); err != nil {
			return err
		}
	}
	return nil
}

// A root's call deadline under the supervisor (its manifest's
// call_timeout): past it a call is cancelled in the worker and answered
// with a tool error.
const (
	DefaultCallTimeout = 30 * time.Second
	MinCallTimeout     = 100 * time.Millisecond
	MaxCallTimeout     = 24 * time.Hour
)

// CallTimeoutRange is call_timeout's range as messages and docs print it:
// "100ms to 24h".
func CallTimeoutRange() string {
	return shortDuration(MinCallTimeout) + " to " + shortDuration(MaxCallTimeout)
}

// shortDuration prints d without the zero units time.Duration.String
// keeps: 24h rather than 24h0m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
