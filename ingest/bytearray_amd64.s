#include "textflag.h"

// func decodeBlocks(src *byte, i, end int, dst *byte, pack *[256]uint64) (written, next int)
//
// See bytearray_amd64.go; AVX instructions on 16-byte registers. (The
// same on 32-byte blocks with AVX2 made explain of the serving journal
// 14 % slower, not faster, on the build machine: most of its time went to
// the first 32-byte instructions of each call.) A block is 16 bytes. Registers: SI src, CX i, DX end, DI dst, R8 dst at entry, R9
// pack; X15 '0', X14 9, X13 ',', X12 zero, X11 10 (words), X10 100
// (words), X9 255 (words).
TEXT ·decodeBlocks(SB), NOSPLIT, $0-56
	MOVQ src+0(FP), SI
	MOVQ i+8(FP), CX
	MOVQ end+16(FP), DX
	MOVQ dst+24(FP), DI
	MOVQ pack+32(FP), R9
	MOVQ DI, R8

	MOVQ $0x3030303030303030, AX
	VMOVQ AX, X15
	VPUNPCKLQDQ X15, X15, X15
	MOVQ $0x0909090909090909, AX
	VMOVQ AX, X14
	VPUNPCKLQDQ X14, X14, X14
	MOVQ $0x2c2c2c2c2c2c2c2c, AX
	VMOVQ AX, X13
	VPUNPCKLQDQ X13, X13, X13
	VPXOR X12, X12, X12
	MOVQ $0x000a000a000a000a, AX
	VMOVQ AX, X11
	VPUNPCKLQDQ X11, X11, X11
	MOVQ $0x0064006400640064, AX
	VMOVQ AX, X10
	VPUNPCKLQDQ X10, X10, X10
	MOVQ $0x00ff00ff00ff00ff, AX
	VMOVQ AX, X9
	VPUNPCKLQDQ X9, X9, X9

loop:
	CMPQ CX, DX
	JGT  done

	// D0 = the block's bytes as digits (X1), isD0 (X2), commas (X3).
	VMOVDQU (SI)(CX*1), X0
	VPSUBB  X15, X0, X1
	VPMINUB X14, X1, X2
	VPCMPEQB X1, X2, X2
	VPCMPEQB X13, X0, X3
	// Only digits and commas.
	VPOR    X3, X2, X4
	VPMOVMSKB X4, AX
	CMPL    AX, $0xffff
	JNE     done

	// D1 = the byte before each, as a digit where it is one (X4), isD1 (X5).
	VMOVDQU -1(SI)(CX*1), X4
	VPSUBB  X15, X4, X4
	VPMINUB X14, X4, X5
	VPCMPEQB X4, X5, X5
	// A comma after anything but a digit: an empty element.
	VPANDN  X3, X5, X6
	VPTEST  X6, X6
	JNZ     done
	VPAND   X5, X4, X4

	// D2 = two bytes before, where both bytes before are digits (X6);
	// isD1 & isD2 (X7).
	VMOVDQU -2(SI)(CX*1), X6
	VPSUBB  X15, X6, X6
	VPMINUB X14, X6, X7
	VPCMPEQB X6, X7, X7
	VPAND   X5, X7, X7
	VPAND   X7, X6, X6

	// Four digits in a row end here: too long.
	VMOVDQU -3(SI)(CX*1), X3
	VPSUBB  X15, X3, X3
	VPMINUB X14, X3, X8
	VPCMPEQB X3, X8, X8
	VPAND   X7, X8, X8
	VPTEST  X2, X8
	JNZ     done

	// E: a digit followed by a comma ends an element (X8); the byte
	// after each is a digit (X7).
	VMOVDQU 1(SI)(CX*1), X3
	VPCMPEQB X13, X3, X8
	VPAND   X2, X8, X8
	VPSUBB  X15, X3, X3
	VPMINUB X14, X3, X7
	VPCMPEQB X3, X7, X7
	// A 0 that starts an element and is followed by a digit.
	VPCMPEQB X12, X1, X3
	VPANDN  X3, X5, X5
	VPTEST  X7, X5
	JNZ     done

	// Values D0 + 10*D1 + 100*D2 as words: low bytes of each lane in X2,
	// high in X1.
	VPUNPCKLBW X12, X1, X2
	VPUNPCKHBW X12, X1, X1
	VPUNPCKLBW X12, X4, X3
	VPUNPCKHBW X12, X4, X4
	VPMULLW X11, X3, X3
	VPMULLW X11, X4, X4
	VPADDW  X3, X2, X2
	VPADDW  X4, X1, X1
	VPUNPCKLBW X12, X6, X3
	VPUNPCKHBW X12, X6, X6
	VPMULLW X10, X3, X3
	VPMULLW X10, X6, X6
	VPADDW  X3, X2, X2
	VPADDW  X6, X1, X1
	// Above 255 where an element ends.
	VPCMPGTW X9, X2, X3
	VPCMPGTW X9, X1, X4
	VPACKSSWB X4, X3, X3
	VPTEST  X8, X3
	JNZ     done

	// The values as bytes, in order; those where an element ends packed
	// to dst, eight positions at a time.
	VPACKUSWB X1, X2, X2
	VPMOVMSKB X8, AX

	MOVL    AX, BX
	ANDL    $0xff, BX
	VMOVQ   (R9)(BX*8), X4
	VPSHUFB X4, X2, X4
	VMOVQ   X4, (DI)
	POPCNTL BX, BX
	ADDQ    BX, DI

	MOVL    AX, BX
	SHRL    $8, BX
	ANDL    $0xff, BX
	VMOVQ   (R9)(BX*8), X4
	VPSRLDQ $8, X2, X5
	VPSHUFB X4, X5, X4
	VMOVQ   X4, (DI)
	POPCNTL BX, BX
	ADDQ    BX, DI

	ADDQ    $16, CX
	JMP     loop

done:
	VZEROUPPER
	SUBQ    R8, DI
	MOVQ    DI, written+40(FP)
	MOVQ    CX, next+48(FP)
	RET
