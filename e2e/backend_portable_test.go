//go:build linux && fsmcp_portable

package e2e

// buildTags are the tags the binaries under test are built with: the
// tests' own, so that they test the confinement backend they were built
// for (here the portable one, macOS's).
const buildTags = "fsmcp_portable"
