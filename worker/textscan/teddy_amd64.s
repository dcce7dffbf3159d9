#include "textflag.h"

// func teddyAVX2(masks *[6][32]byte, p []byte, out *[32]byte) (k int, mask uint32)
//
// Y0-Y5: the low- and high-nibble tables of term bytes 0, 1 and 2.
// Y14: 0x0f in every byte. Per step at p+DI: Y6, Y7, Y8 hold the text at
// DI, DI+1 and DI+2; Y10 the AND of their lookups, a byte of bucket bits
// per position.
TEXT ·teddyAVX2(SB), NOSPLIT, $0-52
	MOVQ masks+0(FP), AX
	MOVQ p_base+8(FP), SI
	MOVQ p_len+16(FP), CX
	MOVQ out+32(FP), DX
	XORQ DI, DI
	SUBQ $34, CX // the last step starts at len(p)-34
	JL   short
	VMOVDQU 0(AX), Y0
	VMOVDQU 32(AX), Y1
	VMOVDQU 64(AX), Y2
	VMOVDQU 96(AX), Y3
	VMOVDQU 128(AX), Y4
	VMOVDQU 160(AX), Y5
	MOVL $0x0f0f0f0f, BX
	MOVQ BX, X14
	VPBROADCASTD X14, Y14

loop:
	CMPQ DI, CX
	JG   none
	VMOVDQU (SI)(DI*1), Y6
	VMOVDQU 1(SI)(DI*1), Y7
	VMOVDQU 2(SI)(DI*1), Y8

	VPSRLW  $4, Y6, Y9
	VPAND   Y14, Y6, Y6
	VPAND   Y14, Y9, Y9
	VPSHUFB Y6, Y0, Y6
	VPSHUFB Y9, Y1, Y9
	VPAND   Y9, Y6, Y10

	VPSRLW  $4, Y7, Y9
	VPAND   Y14, Y7, Y7
	VPAND   Y14, Y9, Y9
	VPSHUFB Y7, Y2, Y7
	VPSHUFB Y9, Y3, Y9
	VPAND   Y9, Y7, Y7
	VPAND   Y7, Y10, Y10

	VPSRLW  $4, Y8, Y9
	VPAND   Y14, Y8, Y8
	VPAND   Y14, Y9, Y9
	VPSHUFB Y8, Y4, Y8
	VPSHUFB Y9, Y5, Y9
	VPAND   Y9, Y8, Y8
	VPAND   Y8, Y10, Y10

	VPTEST Y10, Y10
	JNZ    found
	ADDQ   $32, DI
	JMP    loop

found:
	VPXOR     Y11, Y11, Y11
	VPCMPEQB  Y11, Y10, Y11
	VPMOVMSKB Y11, BX
	NOTL      BX
	VMOVDQU   Y10, (DX)
	VZEROUPPER
	MOVQ DI, k+40(FP)
	MOVL BX, mask+48(FP)
	RET

none:
	VZEROUPPER

short:
	MOVQ DI, k+40(FP)
	MOVL $0, mask+48(FP)
	RET
