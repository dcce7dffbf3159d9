// Package version is the version both binaries report: the release this
// source tree is, with the build's VCS revision where it is not that release.
package version

import (
	"runtime/debug"
	"strings"
)

// Release is the version of this source tree, the one CHANGELOG.md's newest
// section names. Bump both together when cutting a release; the tag is
// "v" + Release.
const Release = "0.2.0"

// String is the version both binaries report (--version, serverInfo): the
// bare Release for a release build, else Release with the build's VCS
// revision appended as semver build metadata ("0.2.0+0123456789ab", with
// ".dirty" for uncommitted changes).
//
// A release build is one whose main module version is exactly the tag
// "v"+Release: `go install github.com/fsmcp/fsmcp/cmd/...@v0.2.0`. Any other
// build (a checkout, a pseudo-version, a tag that does not match Release)
// is not, and says so.
func String() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return Release + "+unknown"
	}
	return buildVersion(bi)
}

func buildVersion(bi *debug.BuildInfo) string {
	mod := bi.Main.Version
	if mod == "v"+Release {
		return Release
	}
	var rev string
	dirty := strings.HasSuffix(mod, "+dirty")
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = dirty || s.Value == "true"
		}
	}
	if rev == "" {
		rev = pseudoRevision(mod)
	}
	meta := "devel"
	switch {
	case rev != "":
		meta = rev[:min(len(rev), 12)]
	case mod != "" && mod != "(devel)":
		meta = metadata(mod) // another tag: say which
	}
	if dirty {
		meta += ".dirty"
	}
	return Release + "+" + meta
}

// pseudoRevision is the revision a Go pseudo-version ends with
// (v0.0.0-20260101000000-0123456789ab), or "".
func pseudoRevision(v string) string {
	v, _, _ = strings.Cut(v, "+")
	i := strings.LastIndexByte(v, '-')
	if i < 0 || len(v)-i-1 != 12 || strings.Trim(v[i+1:], "0123456789abcdef") != "" {
		return ""
	}
	return v[i+1:]
}

// metadata turns s into dot-separated semver build identifiers.
func metadata(s string) string {
	s, _, _ = strings.Cut(s, "+")
	return strings.Map(func(r rune) rune {
		switch {
		case r >= '0' && r <= '9', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r == '-', r == '.':
			return r
		}
		return '-'
	}, s)
}
