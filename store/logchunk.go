package store

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/klauspost/compress/s2"

	"github.com/llmfleet/analyzer/domain"
)

// logChunkLines caps the lines of one attempt_log row.
const logChunkLines = 256

// maxLogChunk caps a chunk's decoded size: 256 lines within the tracker's
// domain.LogBytes per part, with room to spare; anything larger is not ours.
const maxLogChunk = 4 * domain.LogBytes

// A chunk (codec codecZstd, or codecZstdDict against its unit's
// dictionary, logdict.go; codecDeflate from earlier versions, see
// compress.go) is the compressed bytes of: uvarint line count;
// per line, uvarint seq - previous seq - 1 (previous -1 for the first) and
// varint time - previous time (µs since the epoch, noTime when unknown,
// previous 0 for the first; wrapping); per line, uvarint message length;
// then the messages. The numbers come apart from the text, as deltas,
// which the compression then stores in a bit or two (30 % smaller than S2
// on the night journal's logs).
//
// Chunks stored before migration 0011 (codec logS2) are one S2 block of,
// per line: uvarint seq, varint time, uvarint length and the message.
const logS2 = 0

const noTime = -1 << 63

// encodeLogChunk returns a chunk's data, compressed as codec codecZstd
// (a save compresses rawLogChunk's bytes itself, codecZstdDict when it can).
func encodeLogChunk(lines []domain.LogLine) []byte { return compress(nil, rawLogChunk(nil, lines)) }

// rawLogChunk appends the uncompressed bytes of a chunk of lines to b: a
// save reuses one buffer for them (and one for the compressed row, which
// SQLite copies), where a new one per chunk grew from empty several times.
func rawLogChunk(b []byte, lines []domain.LogLine) []byte {
	b = binary.AppendUvarint(b, uint64(len(lines)))
	prevSeq, prevUs := -1, int64(0)
	for _, l := range lines {
		us := int64(noTime)
		if !l.Time.IsZero() {
			us = l.Time.UnixMicro()
		}
		b = binary.AppendUvarint(b, uint64(l.Seq-prevSeq-1))
		b = binary.AppendVarint(b, us-prevUs)
		prevSeq, prevUs = l.Seq, us
	}
	for _, l := range lines {
		b = binary.AppendUvarint(b, uint64(len(l.Message)))
	}
	for _, l := range lines {
		b = append(b, l.Message...)
	}
	return b
}

var errBadChunk = errors.New("bad attempt_log chunk")

// chunkMessages sets the text of each line of the chunk whose seq is a key
// of want, and returns how many it set.
func chunkMessages(r *chunkReader, data []byte, codec int, want map[int]string) (int, error) {
	found := 0
	err := walkLogChunk(r, data, codec, func(seq int, _ int64, msg []byte) {
		if _, ok := want[seq]; ok {
			want[seq] = string(msg)
			found++
		}
	})
	return found, err
}

// decodeLogChunk appends a chunk's lines to out, times in loc.
func decodeLogChunk(r *chunkReader, data []byte, codec int, loc *time.Location, out []domain.LogLine) ([]domain.LogLine, error) {
	err := walkLogChunk(r, data, codec, func(seq int, us int64, msg []byte) {
		l := domain.LogLine{Seq: seq, Message: string(msg)}
		if us != noTime {
			l.Time = time.UnixMicro(us).In(loc)
		}
		out = append(out, l)
	})
	return out, err
}

// chunkReader reads the dictionaries of codecZstdDict chunks (logdict.go)
// in the transaction the chunks come from. A nil one reads chunks of the
// other codecs only.
type chunkReader struct {
	ctx   context.Context
	q     rowQuerier
	dicts *logDicts
	local map[uint32][]byte // a saver's: the dictionaries its transaction read or wrote
}

// walkLogChunk calls fn with each line of a chunk: its seq, time (µs, or
// noTime) and text (valid during the call only).
func walkLogChunk(r *chunkReader, data []byte, codec int, fn func(seq int, us int64, msg []byte)) error {
	if codec == logS2 {
		n, err := s2.DecodedLen(data)
		if err != nil {
			return err
		}
		if n > maxLogChunk {
			return errBadChunk
		}
		b, err := s2.Decode(nil, data)
		if err != nil {
			return err
		}
		return walkS2Chunk(b, fn)
	}
	var b []byte
	var err error
	switch {
	case codec != codecZstdDict:
		b, err = uncompress(codec, data, maxLogChunk)
	case r == nil:
		err = errors.New("a dictionary frame read without its database")
	default:
		b, err = r.dicts.decompress(r.ctx, r.q, r.local, data, maxLogChunk)
	}
	if err != nil {
		return fmt.Errorf("attempt_log chunk: %w", err)
	}
	return walkChunk(b, fn)
}

// walkChunk walks the decoded lines of a codecZstd or codecDeflate chunk.
func walkChunk(b []byte, fn func(seq int, us int64, msg []byte)) error {
	r := &lineReader{b: b}
	n := r.count()
	if r.err != nil || n > logChunkLines*4 {
		return errBadChunk
	}
	seqs, times := make([]int, n), make([]int64, n)
	seq, us := int64(-1), int64(0)
	for i := range n {
		seq += r.seq() + 1
		d, k := binary.Varint(r.b)
		if k <= 0 || r.err != nil || seq > 1<<40 {
			return errBadChunk
		}
		r.b = r.b[k:]
		us += d
		seqs[i], times[i] = int(seq), us
	}
	lens := make([]int, n)
	total := 0
	for i := range n {
		ln := r.uvarint()
		if r.err != nil || ln > uint64(len(r.b)) {
			return errBadChunk
		}
		lens[i] = int(ln)
		total += int(ln)
	}
	if total != len(r.b) {
		return errBadChunk
	}
	msgs := r.b
	for i := range n {
		fn(seqs[i], times[i], msgs[:lens[i]])
		msgs = msgs[lens[i]:]
	}
	return nil
}

// walkS2Chunk walks the decoded lines of a logS2 chunk.
func walkS2Chunk(b []byte, fn func(seq int, us int64, msg []byte)) error {
	for len(b) > 0 {
		seq, n := binary.Uvarint(b)
		if n <= 0 || seq > 1<<40 {
			return errBadChunk
		}
		b = b[n:]
		us, n := binary.Varint(b)
		if n <= 0 {
			return errBadChunk
		}
		b = b[n:]
		ln, n := binary.Uvarint(b)
		if n <= 0 || ln > uint64(len(b)-n) {
			return errBadChunk
		}
		fn(int(seq), us, b[n:n+int(ln)])
		b = b[n+int(ln):]
	}
	return nil
}
