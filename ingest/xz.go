package ingest

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"hash/crc64"
	"io"

	"github.com/ulikunitz/xz/lzma"
)

// MaxXZDictionary caps the LZMA2 dictionary an xz block may declare, in
// bytes: the decoder allocates it whole before the first byte. xz -9 and
// -9e use 64 MiB, the largest preset.
const MaxXZDictionary = 64 << 20

// xzReader reads the .xz container (tukaani.org/xz/xz-file-format.txt,
// version 1.2.0: streams of blocks, an index and a footer, concatenated
// streams and stream padding) and decodes each block's LZMA2 data with
// github.com/ulikunitz/xz/lzma. It exists because that module's own xz
// reader takes the dictionary size a block header declares without a
// bound (a 95 KB file declaring 4 GiB allocates 4 GiB); this one refuses a
// dictionary above MaxXZDictionary before allocating, and every length it
// reads is bounded by the format. Only the LZMA2 filter is supported, as in
// that module. Block checks (CRC32, CRC64, SHA-256) are verified.
type xzReader struct {
	in    *bufio.Reader
	err   error
	check byte        // the stream's check type
	block io.Reader   // the current block's LZMA2 reader; nil between blocks
	sum   hash.Hash   // the current block's check over its uncompressed data
	data  countReader // the current block's compressed data
	head  int64       // the current block header's size
}

