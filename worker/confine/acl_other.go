//go:build !darwin

package confine

// keepACL has nothing to do outside macOS: a Linux ACL is an extended
// attribute, carried with the others; FreeBSD's ACLs are not carried
// (docs/design.md, "Platforms").
func keepACL(from, fd int) error { return nil }
