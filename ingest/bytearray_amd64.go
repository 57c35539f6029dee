package ingest

import (
	"slices"

	"golang.org/x/sys/cpu"
)

// haveBlocks: decodeBlocks' instructions (AVX, POPCNT) are there.
var haveBlocks = cpu.X86.HasAVX && cpu.X86.HasPOPCNT

// packTable[m] holds the indices of the bits set in m, in order: the
// PSHUFB control that packs the bytes of an 8-byte group where m has a bit
// to its start.
var packTable = func() (t [256]uint64) {
	for m := range t {
		var v uint64
		n := 0
		for b := range 8 {
			if m&(1<<b) != 0 {
				v |= uint64(b) << (8 * n)
				n++
			}
		}
		t[m] = v
	}
	return t
}()

// decodeBlocks decodes the byte-array elements that end in the 16-byte
// blocks of src from i on (i, i+16, ... up to end; the bytes from i-3 to
// end+16 are read) into dst, a block at a time in SIMD registers, while
// every block holds only digits and commas and its elements are valid;
// it returns how many bytes it wrote and the start of the first block it
// did not decode. A block may write 8 bytes past its last element.
//
//go:noescape
func decodeBlocks(src *byte, i, end int, dst *byte, pack *[256]uint64) (written, next int)

// scanBlocks decodes from s[i], an element's first digit, what
// decodeBlocks can, appending to out, and returns where scanByteArray
// goes on: after the last element's comma, or at the start of the element
// the first block it did not decode holds.
func scanBlocks(out, s []byte, i int) ([]byte, int) {
	end := len(s) - 17
	// The blocks read the bytes before i as those of the elements ending
	// in the first block: i must start one.
	if !haveBlocks || i < 3 || end-i < 48 || isDigit(s[i-1]) {
		return out, i
	}
	out = slices.Grow(out, (end-i)/2+32)
	dst := out[len(out):cap(out)]
	n, next := decodeBlocks(&s[0], i, end, &dst[0], &packTable)
	out = out[:len(out)+n]
	if next == i {
		return out, i
	}
	switch {
	case s[next] == ',' && isDigit(s[next-1]):
		return out, next + 1 // the element before the comma is written
	default:
		for isDigit(s[next-1]) {
			next-- // back to the start of the element not written
		}
		return out, next
	}
}

func isDigit(c byte) bool { return c-'0' <= 9 }
