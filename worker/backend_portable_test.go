//go:build !linux || fsmcp_portable

package worker

// canWatch: the portable backend watches nothing, so no walk keeps an
// inventory and no next page is scanned ahead (TestNoInventoryWithoutWatches).
const canWatch = false
