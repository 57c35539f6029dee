package rules

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"go/format"
	"io/fs"
	"strconv"
	"unsafe"
)

// The built-in rules' Aho-Corasick automaton, made by go generate
// (ACSource, builtin_ac.go) and read in place. Building it was a fifth of a
// one-entry explain's CPU on one core (~10 ms of ~50): the breadth-first
// fill of a 440 KB table, written page by page, where a page fault costs
// ~15 µs on this VM. The generated table is initialized data of the binary
// instead: mapped from the page cache, many pages a fault, and only those a
// run's lines reach. builtinAC takes it only when the literals it was made
// from are the set's, so a stale builtin_ac.go costs time, never
// correctness.

// builtinACWords is builtin_ac.go's automaton (encodeAC); nil without it.
var builtinACWords []uint32

// acWordsVersion is the first word of encodeAC's layout.
const acWordsVersion = 1

// acHeader is the words before the tables: version, the digest (8),
// shift, depth, long, then the lengths of trans, outAt, outs, foldN,
// foldAt and foldLits, then class (64).
const acHeader = 1 + 8 + 3 + 6 + 64

// acDigest identifies the automaton of lits at depth: a SHA-256 of both.
func acDigest(lits []string, depth int) [32]byte {
	h := sha256.New()
	b := binary.AppendUvarint(nil, uint64(depth))
	for _, l := range lits {
		b = binary.AppendUvarint(b, uint64(len(l)))
		b = append(b, l...)
		if len(b) > 4096 {
			h.Write(b)
			b = b[:0]
		}
	}
	h.Write(b)
	var d [32]byte
	h.Sum(d[:0])
	return d
}

// encodeAC returns a's tables (not its literals) as 32-bit words, with
// the digest of the literals and depth it was built from: acHeader's
// words, then trans (two entries a word, the first in the low half, the
// last padded), outAt, outs, foldN, foldAt and foldLits.
func encodeAC(a *acAutomaton, digest [32]byte) []uint32 {
	w := []uint32{acWordsVersion}
	for i := 0; i < 32; i += 4 {
		w = append(w, binary.LittleEndian.Uint32(digest[i:]))
	}
	long := 0
	if a.long {
		long = 1
	}
	for _, v := range []int{int(a.shift), a.depth, long, len(a.trans), len(a.outAt), len(a.outs), len(a.foldN), len(a.foldAt), len(a.foldLits)} {
		w = append(w, uint32(v))
	}
	for i := 0; i < 256; i += 4 {
		w = append(w, binary.LittleEndian.Uint32(a.class[i:]))
	}
	for i := 0; i < len(a.trans); i += 2 {
		v := uint32(a.trans[i])
		if i+1 < len(a.trans) {
			v |= uint32(a.trans[i+1]) << 16
		}
		w = append(w, v)
	}
	w = append(w, a.outAt...)
	for _, v := range a.outs {
		w = append(w, uint32(v))
	}
	for _, v := range a.foldN {
		w = append(w, uint32(v))
	}
	w = append(w, a.foldAt...)
	for _, v := range a.foldLits {
		w = append(w, uint32(v))
	}
	return w
}

var errACWords = errors.New("not an automaton's tables")

// decodeAC returns the automaton of words (encodeAC's layout) for lits,
// its tables views of words, and the digest it was made from. It checks
// what findAll relies on but the transitions (check).
func decodeAC(words []uint32, lits []string) (*acAutomaton, [32]byte, error) {
	var digest [32]byte
	if len(words) < acHeader || words[0] != acWordsVersion || !nativeLittleEndian() {
		return nil, digest, errACWords
	}
	for i := range 8 {
		binary.LittleEndian.PutUint32(digest[4*i:], words[1+i])
	}
	h := words[9:18]
	a := &acAutomaton{shift: uint(h[0]), depth: int(h[1]), long: h[2] == 1, lits: lits, split: acSplit, split4: acSplit4}
	nTrans, nOutAt, nOuts, nFoldN, nFoldAt, nFoldLits := int(h[3]), int(h[4]), int(h[5]), int(h[6]), int(h[7]), int(h[8])
	for i := range 64 {
		binary.LittleEndian.PutUint32(a.class[4*i:], words[18+i])
	}
	rest := words[acHeader:]
	ok := true
	take := func(n int) []uint32 {
		if n < 0 || n > len(rest) {
			ok = false
			return nil
		}
		t := rest[:n:n]
		rest = rest[n:]
		return t
	}
	transWords := take((nTrans + 1) / 2)
	a.outAt, a.outs = take(nOutAt), asInt32(take(nOuts))
	a.foldN, a.foldAt, a.foldLits = asInt32(take(nFoldN)), take(nFoldAt), asInt32(take(nFoldLits))
	if !ok || len(rest) != 0 || a.shift > 8 {
		return nil, digest, errACWords
	}
	if nTrans > 0 {
		// Two entries a word, the first in the low half: the word's bytes
		// in memory on a little-endian machine.
		a.trans = unsafe.Slice((*uint16)(unsafe.Pointer(&transWords[0])), nTrans)
	}
	if err := a.check(); err != nil {
		return nil, digest, err
	}
	a.head = litHeads(lits)
	return a, digest, nil
}

