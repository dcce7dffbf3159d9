//go:build !fsmcp_portable

package confine

// walkModes are the ways the Linux backend resolves a path that modes
// tries: openat2, then the per-component walk.
var walkModes = []bool{false, true}

// setForceWalk forces (or stops forcing) the per-component walk; called
// before the Root is shared.
func (r *Root) setForceWalk(force bool) { r.noOpenat2 = force }
