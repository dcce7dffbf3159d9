package supervisor

import (
	"fmt"
	"io"

	"github.com/hashicorp/go-hclog"
)

// DefaultLogLevel keeps a healthy supervisor silent: only worker exits,
// restarts that fail and roots that give up are logged.
const DefaultLogLevel = hclog.Warn

// LogLevels are the accepted --log-level values, most verbose first.
const LogLevels = "trace, debug, info, warn, error or off"

// ParseLogLevel reads a --log-level value.
func ParseLogLevel(s string) (hclog.Level, error) {
	l := hclog.LevelFromString(s)
	if l == hclog.NoLevel {
		return l, fmt.Errorf("--log-level %q is not a level; use %s", s, LogLevels)
	}
	return l, nil
}

// NewLogger returns the supervisor's logger: hclog text lines on w, one
// line per event, never interleaved with the root-prefixed lines the
// workers write to the same stream. Roots log through Named(root) loggers,
// so their lines read "[WARN]  reader: worker exited; ...".
func NewLogger(w io.Writer, level hclog.Level) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{
		Name:   "fsmcp-supervisor",
		Level:  level,
		Output: lineWriter{w},
	})
}

// rootLogger is the logger of one root: its lines are named after the root
// alone, like the worker output prefixed with it.
func rootLogger(l hclog.Logger, root string) hclog.Logger { return l.ResetNamed(root) }

// lineWriter writes each log line under the lock PrefixWriter holds for
// worker lines. hclog hands it one whole line per Write.
type lineWriter struct{ w io.Writer }

func (l lineWriter) Write(b []byte) (int, error) {
	outMu.Lock()
	defer outMu.Unlock()
	return l.w.Write(b)
}
