//go:build !linux || fsmcp_portable

package watch

import "errors"

// ErrUnavailable is returned when the process cannot watch: without
// inotify (every platform but Linux, and Linux built with the tag
// fsmcp_portable), always. The caller does without.
var ErrUnavailable = errors.New("change notification is not available")

// Set is a set of watches. Without inotify it never holds one, so nothing
// derived from what it would watch is ever kept.
type Set struct{ budget *Budget }

// NewIn returns an empty Set.
func NewIn(b *Budget) *Set { return &Set{budget: b} }

// Len is the number of watches the Set holds: none.
func (s *Set) Len() int { return 0 }

// Changed reports no change: the Set watches nothing.
func (s *Set) Changed() (bool, error) { return false, nil }

// Close does nothing.
func (s *Set) Close() {}

// Dir refuses: no directory can be watched here.
func (s *Set) Dir(int) error { return ErrUnavailable }

// Along refuses: no directory can be watched here.
func (s *Set) Along(int, string) error { return ErrUnavailable }

// File refuses: no file can be watched here.
func (s *Set) File(int, string) error { return ErrUnavailable }

// Tree refuses: no tree can be watched here.
func (s *Set) Tree(int) error { return ErrUnavailable }
