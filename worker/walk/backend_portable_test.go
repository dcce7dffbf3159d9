//go:build !linux || fsmcp_portable

package walk

// canWatch: the portable backend watches nothing, so no walk watches and
// no inventory is kept (TestNoInventoryWithoutWatches).
const canWatch = false
