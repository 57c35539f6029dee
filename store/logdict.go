package store

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/fnv"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// Log chunks of codec codecZstdDict are zstd frames compressed against a
// raw-content dictionary (RFC 8878, section 5: the frame header names it by
// its Dictionary_ID): a row of log_dicts, which holds the uncompressed
// first chunk of one unit's log on one host. The boots of one unit print
// nearly the same lines (an operator booting shape after shape), which a
// frame compressed on its own stores again every time: on the night
// journal a chunk took ~2,650 bytes alone and ~710 against the first boot's
// (the log was then 40 % of the database), and compressing was faster
// (fewer, longer matches). Rows of log_dicts are written once and never
// changed or deleted, so a dictionary read once is good for the life of the
// process.
const codecZstdDict = 3

const (
	// minDictSource is the smallest chunk (uncompressed bytes) that
	// becomes its unit's dictionary: a boot that printed a few lines
	// would make a poor one for every later boot.
	minDictSource = 2 << 10
	// maxDict caps a dictionary: its chunk's first bytes (the head of a
	// boot log is what boots share most).
	maxDict = 16 << 10
	// maxDictsCached bounds the encoders and decoders a process keeps, one
	// per dictionary used: past it they are all dropped and made again
	// when needed.
	maxDictsCached = 64
	// dictWindow is how far back a dictionary frame's matches reach: the
	// dictionary and a chunk of ordinary size.
	dictWindow = 256 << 10
)

// logDictID is the dictionary id of a unit's log on a host: FNV-1a of
// both, never 0 (zstd's "no dictionary"). Two units that share an id share
// a dictionary, which costs size, not correctness: a frame decodes against
// the row its id names.
func logDictID(host, unit string) uint32 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(host))
	_, _ = h.Write([]byte{0})
	_, _ = h.Write([]byte(unit))
	if id := h.Sum32(); id != 0 {
		return id
	}
	return 1
}

// logDicts holds, for one database, the dictionaries read from or written
// to log_dicts that have been committed, and the encoders and decoders
// made for them.
type logDicts struct {
	mu      sync.Mutex
	content map[uint32][]byte // committed rows
	enc     map[uint32]dictEncoder
	dec     map[uint32]*zstd.Decoder
}

// dictEncoder is an encoder and the content it was made with: a
// transaction that wrote a dictionary and rolled back leaves an encoder of
// content no row holds, and another may then store other content under the
// same id.
type dictEncoder struct {
	content []byte
	e       *zstd.Encoder
}

// encoder returns an encoder for dictionary id of content c.
func (l *logDicts) encoder(id uint32, c []byte) *zstd.Encoder {
	l.mu.Lock()
	defer l.mu.Unlock()
	if de, ok := l.enc[id]; ok && bytes.Equal(de.content, c) {
		return de.e
	}
	if l.enc == nil || len(l.enc) >= maxDictsCached {
		l.enc = map[uint32]dictEncoder{}
	}
	// Valid options: no error (c is within maxDict). The window: the
	// default (8 MiB at this level) would be allocated as the encoder's
	// history when it first uses the dictionary (+5 MiB peak RSS and
	// twice the collections of a night replay); a chunk is ~10 KB.
	e, _ := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1),
		zstd.WithWindowSize(dictWindow),
		zstd.WithEncoderCRC(false), zstd.WithSingleSegment(true), zstd.WithZeroFrames(true),
		zstd.WithLowerEncoderMem(true), zstd.WithEncoderDictRaw(id, c))
	l.enc[id] = dictEncoder{c, e}
	return e
}

// committed returns the content of dictionary id if this process has
// seen it committed.
func (l *logDicts) committed(id uint32) []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.content[id]
}

// commit records dictionaries read or written by a transaction that has
// committed.
func (l *logDicts) commit(rows map[uint32][]byte) {
	if len(rows) == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.content == nil || len(l.content)+len(rows) > maxDictsCached {
		l.content = map[uint32][]byte{}
	}
	for id, c := range rows {
		l.content[id] = c
	}
}

// rowQuerier is a transaction or a database.
type rowQuerier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// readDict reads dictionary id's content from log_dicts; nil when there is
// no such row. A row over maxDict is not one this store wrote.
func readDict(ctx context.Context, q rowQuerier, id uint32) ([]byte, error) {
	var c []byte
	err := q.QueryRowContext(ctx, `SELECT content FROM log_dicts WHERE id = ?`, id).Scan(&c)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if len(c) == 0 || len(c) > maxDict {
		return nil, fmt.Errorf("log dictionary %d of %d bytes (at most %d)", id, len(c), maxDict)
	}
	return c, nil
}

// decompress decodes a codecZstdDict frame of at most limit bytes, reading
// its dictionary through q the first time it is needed. Like decompress,
// it refuses a frame of unstated size or over limit from its header.
func (l *logDicts) decompress(ctx context.Context, q rowQuerier, data []byte, limit int) ([]byte, error) {
	var h zstd.Header
	if err := h.Decode(data); err != nil {
		return nil, err
	}
	if !h.HasFCS || h.FrameContentSize > uint64(limit) {
		return nil, fmt.Errorf("a frame of unstated size or over the %d byte cap", limit)
	}
	if h.DictionaryID == 0 {
		return nil, errors.New("a dictionary frame without a dictionary id")
	}
	d, err := l.decoder(ctx, q, h.DictionaryID)
	if err != nil {
		return nil, err
	}
	out, err := d.DecodeAll(data, make([]byte, 0, h.FrameContentSize))
	if err != nil {
		return nil, err
	}
	if uint64(len(out)) != h.FrameContentSize {
		return nil, errors.New("not one zstd frame")
	}
	return out, nil
}

// decoder returns the decoder of dictionary id (DecodeAll is safe for
// concurrent use).
func (l *logDicts) decoder(ctx context.Context, q rowQuerier, id uint32) (*zstd.Decoder, error) {
	l.mu.Lock()
	d := l.dec[id]
	l.mu.Unlock()
	if d != nil {
		return d, nil
	}
	c, err := readDict(ctx, q, id)
	if err != nil {
		return nil, err
	}
	if c == nil {
		return nil, fmt.Errorf("log dictionary %d is missing", id)
	}
	d, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
		zstd.WithDecoderMaxMemory(max(maxLinesBlob, maxLogChunk)), zstd.WithDecoderDictRaw(id, c))
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if old := l.dec[id]; old != nil {
		return old, nil
	}
	// Dropped, not closed: a page may be decoding with it, and a decoder
	// used only by DecodeAll runs no goroutines to stop.
	if l.dec == nil || len(l.dec) >= maxDictsCached {
		l.dec = map[uint32]*zstd.Decoder{}
	}
	l.dec[id] = d
	return d, nil
}
