package worker

import (
	"runtime/debug"
	"testing"
)

func TestBuildVersion(t *testing.T) {
	vcs := func(rev, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}
	}
	tests := []struct {
		name     string
		version  string
		settings []debug.BuildSetting
		want     string
	}{
		{"go install @version", "v0.3.1", nil, "v0.3.1"},
		{"stamped pseudo-version wins", "v0.0.0-20260101000000-0123456789ab+dirty", vcs("0123456789abcdef", "true"), "v0.0.0-20260101000000-0123456789ab+dirty"},
		{"checkout, clean", "(devel)", vcs("0123456789abcdef0123", "false"), "devel-0123456789ab"},
		{"checkout, modified", "(devel)", vcs("0123456789abcdef0123", "true"), "devel-0123456789ab+dirty"},
		{"short revision", "", vcs("abc", "false"), "devel-abc"},
		{"no vcs info", "(devel)", nil, "dev"},
	}
	for _, tc := range tests {
		bi := &debug.BuildInfo{Main: debug.Module{Path: "github.com/fsmcp/fsmcp", Version: tc.version}, Settings: tc.settings}
		if got := buildVersion(bi); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
