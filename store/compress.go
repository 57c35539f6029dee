package store

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/zstd"
)

// Log chunks and attempt_lines rows are written as zstd frames (RFC
// 8878); rows written by earlier versions are DEFLATE (RFC 1951) and still
// read. On the night journal's rows, zstd's default level took 30 % less
// CPU than DEFLATE level 2 for a chunk (~9 KB of text) and 46 % less than
// level 5 for a lines row (~3 KB), for rows 1.5 % and 4 % smaller: most of
// DEFLATE's time on rows this small went to building each one's Huffman
// tables. zstd's fastest level against its default: replay 5-6 % faster on
// the night and serving journals (43.5k lines, 15 interleaved rounds; 11.3
// against 12.1 s at 1M night lines), the database 2 % larger (5,810
// against 5,697 B per attempt at 1M night lines). One frame per row, its
// size in the header, no checksum (SQLite pages carry none either; a
// changed byte still fails the decode or the row's own checks). The
// encoder's tables (~1.4 MB, kept for the process) put ~1 MiB on a
// replay's peak RSS; a batch run gives back more than that of the
// executable's pages (internal/pageout).
var zstdEncoder = sync.OnceValue(func() *zstd.Encoder {
	// Valid options: no error. EncodeAll is safe for concurrent use; one
	// encoder's tables are enough for a saver at a time.
	e, _ := zstd.NewWriter(nil, rowEncoderOptions()...)
	return e
})

// rowEncoderOptions are the options of every row's encoder (the log
// dictionaries' add theirs, logdict.go). No entropy coding: the frames
// keep zstd's matches but store literals raw, since on rows of a few KB
// building each block's Huffman and FSE tables was half of compressing
// them. A 43.5k-line night replay took 3.6 % less time (15 interleaved
// rounds, one core; serving 1.5 %, 21 rounds) for a database 7.7 %
// larger (4,156 -> 4,477 B per attempt: lines rows 569 -> 760 KB, log
// chunks 470 -> 530 KB). Readers need nothing new: these are ordinary
// zstd frames with raw literals blocks.
func rowEncoderOptions(more ...zstd.EOption) []zstd.EOption {
	return append([]zstd.EOption{zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1),
		zstd.WithEncoderCRC(false), zstd.WithSingleSegment(true), zstd.WithZeroFrames(true),
		zstd.WithLowerEncoderMem(true), zstd.WithNoEntropyCompression(true)}, more...)
}

// zstdDecoder decodes stored rows; DecodeAll is safe for concurrent use
// (the web server's pages), two at a time. It refuses a frame that claims
// more than the largest row may hold before allocating for it.
var zstdDecoder = sync.OnceValue(func() *zstd.Decoder {
	d, _ := zstd.NewReader(nil, rowDecoderOptions(max(maxLinesBlob, maxLogChunk))...)
	return d
})

// rowDecoderOptions are the options of every row's decoder, one that
// allocates at most limit bytes for a frame (the log dictionaries' add
// theirs, logdict.go).
func rowDecoderOptions(limit int, more ...zstd.DOption) []zstd.DOption {
	return append([]zstd.DOption{zstd.WithDecoderConcurrency(2), zstd.WithDecoderLowmem(true),
		zstd.WithDecoderMaxMemory(uint64(limit))}, more...)
}

// The codecs of a compressed row, shared by attempt_log's codec column and
// an attempt_lines row's format byte.
const (
	codecDeflate = 1
	codecZstd    = 2
)

// uncompress decodes a row of at most limit bytes compressed with codec.
func uncompress(codec int, data []byte, limit int) ([]byte, error) {
	switch codec {
	case codecZstd:
		return decompress(data, limit)
	case codecDeflate:
		return inflate(data, limit)
	}
	return nil, fmt.Errorf("unknown codec %d", codec)
}

// compress appends the zstd frame of b to dst.
func compress(dst, b []byte) []byte { return zstdEncoder().EncodeAll(b, dst) }

// decompress decodes the zstd frame of a row of at most limit bytes. The
// frame must state its size (compress writes it), and one over limit is
// refused from its header; data must be that one frame.
func decompress(data []byte, limit int) ([]byte, error) {
	h, err := frameHeader(data, limit)
	if err != nil {
		return nil, err
	}
	return decodeFrame(zstdDecoder(), data, h)
}

// frameHeader is the header of a row's zstd frame, refused when it does
// not state the frame's size or states one over limit.
func frameHeader(data []byte, limit int) (zstd.Header, error) {
	var h zstd.Header
	if err := h.Decode(data); err != nil {
		return h, err
	}
	if !h.HasFCS || h.FrameContentSize > uint64(limit) {
		return h, fmt.Errorf("a frame of unstated size or over the %d byte cap", limit)
	}
	return h, nil
}

// decodeFrame decodes data, one zstd frame whose header is h, with d.
func decodeFrame(d *zstd.Decoder, data []byte, h zstd.Header) ([]byte, error) {
	out, err := d.DecodeAll(data, make([]byte, 0, h.FrameContentSize))
	if err != nil {
		return nil, err
	}
	if uint64(len(out)) != h.FrameContentSize {
		// DecodeAll goes on past the first frame, within the decoder's cap.
		return nil, errors.New("not one zstd frame")
	}
	return out, nil
}

// inflate decodes a DEFLATE stream of at most limit bytes: rows written by
// earlier versions.
func inflate(data []byte, limit int) ([]byte, error) {
	r := flate.NewReader(bytes.NewReader(data))
	defer r.Close()
	out, err := io.ReadAll(io.LimitReader(r, int64(limit)+1))
	if err != nil {
		return nil, err
	}
	if len(out) > limit {
		return nil, fmt.Errorf("decodes to more than the %d byte cap", limit)
	}
	return out, nil
}