// countReader counts the bytes read through it from a bufio.Reader.
type countReader struct {
	r *bufio.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func (c *countReader) ReadByte() (byte, error) {
	b, err := c.r.ReadByte()
	if err == nil {
		c.n++
	}
	return b, err
}

var (
	xzFooterMagic = []byte("YZ")
	errXZ         = errors.New("xz: corrupt data")
	crc64Table    = crc64.MakeTable(crc64.ECMA)
)

// newXZReader reads the first stream header of in.
func newXZReader(in *bufio.Reader) (*xzReader, error) {
	x := &xzReader{in: in}
	if err := x.streamHeader(); err != nil {
		return nil, err
	}
	return x, nil
}

func (x *xzReader) Read(p []byte) (int, error) {
	for x.err == nil {
		if x.block == nil {
			x.err = x.next()
			continue
		}
		n, err := x.block.Read(p)
		x.sum.Write(p[:n])
		if err == io.EOF {
			err = x.endBlock()
			x.block = nil
		}
		if err != nil {
			x.err = err
		}
		if n > 0 {
			return n, nil
		}
	}
	return 0, x.err
}

// streamHeader reads a stream header: magic, flags and their CRC32.
func (x *xzReader) streamHeader() error {
	var h [12]byte
	if _, err := io.ReadFull(x.in, h[:]); err != nil {
		return fmt.Errorf("xz: stream header: %w", err)
	}
	if !bytes.Equal(h[:6], xzMagic) {
		return fmt.Errorf("xz: stream header: bad magic")
	}
	if h[6] != 0 || h[7] > 0x0f || crc32.ChecksumIEEE(h[6:8]) != binary.LittleEndian.Uint32(h[8:]) {
		return fmt.Errorf("xz: stream header: bad flags")
	}
	x.check = h[7]
	return nil
}

// next reads what follows a stream header or a block: a block header (and
// starts the block), or the index, footer, padding and the next stream's
// header; io.EOF at the end of the input after a complete stream.
func (x *xzReader) next() error {
	size, err := x.in.ReadByte()
	if err != nil {
		return fmt.Errorf("xz: block header: %w", noEOF(err))
	}
	if size == 0 {
		if err := x.index(); err != nil {
			return err
		}
		return x.streamEnd()
	}
	return x.blockHeader((int(size) + 1) * 4)
}

// blockHeader reads the rest of a block header of size bytes (its size
// byte is read) and starts the block.
func (x *xzReader) blockHeader(size int) error {
	h := make([]byte, size)
	h[0] = byte(size/4 - 1)
	if _, err := io.ReadFull(x.in, h[1:]); err != nil {
		return fmt.Errorf("xz: block header: %w", noEOF(err))
	}
	if crc32.ChecksumIEEE(h[:size-4]) != binary.LittleEndian.Uint32(h[size-4:]) {
		return fmt.Errorf("xz: block header: bad CRC32")
	}
	flags := h[1]
	if flags&0x3c != 0 {
		return fmt.Errorf("xz: block header: reserved flags set")
	}
	b := bytes.NewReader(h[2 : size-4])
	if flags&0x40 != 0 { // compressed size
		if _, err := multibyte(b); err != nil {
			return err
		}
	}
	if flags&0x80 != 0 { // uncompressed size
		if _, err := multibyte(b); err != nil {
			return err
		}
	}
	dict := int64(-1) // int64: 3 << 30 and 1<<32 - 1 overflow a 32-bit int
	for i := 0; i <= int(flags&3); i++ {
		id, err := multibyte(b)
		if err != nil {
			return err
		}
		psize, err := multibyte(b)
		if err != nil {
			return err
		}
		if id != 0x21 || psize != 1 || i != int(flags&3) {
			return fmt.Errorf("xz: filter %#x not supported (only LZMA2)", id)
		}
		c, err := b.ReadByte()
		if err != nil || c > 40 {
			return fmt.Errorf("xz: bad LZMA2 dictionary size")
		}
		if c == 40 {
			dict = 1<<32 - 1
		} else {
			dict = int64(2|c&1) << (c/2 + 11)
		}
	}
	for b.Len() > 0 { // header padding
		if c, _ := b.ReadByte(); c != 0 {
			return fmt.Errorf("xz: block header: bad padding")
		}
	}
	if dict > MaxXZDictionary {
		return fmt.Errorf("xz: a block declares a %d MiB dictionary, more than the %d MiB this reader allows (xz -9 uses 64 MiB)",
			dict>>20, MaxXZDictionary>>20)
	}
	x.data = countReader{r: x.in}
	lr, err := lzma.Reader2Config{DictCap: max(int(dict), lzma.MinDictCap)}.NewReader2(&x.data)
	if err != nil {
		return fmt.Errorf("xz: %w", err)
	}
	x.block, x.head = lr, int64(size)
	switch x.check {
	case 0x01:
		x.sum = crc32.NewIEEE()
	case 0x04:
		x.sum = crc64.New(crc64Table)
	case 0x0a:
		x.sum = sha256.New()
	default:
		x.sum = nopHash{}
	}
	return nil
}

// endBlock reads a block's padding and check.
func (x *xzReader) endBlock() error {
	for n := (x.head + x.data.n) % 4; n != 0 && n < 4; n++ {
		if c, err := x.in.ReadByte(); err != nil || c != 0 {
			return fmt.Errorf("xz: bad block padding")
		}
	}
	size := checkSize(x.check)
	got := make([]byte, size)
	if _, err := io.ReadFull(x.in, got); err != nil {
		return fmt.Errorf("xz: block check: %w", noEOF(err))
	}
	if want := x.sum.Sum(nil); len(want) == size && !bytes.Equal(want, reverseIf(got, x.check)) {
		return fmt.Errorf("xz: block check mismatch: %w", errXZ)
	}
	return nil
}

// reverseIf puts a CRC stored little-endian in the byte order hash.Sum
// gives (big-endian); SHA-256 is stored as it is.
func reverseIf(b []byte, check byte) []byte {
	if check != 0x01 && check != 0x04 {
		return b
	}
	r := make([]byte, len(b))
	for i := range b {
		r[i] = b[len(b)-1-i]
	}
	return r
}

// checkSize is the size in bytes of a check type's value.
func checkSize(check byte) int {
	if check == 0 {
		return 0
	}
	return 4 << ((check - 1) / 3)
}

// index reads an index after its indicator byte: records, padding, CRC32.
func (x *xzReader) index() error {
	sum := crc32.NewIEEE()
	sum.Write([]byte{0})
	n := int64(1)
	tee := &hashByteReader{r: x.in, h: sum, n: &n}
	count, err := multibyte(tee)
	if err != nil {
		return err
	}
	for i := uint64(0); i < 2*count; i++ {
		if _, err := multibyte(tee); err != nil {
			return err
		}
	}
	for ; n%4 != 0; n++ {
		if c, err := x.in.ReadByte(); err != nil || c != 0 {
			return fmt.Errorf("xz: bad index padding")
		}
		sum.Write([]byte{0})
	}
	var crc [4]byte
	if _, err := io.ReadFull(x.in, crc[:]); err != nil || binary.LittleEndian.Uint32(crc[:]) != sum.Sum32() {
		return fmt.Errorf("xz: bad index")
	}
	return nil
}

// streamEnd reads a stream footer, the stream padding and, when more
// follows, the next stream's header.
func (x *xzReader) streamEnd() error {
	var f [12]byte
	if _, err := io.ReadFull(x.in, f[:]); err != nil {
		return fmt.Errorf("xz: stream footer: %w", noEOF(err))
	}
	if !bytes.Equal(f[10:], xzFooterMagic) || f[8] != 0 || f[9] != x.check {
		return fmt.Errorf("xz: bad stream footer")
	}
	for pad := 0; ; pad++ {
		b, err := x.in.Peek(1)
		if err == io.EOF && pad%4 == 0 {
			return io.EOF
		}
		if err != nil {
			return fmt.Errorf("xz: stream padding: %w", noEOF(err))
		}
		if b[0] != 0 {
			if pad%4 != 0 {
				return fmt.Errorf("xz: bad stream padding")
			}
			return x.streamHeader()
		}
		_, _ = x.in.ReadByte()
	}
}

// hashByteReader reads bytes into a hash, counting them.
type hashByteReader struct {
	r *bufio.Reader
	h hash.Hash
	n *int64
}

func (t *hashByteReader) ReadByte() (byte, error) {
	c, err := t.r.ReadByte()
	if err == nil {
		t.h.Write([]byte{c})
		*t.n++
	}
	return c, err
}

// multibyte reads the format's variable-length integer: up to 9 bytes of
// 7 bits, least significant first.
func multibyte(r io.ByteReader) (uint64, error) {
	var v uint64
	for i := 0; i < 9; i++ {
		c, err := r.ReadByte()
		if err != nil {
			return 0, fmt.Errorf("xz: %w", noEOF(err))
		}
		v |= uint64(c&0x7f) << (7 * i)
		if c&0x80 == 0 {
			if c == 0 && i > 0 {
				return 0, errXZ // not the shortest form
			}
			return v, nil
		}
	}
	return 0, errXZ
}

func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// nopHash stands for a check type this reader does not verify.
type nopHash struct{}

func (nopHash) Write(p []byte) (int, error) { return len(p), nil }
func (nopHash) Sum(b []byte) []byte         { return b }
func (nopHash) Reset()                      {}
func (nopHash) Size() int                   { return 0 }
func (nopHash) BlockSize() int              { return 1 }
