#include "textflag.h"

// STEP sets dst to the bucket bits of the 32 positions at off(SI)(DI*1):
// the AND, over term bytes 0, 1 and 2, of the low- and high-nibble table
// lookups of the text byte at position+j (tables in Y0-Y5, 0x0f bytes in
// Y14). It uses Y6-Y9 and dst.
#define STEP(off, dst) \
	VMOVDQU off(SI)(DI*1), Y6    \
	VMOVDQU off+1(SI)(DI*1), Y7  \
	VMOVDQU off+2(SI)(DI*1), Y8  \
	VPSRLW  $4, Y6, Y9           \
	VPAND   Y14, Y6, Y6          \
	VPAND   Y14, Y9, Y9          \
	VPSHUFB Y6, Y0, Y6           \
	VPSHUFB Y9, Y1, Y9           \
	VPAND   Y9, Y6, dst          \
	VPSRLW  $4, Y7, Y9           \
	VPAND   Y14, Y7, Y7          \
	VPAND   Y14, Y9, Y9          \
	VPSHUFB Y7, Y2, Y7           \
	VPSHUFB Y9, Y3, Y9           \
	VPAND   Y9, Y7, Y7           \
	VPAND   Y7, dst, dst         \
	VPSRLW  $4, Y8, Y9           \
	VPAND   Y14, Y8, Y8          \
	VPAND   Y14, Y9, Y9          \
	VPSHUFB Y8, Y4, Y8           \
	VPSHUFB Y9, Y5, Y9           \
	VPAND   Y9, Y8, Y8           \
	VPAND   Y8, dst, dst

// func teddyAVX2(masks *[6][32]byte, p []byte, out *[64]byte) (k int, mask uint64)
//
// Two steps (64 positions) a round while they fit, then one; a step at DI
// reads p[DI:DI+34], so the last starts at len(p)-34 (CX).
TEXT ·teddyAVX2(SB), NOSPLIT, $0-56
	MOVQ masks+0(FP), AX
	MOVQ p_base+8(FP), SI
	MOVQ p_len+16(FP), CX
	MOVQ out+32(FP), DX
	XORQ DI, DI
	SUBQ $34, CX
	JL   short
	VMOVDQU 0(AX), Y0
	VMOVDQU 32(AX), Y1
	VMOVDQU 64(AX), Y2
	VMOVDQU 96(AX), Y3
	VMOVDQU 128(AX), Y4
	VMOVDQU 160(AX), Y5
	MOVQ $0x0f0f0f0f, BX
	MOVQ BX, X14
	VPBROADCASTD X14, Y14
	LEAQ -32(CX), R8 // the last round of two starts at len(p)-66

pair:
	CMPQ DI, R8
	JG   single
	STEP(0, Y10)
	STEP(32, Y12)
	VPOR   Y10, Y12, Y11
	VPTEST Y11, Y11
	JNZ    pairfound
	ADDQ   $64, DI
	JMP    pair

pairfound:
	VPTEST Y10, Y10
	JNZ    found
	ADDQ   $32, DI
	VMOVDQA Y12, Y10
	JMP    found

single:
	CMPQ DI, CX
	JG   none
	STEP(0, Y10)
	VPTEST Y10, Y10
	JNZ    found
	ADDQ   $32, DI
	JMP    single

found:
	VPXOR     Y11, Y11, Y11
	VPCMPEQB  Y11, Y10, Y11
	VPMOVMSKB Y11, BX
	NOTL      BX
	VMOVDQU   Y10, (DX)
	VZEROUPPER
	MOVQ DI, k+40(FP)
	MOVQ BX, mask+48(FP)
	RET

none:
	VZEROUPPER

short:
	MOVQ DI, k+40(FP)
	MOVQ $0, mask+48(FP)
	RET

// func teddyVBMI(low7 *[3][128]byte, p []byte, out *[64]byte) (k int, mask uint64)
//
// Z0:Z1, Z2:Z3, Z4:Z5: the 128-entry tables of window bytes 0, 1 and 2.
// A step at DI loads the text at DI, DI+1 and DI+2 and looks each byte up
// by its low 7 bits (VPERMI2B, in place); K1 marks the positions where the
// AND of the three is not zero. The last step starts at len(p)-66 (CX).
TEXT ·teddyVBMI(SB), NOSPLIT, $0-56
	MOVQ low7+0(FP), AX
	MOVQ p_base+8(FP), SI
	MOVQ p_len+16(FP), CX
	MOVQ out+32(FP), DX
	XORQ DI, DI
	SUBQ $66, CX
	JL   wshort
	VMOVDQU64 0(AX), Z0
	VMOVDQU64 64(AX), Z1
	VMOVDQU64 128(AX), Z2
	VMOVDQU64 192(AX), Z3
	VMOVDQU64 256(AX), Z4
	VMOVDQU64 320(AX), Z5

wloop:
	CMPQ DI, CX
	JG   wnone
	VMOVDQU64 (SI)(DI*1), Z6
	VMOVDQU64 1(SI)(DI*1), Z7
	VMOVDQU64 2(SI)(DI*1), Z8
	VPERMI2B  Z1, Z0, Z6
	VPERMI2B  Z3, Z2, Z7
	VPERMI2B  Z5, Z4, Z8
	VPANDQ    Z7, Z6, Z6
	VPTESTMB  Z8, Z6, K1
	KORTESTQ  K1, K1
	JNZ       wfound
	ADDQ      $64, DI
	JMP       wloop

wfound:
	VPANDQ    Z8, Z6, Z6
	VMOVDQU64 Z6, (DX)
	KMOVQ     K1, BX
	VZEROUPPER
	MOVQ DI, k+40(FP)
	MOVQ BX, mask+48(FP)
	RET

wnone:
	VZEROUPPER

wshort:
	MOVQ DI, k+40(FP)
	MOVQ $0, mask+48(FP)
	RET
