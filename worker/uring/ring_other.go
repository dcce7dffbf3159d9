//go:build !linux || fsmcp_portable

package uring

// Ring is io_uring's ring; there is none outside Linux.
type Ring struct{}

// New fails: io_uring is Linux's.
func New(entries uint32) (*Ring, error) { return nil, ErrUnavailable }

// Close does nothing.
func (r *Ring) Close() error { return nil }

// Size is 0.
func (r *Ring) Size() int { return 0 }

// Run fails.
func (r *Ring) Run(ops []Op) error { return ErrUnavailable }
