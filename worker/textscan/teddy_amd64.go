package textscan

import "golang.org/x/sys/cpu"

var (
	// haveTeddy reports whether the prefilter can run: it needs AVX2.
	haveTeddy = cpu.X86.HasAVX2
	// teddyWide selects the AVX-512 VBMI steps where the CPU has them.
	teddyWide = cpu.X86.HasAVX512 && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VBMI
)

// teddyAVX2 looks at p 32 positions a step, from p[0] while 34 bytes are
// left (a step's positions and the teddyLen-1 bytes after them), for the
// first step where some position is a candidate of some bucket (see
// teddy), by the nibble tables masks. It returns that step's offset in p,
// the mask of its candidate positions, and their buckets in out[:32]; or,
// when no step has one, the offset where it stopped and a zero mask.
//
//go:noescape
func teddyAVX2(masks *[2 * teddyLen][32]byte, p []byte, out *[64]byte) (k int, mask uint64)

// teddyVBMI is teddyAVX2 with 64 positions a step (while 66 bytes are
// left) and the 7-bit tables low7.
//
//go:noescape
func teddyVBMI(low7 *[teddyLen][128]byte, p []byte, out *[64]byte) (k int, mask uint64)

// teddyBlocks runs the steps the CPU has; step is how many positions the
// mask covers.
func teddyBlocks(td *teddy, p []byte, out *[64]byte) (k, step int, mask uint64) {
	if teddyWide {
		k, mask = teddyVBMI(&td.low7, p, out)
		return k, 64, mask
	}
	k, mask = teddyAVX2(&td.masks, p, out)
	return k, 32, mask
}
