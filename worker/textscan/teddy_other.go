//go:build !amd64

package textscan

// haveTeddy is false: the prefilter is written for amd64 alone, and other
// architectures keep the anchor search.
var haveTeddy, teddyWide = false, false

// teddyBlocks looks at no step; findTeddy, never used here but in tests,
// does every position in Go.
func teddyBlocks(td *teddy, p []byte, out *[64]byte) (k, step int, mask uint64) { return 0, 32, 0 }
