//go:build !linux || fsmcp_portable

package confine

import (
	"os"
	"time"

	"github.com/fsmcp/fsmcp/worker/watch"
)

// A Guard tells whether an open file was written while it was being read.
// The portable backend has no notification that reports a write at once
// and in order (inotify; kqueue reports a write but not one still in
// progress), so it gives no Guards: every Guard is nil and reports
// nothing, and a reader's identity checks (size, inode, times, taken
// before and after the read) are what tells a write that overlapped it.
type Guard struct{}

// KeepIdleWatches does nothing: the portable backend keeps no watches.
func (r *Root) KeepIdleWatches(*watch.Budget, time.Duration) {}

// GuardFile returns nil: see Guard.
func (r *Root) GuardFile(*os.File) *Guard { return nil }

// GuardReader returns nil: see Guard.
func (r *Root) GuardReader(*Reader) *Guard { return nil }

// Changed reports false: see Guard.
func (gd *Guard) Changed() bool { return false }

// Settle does nothing: see Guard.
func (gd *Guard) Settle() {}

// Check reports false: see Guard.
func (gd *Guard) Check() bool { return false }

// Shared reports false: see Guard.
func (gd *Guard) Shared() bool { return false }

// Close does nothing: see Guard.
func (gd *Guard) Close() {}

// A ScanGuard guards the reads of one search page; in the portable
// backend its Guards are nil (see Guard).
type ScanGuard struct{}

// NewScanGuard returns a ScanGuard; Close it when the page ends.
func (r *Root) NewScanGuard() *ScanGuard { return &ScanGuard{} }

// Guard returns nil: see Guard.
func (s *ScanGuard) Guard(*Reader, string) *Guard { return nil }

// Close does nothing.
func (s *ScanGuard) Close() {}
