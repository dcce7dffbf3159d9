// Package limits holds a root's budgets and walk ceilings: their values,
// defaults and accepted ranges. The worker enforces them; the supervisor's
// manifest checks them with the same ranges, so a root it accepts starts.
package limits

import "fmt"

// Limits are a root's budgets and walk ceilings. Zero MaxFileBytes means no
// size cap, zero MaxDepth that no directory below the root is walked; every
// other field must be positive. All-zero Limits mean Default.
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

// Default are the limits a root gets unless told otherwise.
var Default = Limits{
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

// bounds are the accepted ranges of the limits, by option; a zero max
// means no upper bound.
var bounds = map[string]struct{ min, max int64 }{
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

// Check reports whether v is in the range of the limit set by flag (such
// as --max-depth), with the startup text the worker prints.
func Check(flag string, v int64) error {
	b, ok := bounds[flag]
	switch {
	case !ok:
		return fmt.Errorf("unknown option %s", flag)
	case v < b.min || (b.max > 0 && v > b.max):
		if b.max > 0 {
			return fmt.Errorf("limits are not valid: %s must be between %d and %d, got %d", flag, b.min, b.max, v)
		}
		return fmt.Errorf("limits are not valid: %s must be at least %d, got %d", flag, b.min, v)
	}
	return nil
}

// Validate checks every limit of l, in the order of the worker's options.
func (l Limits) Validate() error {
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
		if err := Check(c.flag, c.v); err != nil {
			return err
		}
	}
	return nil
}