// check reports an automaton whose tables point outside each other. The
// transitions are not read: that would touch every page of the table at
// every start, and a transition out of the table is an index out of
// range, not a wrong match (TestBuiltinACEmbedded checks them).
func (a *acAutomaton) check() error {
	states := len(a.outAt) - 1
	if states < 1 || len(a.trans) != states<<a.shift || len(a.foldAt) != len(a.foldN)+1 {
		return fmt.Errorf("%w: %d states, %d transitions", errACWords, states, len(a.trans))
	}
	for _, c := range a.class {
		if int(c) >= 1<<a.shift {
			return fmt.Errorf("%w: byte class %d", errACWords, c)
		}
	}
	if !ascending(a.outAt, len(a.outs)) || !ascending(a.foldAt, len(a.foldLits)) {
		return fmt.Errorf("%w: offsets out of order", errACWords)
	}
	for _, f := range a.outs {
		if f < 0 || int(f) >= len(a.foldN) {
			return fmt.Errorf("%w: folded pattern %d", errACWords, f)
		}
	}
	for _, n := range a.foldN {
		if n < 1 || int(n) > a.depth {
			return fmt.Errorf("%w: folded length %d", errACWords, n)
		}
	}
	for _, li := range a.foldLits {
		if li < 0 || int(li) >= len(a.lits) {
			return fmt.Errorf("%w: literal %d", errACWords, li)
		}
	}
	return nil
}

// ascending reports whether offs starts at 0, never decreases and ends at
// n.
func ascending(offs []uint32, n int) bool {
	if len(offs) == 0 || offs[0] != 0 || int(offs[len(offs)-1]) != n {
		return false
	}
	for i := 1; i < len(offs); i++ {
		if offs[i] < offs[i-1] {
			return false
		}
	}
	return true
}

func asInt32(w []uint32) []int32 {
	if len(w) == 0 {
		return nil
	}
	return unsafe.Slice((*int32)(unsafe.Pointer(&w[0])), len(w))
}

func nativeLittleEndian() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}

// builtinAC returns the automaton of lits at acDepth: builtin_ac.go's
// when it was made from these literals, else a new one.
func builtinAC(lits []string) *acAutomaton {
	if a, digest, err := decodeAC(builtinACWords, lits); err == nil && digest == acDigest(lits, acDepth) {
		return a
	}
	return newAC(lits, acDepth)
}

// ACSource returns the Go source of builtin_ac.go for the rule files of
// fsys: the automaton of their literals (and of the error and may-matter
// words) as an array of words, which the linker lays out as initialized
// data.
func ACSource(fsys fs.FS) ([]byte, error) {
	s, err := Load(fsys)
	if err != nil {
		return nil, err
	}
	lits := s.pre.ac.lits
	w := encodeAC(newAC(lits, acDepth), acDigest(lits, acDepth))
	var b bytes.Buffer
	b.WriteString("// Code generated by go generate ./rules (ACSource); DO NOT EDIT.\n\npackage rules\n\n")
	b.WriteString("func init() { builtinACWords = builtinACTable[:] }\n\n")
	fmt.Fprintf(&b, "var builtinACTable = [%d]uint32{", len(w))
	for i, v := range w {
		if i%16 == 0 {
			b.WriteString("\n")
		}
		b.WriteString(strconv.FormatUint(uint64(v), 10))
		b.WriteString(",")
	}
	b.WriteString("\n}\n")
	return format.Source(b.Bytes())
}
