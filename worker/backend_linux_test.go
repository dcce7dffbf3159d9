//go:build linux && !fsmcp_portable

package worker

// canWatch: this backend watches directories (inotify), so walks keep
// inventories and a search's next page is scanned ahead.
const canWatch = true
