//go:build !amd64

package textscan

// haveTeddy is false: the prefilter is written for amd64 alone, and other
// architectures keep the anchor search.
var haveTeddy = false

// teddyBlocks looks at no step; findTeddy, never used here, would do
// every position in Go.
func teddyBlocks(td *teddy, p []byte, out *[32]byte) (int, uint32) { return 0, 0 }
