package supervisor

import (
	"bytes"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
)

func TestParseLogLevel(t *testing.T) {
	for _, s := range strings.Split(strings.ReplaceAll(LogLevels, " or ", ", "), ", ") {
		if l, err := ParseLogLevel(s); err != nil || l.String() != s {
			t.Errorf("%q: %v %v", s, l, err)
		}
	}
	if _, err := ParseLogLevel("loud"); err == nil || !strings.Contains(err.Error(), LogLevels) {
		t.Errorf("loud: %v", err)
	}
}

func TestRootLoggerLines(t *testing.T) {
	var b bytes.Buffer
	l := rootLogger(NewLogger(&b, DefaultLogLevel), "reader")
	l.Info("worker started", "pid", 1)
	if b.Len() != 0 {
		t.Errorf("info at the default level: %q", b.String())
	}
	l.Warn("worker exited; restarting in 100ms", "pid", 7, "status", "signal: killed")
	got := b.String()
	if strings.Count(got, "\n") != 1 || !strings.HasSuffix(got, ` [WARN]  reader: worker exited; restarting in 100ms: pid=7 status="signal: killed"`+"\n") {
		t.Errorf("line %q", got)
	}
	if NewLogger(&b, hclog.Off).IsError() {
		t.Error("off logs errors")
	}
}
