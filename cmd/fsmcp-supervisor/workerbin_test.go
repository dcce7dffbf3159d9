package main

import "testing"

// TestGoRunPath: the folders go run and go tool run binaries from, with
// the default build cache and one GOCACHE names, are told from installed
// binaries.
func TestGoRunPath(t *testing.T) {
	const hash = "733cc482aafea4703bda876d08bf62661f19dfa55c45b67fe7ac32714813ed94"
	for _, tc := range []struct {
		path string
		want bool
	}{
		{"/tmp/go-build3606712181/b001/exe/fsmcp-supervisor", true},
		{"/var/folders/xy/T/go-build12/b001/exe/fsmcp-supervisor", true},
		{"/root/.cache/go-build/73/" + hash + "-d/fsmcp-supervisor", true},
		{"/home/u/Library/Caches/go-build/73/" + hash + "-d/fsmcp-supervisor", true},
		{"/srv/ci/gocache/73/" + hash + "-d/fsmcp-supervisor", true},
		{"/usr/local/bin/fsmcp-supervisor", false},
		{"/home/u/go/bin/fsmcp-supervisor", false},
		{"/tmp/go-build3606712181/b001/fsmcp-supervisor", false},
		// The folder must be the hash's first two digits.
		{"/srv/ci/gocache/74/" + hash + "-d/fsmcp-supervisor", false},
		{"/srv/ci/gocache/73/" + hash[:63] + "-d/fsmcp-supervisor", false},
		{"/srv/ci/gocache/73/" + hash + "/fsmcp-supervisor", false},
	} {
		if got := goRunPath(tc.path); got != tc.want {
			t.Errorf("goRunPath(%q) = %v, want %v", tc.path, got, tc.want)
		}
	}
}
