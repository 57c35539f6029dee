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
// its Dictionary_ID): a row of log_dicts, which holds the first chunk of at
// least minDictSource bytes (before compression) a save wrote of one unit's
// log on one host (normally the head of its first boot; for a live attempt
// or one resumed from the database, possibly a later part). The boots of
// one unit print nearly the same lines (an operator booting shape after
// shape), which a frame compressed on its own stores again every time: on
// the night journal a chunk took ~2,650 bytes alone and ~570 against its
// unit's dictionary (the log had been 40 % of the database; measured with
// the entropy-coded frames rowEncoderOptions no longer writes), and
// compressing got cheaper (fewer, longer matches). Rows of log_dicts are
// written once and never changed or deleted; a process still checks the
// content of every encoder and decoder it reuses, since the row a
// transaction wrote is gone if it rolls back.
const codecZstdDict = 3

const (
	// minDictSource is the smallest chunk (uncompressed bytes) that
	// becomes its unit's dictionary: a boot that printed a few lines
	// would make a poor one for every later boot.
	minDictSource = 2 << 10
	// maxDict caps a dictionary: its chunk's first bytes.
	maxDict = 16 << 10
	// maxEncoders bounds the encoders a process keeps, one per dictionary
	// (~1 MiB each of tables and history once used). One set to each
	// chunk's dictionary in turn was 4 % slower on the night journal,
	// whose boots alternate between two units: setting a dictionary
	// hashes it into a table of its own.
	maxEncoders = 4
	// maxDecoders bounds the decoders a process keeps, one per dictionary
	// read (each holds its dictionary and, once used, buffers for a
	// chunk): past it they are dropped and made again when needed.
	maxDecoders = 16
	// maxCommitted bounds the committed contents kept (16 KiB each).
	maxCommitted = 256
	// dictWindow is how far back a dictionary frame's matches reach: the
	// dictionary and a chunk of ordinary size. At zstd's default for this
	// level (4 MiB) the encoder allocated that much history on its first
	// use of a dictionary: +5 MiB peak RSS and twice the collections of a
	// night replay.
	dictWindow = 256 << 10
)

// errBadDict is a log_dicts row this store did not write (empty or over
// maxDict).
var errBadDict = errors.New("bad log dictionary")

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

// logDicts holds, for one database, the dictionaries this process has
// seen committed, an encoder for each of the last few dictionaries it
// compressed against and a decoder for each it read.
type logDicts struct {
	mu      sync.Mutex
	content map[uint32][]byte // committed rows

	encMu sync.Mutex
	enc   map[uint32]dictEncoder

	decMu sync.Mutex
	dec   map[uint32]dictDecoder
}

// dictEncoder is an encoder and the dictionary content it was made with.
type dictEncoder struct {
	content []byte
	e       *zstd.Encoder
}

// dictDecoder is a decoder and the dictionary content it was made with.
type dictDecoder struct {
	content []byte
	d       *zstd.Decoder
}

// compress appends the frame of src compressed against dictionary id of
// content c to dst.
func (l *logDicts) compress(id uint32, c, dst, src []byte) []byte {
	l.encMu.Lock()
	defer l.encMu.Unlock()
	de, ok := l.enc[id]
	if !ok || !bytes.Equal(de.content, c) {
		if l.enc == nil {
			l.enc = map[uint32]dictEncoder{}
		}
		for old := range l.enc {
			if len(l.enc) < maxEncoders {
				break
			}
			delete(l.enc, old)
		}
		// Valid options: no error (c is within maxDict).
		e, _ := zstd.NewWriter(nil, rowEncoderOptions(zstd.WithWindowSize(dictWindow), zstd.WithEncoderDictRaw(id, c))...)
		de = dictEncoder{c, e}
		l.enc[id] = de
	}
	return de.e.EncodeAll(src, dst)
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
	if l.content == nil || len(l.content)+len(rows) > maxCommitted {
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
// no such row, errBadDict for a row this store did not write.
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
		return nil, fmt.Errorf("%w of %d bytes (at most %d)", errBadDict, len(c), maxDict)
	}
	return c, nil
}

// decompress decodes a codecZstdDict frame of at most limit bytes. Its
// dictionary's content is local's (the dictionaries a saver's transaction
// read or wrote), else one seen committed, else read through q (a reader's
// transaction sees only committed rows). Like decompress, it refuses a
// frame of unstated size or over limit from its header.
func (l *logDicts) decompress(ctx context.Context, q rowQuerier, local map[uint32][]byte, data []byte, limit int) ([]byte, error) {
	h, err := frameHeader(data, limit)
	if err != nil {
		return nil, err
	}
	id := h.DictionaryID
	if id == 0 {
		return nil, errors.New("a dictionary frame without a dictionary id")
	}
	c := local[id]
	if c == nil {
		c = l.committed(id)
	}
	if c == nil {
		if c, err = readDict(ctx, q, id); err != nil {
			return nil, fmt.Errorf("log dictionary %d: %w", id, err)
		}
		if c == nil {
			return nil, fmt.Errorf("log dictionary %d is missing", id)
		}
		if local == nil {
			l.commit(map[uint32][]byte{id: c})
		}
	}
	d, err := l.decoder(id, c)
	if err != nil {
		return nil, err
	}
	return decodeFrame(d, data, h)
}

// decoder returns a decoder of dictionary id with content c (DecodeAll is
// safe for concurrent use, two at a time as the shared decoder).
func (l *logDicts) decoder(id uint32, c []byte) (*zstd.Decoder, error) {
	l.decMu.Lock()
	defer l.decMu.Unlock()
	if dd, ok := l.dec[id]; ok && bytes.Equal(dd.content, c) {
		return dd.d, nil
	}
	d, err := zstd.NewReader(nil, rowDecoderOptions(maxLogChunk, zstd.WithDecoderDictRaw(id, c))...)
	if err != nil {
		return nil, err
	}
	// Dropped, not closed: a page may be decoding with one, and a decoder
	// used only by DecodeAll runs no goroutines to stop.
	if l.dec == nil || len(l.dec) >= maxDecoders {
		l.dec = map[uint32]dictDecoder{}
	}
	l.dec[id] = dictDecoder{c, d}
	return d, nil
}
