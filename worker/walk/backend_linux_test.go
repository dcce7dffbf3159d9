//go:build linux && !fsmcp_portable

package walk

// canWatch: this backend watches directories (inotify), so walks watch
// what they read and scopes' inventories are kept.
const canWatch = true
