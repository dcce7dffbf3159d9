//go:build !fsmcp_portable

package confine

// walkModes are the ways the Linux backend resolves a path that modes
// tries: openat2, then the per-component walk.
var walkModes = []bool{false, true}
