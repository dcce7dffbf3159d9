//go:build !linux || fsmcp_portable

package confine

import "testing"

// walkModes are the ways the portable backend resolves a path that modes
// tries: the per-component walk, its only one.
var walkModes = []bool{true}

// setForceWalk does nothing: the portable backend always walks.
func (r *Root) setForceWalk(bool) {}

// checkBatched checks nothing: the portable backend opens one file at a
// time.
func checkBatched(*testing.T, *Root) {}
