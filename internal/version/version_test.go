package version

import (
	"os"
	"regexp"
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
		{"release: go install @v" + Release, "v" + Release, nil, Release},
		{"checkout, clean", "(devel)", vcs("0123456789abcdef0123", "false"), Release + "+0123456789ab"},
		{"checkout, modified", "(devel)", vcs("0123456789abcdef0123", "true"), Release + "+0123456789ab.dirty"},
		{"stamped pseudo-version with vcs info", "v0.0.0-20260101000000-0123456789ab+dirty", vcs("0123456789abcdef", "true"), Release + "+0123456789ab.dirty"},
		{"go install @commit: pseudo-version only", "v0.2.1-0.20260101000000-fedcba987654", nil, Release + "+fedcba987654"},
		{"another tag", "v9.9.9", nil, Release + "+v9.9.9"},
		{"short revision", "", vcs("abc", "false"), Release + "+abc"},
		{"no vcs info", "(devel)", nil, Release + "+devel"},
	}
	for _, tc := range tests {
		bi := &debug.BuildInfo{Main: debug.Module{Path: "github.com/fsmcp/fsmcp", Version: tc.version}, Settings: tc.settings}
		if got := buildVersion(bi); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestReleaseMatchesChangelog: the newest version section of CHANGELOG.md
// names Release, so the two are bumped together.
func TestReleaseMatchesChangelog(t *testing.T) {
	b, err := os.ReadFile("../../CHANGELOG.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^## \[(\d+\.\d+\.\d+)\]`).FindSubmatch(b)
	if m == nil {
		t.Fatal("CHANGELOG.md has no ## [X.Y.Z] section")
	}
	if string(m[1]) != Release {
		t.Errorf("CHANGELOG.md's newest section is %s, version.Release is %s", m[1], Release)
	}
	if !regexp.MustCompile(`^\d+\.\d+\.\d+$`).MatchString(Release) {
		t.Errorf("Release %q is not a bare X.Y.Z version", Release)
	}
}
