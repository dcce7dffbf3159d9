package textscan

import "golang.org/x/sys/cpu"

// haveTeddy reports whether the prefilter can run: it needs AVX2.
var haveTeddy = cpu.X86.HasAVX2

// teddyAVX2 looks at p 32 positions a step, from p[0] while 34 bytes are
// left (a step's 32 positions and the teddyLen-1 bytes after them), for
// the first step where some position is a candidate of some bucket (see
// teddy). It returns that step's offset in p, the mask of its candidate
// positions, and their buckets in out; or, when no step has one, the
// offset where it stopped and a zero mask.
//
//go:noescape
func teddyAVX2(masks *[2 * teddyLen][32]byte, p []byte, out *[32]byte) (k int, mask uint32)

func teddyBlocks(td *teddy, p []byte, out *[32]byte) (int, uint32) {
	return teddyAVX2(&td.masks, p, out)
}
