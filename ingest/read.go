package ingest

import (
	"bufio"
	"bytes"
	"compress/bzip2"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
	"unicode/utf8"

	"github.com/klauspost/compress/zstd"

	"github.com/llmfleet/analyzer/domain"
)

// Options tune reading. Zero values take the defaults.
type Options struct {
	// Format forces an input format; FormatAuto (default) detects it.
	Format Format
	// MaxLineBytes caps one (reassembled) line, in bytes (default 1 MiB).
	// A longer line is emitted as several entries marked FieldLineCapped.
	MaxLineBytes int
	// OrphanTimeout is how much journal time (__REALTIME_TIMESTAMP) may
	// pass after a line's last piece before the unfinished line is emitted
	// with FieldLogLoss (default 30 s).
	OrphanTimeout time.Duration
	// Progress, when set, is called with the number of input bytes read
	// so far, every few MiB and at the end.
	Progress func(bytesRead int64)
	// Fields, when not nil, lists the fields besides the Entry members
	// that Entry.Fields keeps; the others are parsed past and dropped,
	// which spares copying a record's twenty-odd trusted fields when the
	// consumer reads three. Ingest's own ANALYZER_* fields are always
	// set. Nil keeps every field.
	Fields []string
}

func (o Options) withDefaults() Options {
	if o.MaxLineBytes <= 0 {
		o.MaxLineBytes = DefaultMaxLineBytes
	}
	if o.OrphanTimeout <= 0 {
		o.OrphanTimeout = DefaultOrphanTimeout
	}
	return o
}

// Stats count what a read did.
type Stats struct {
	Format    Format // detected (or forced) format
	Records   int64  // journal records parsed (text: lines)
	Entries   int64  // entries passed to fn
	Bytes     int64  // input bytes read (compressed bytes for gzip input)
	Malformed int64  // bad lines/records, skipped
	Truncated int64  // entries with Truncated set (MESSAGE was null)
	Orphans   int64  // entries with FieldLogLoss (lines not reassembled)
	Repaired  int64  // export records kept whole whose separator was lost
	// Errors holds the first 20 malformed-input messages ("file:line: why").
	Errors []string
}

const (
	maxErrors = 20
	// readBufSize is the read buffer, in bytes: the most that format
	// detection looks at, and the longest line read without a copy. It
	// fits the core's cache, so the parser reads what read(2) just wrote
	// from there; a 1 MiB buffer measured slower.
	readBufSize   = 256 << 10
	progressEvery = 4 << 20
)

// ReadFile reads path ("-" = standard input), detects its format unless
// opt.Format is set, and calls fn for each entry in order (gzip input is
// decompressed). Malformed lines are counted in Stats and skipped. It stops
// at the first error of fn (returned as is), of reading or of ctx, and
// returns it with the stats so far; the error does not repeat the path,
// except os.Open's.
//
// A file is read with read(2) into one buffer, and a journald JSON record
// is parsed where the buffer holds it. A memory map, used until
// 2026-12-07, lost on a build machine whose hypervisor traps every page
// table change (with read(2), explain of the 43.5k-line journals took
// 17-28 % less time, a two-core replay of the serving one 25 %) and
// gained 2-7 % on the two that do not (README, Benchmark).
//
// A reassembled line arrives with its first piece's Cursor; the cursor of
// the last record it consumed is in Fields[FieldEndCursor].
func ReadFile(ctx context.Context, path string, opt Options, fn func(domain.Entry) error) (Stats, error) {
	if path == "-" {
		// A read from a pipe blocks until the writer writes or closes: read
		// it in a goroutine, so that a signal ends the run at once.
		return Read(ctx, newCtxReader(ctx, os.Stdin), "-", opt, fn)
	}
	f, err := os.Open(path)
	if err != nil {
		return Stats{}, err
	}
	defer f.Close()
	return Read(ctx, f, path, opt, fn)
}

// Read is ReadFile on an open reader; source names it in entries (Source,
// text cursors) and error messages.
func Read(ctx context.Context, r io.Reader, source string, opt Options, fn func(domain.Entry) error) (Stats, error) {
	rn := newRun(ctx, &countingReader{r: r}, source, opt, fn)
	return rn.finish(rn.read())
}

// newRun is a run reading cr.
func newRun(ctx context.Context, cr *countingReader, source string, opt Options, fn func(domain.Entry) error) *run {
	opt = opt.withDefaults()
	rn := &run{ctx: ctx, fn: fn, source: source, opt: opt, cr: cr, recordCap: max(64<<20, 8*opt.MaxLineBytes)}
	rn.setInput(cr)
	return rn
}

// finish completes the stats of a run that read ended with err.
func (r *run) finish(err error) (Stats, error) {
	r.st.Bytes = r.cr.n
	if r.opt.Progress != nil {
		r.opt.Progress(r.cr.n)
	}
	return r.st, err
}

// Compressed input is read as it comes, by its magic bytes: gzip (RFC
// 1952), zstd (RFC 8878), xz (tukaani.org/xz/xz-file-format.txt), bzip2.
var (
	gzipMagic  = []byte{0x1f, 0x8b}
	zstdMagic  = []byte{0x28, 0xb5, 0x2f, 0xfd}
	xzMagic    = []byte{0xfd, '7', 'z', 'X', 'Z', 0x00}
	bzip2Magic = []byte("BZh")
)

func isBzip2(b []byte) bool {
	return bytes.HasPrefix(b, bzip2Magic) && len(b) > 3 && b[3] >= '1' && b[3] <= '9'
}

// zstdMaxMemory caps what the zstd decoder may allocate (its window), in
// bytes, as MaxXZDictionary caps xz's: the input is untrusted. zstd -19
// uses an 8 MiB window; only --ultra -22 and --long beyond 26 need more.
// bzip2 needs no cap: its blocks are 900 kB at most by format, gzip's
// window 32 KiB.
const zstdMaxMemory = 64 << 20

// decompress wraps r.br in the decompressor its magic bytes name, if any.
func (r *run) decompress() (io.Closer, error) {
	b, _ := peekMore(r.br, len(xzMagic))
	var zr io.Reader
	var closer io.Closer
	switch {
	case bytes.HasPrefix(b, gzipMagic):
		g, err := gzip.NewReader(r.br)
		if err != nil {
			return nil, fmt.Errorf("ingest: gzip: %w", err)
		}
		zr, closer = g, g
	case bytes.HasPrefix(b, zstdMagic):
		d, err := zstd.NewReader(r.br, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(zstdMaxMemory),
			zstd.WithDecoderMaxWindow(zstdMaxMemory))
		if err != nil {
			return nil, fmt.Errorf("ingest: zstd (window capped at %d MiB): %w", zstdMaxMemory>>20, err)
		}
		zr, closer = d, closerFunc(d.Close)
	case bytes.HasPrefix(b, xzMagic):
		x, err := newXZReader(r.br)
		if err != nil {
			return nil, fmt.Errorf("ingest: %w", err)
		}
		zr = x
	case isBzip2(b):
		zr = bzip2.NewReader(r.br)
	default:
		return nil, nil
	}
	r.setInput(zr)
	return closer, nil
}

// setInput makes src the run's input.
func (r *run) setInput(src io.Reader) {
	r.rw = &rewinder{src: src}
	r.br = bufio.NewReaderSize(r.rw, readBufSize)
}

type closerFunc func()

func (f closerFunc) Close() error { f(); return nil }

func (r *run) read() error {
	closer, err := r.decompress()
	if err != nil {
		return err
	}
	if closer != nil {
		defer closer.Close()
	}
	if err := r.refuseNonLog(); err != nil {
		return err
	}
	f := r.opt.Format
	if f == FormatAuto {
		var err error
		if f, err = DetectFormat(r.br); err != nil {
			return err
		}
	}
	r.st.Format = f
	switch f {
	case FormatJSON, FormatJSONSeq:
		return r.readJSON()
	case FormatExport:
		return r.readExport()
	case FormatText:
		return r.readText()
	case FormatJournal:
		return r.readJournal()
	}
	return fmt.Errorf("ingest: unknown format %v", f)
}

// run is the state of one Read.
type run struct {
	ctx          context.Context
	fn           func(domain.Entry) error
	source       string
	opt          Options
	cr           *countingReader
	br           *bufio.Reader // reads rw
	rw           *rewinder     // the input, with bytes a reader gave back in front
	recordCap    int           // bytes per JSON line / export field
	st           Stats
	lastProgress int64
	out          []domain.Entry // entries of the last push, reused
	paste        *pasteReader   // plain text: the envelope of pasted lines
	logLike      int            // plain text: lines that look like log output
}

// push feeds one record to asm and emits what it completes.
func (r *run) push(asm *Assembler, rec Record) error {
	asm.rec.fromMap(rec, asm.keep)
	return r.pushFlat(asm, &asm.rec)
}

// pushFlat is push on a parsed record.
func (r *run) pushFlat(asm *Assembler, rec *flatRecord) error {
	if err := r.tick(); err != nil {
		return err
	}
	r.out = asm.push(rec, r.out[:0])
	for _, e := range r.out {
		if err := r.emit(e); err != nil {
			return err
		}
	}
	return nil
}

// flush emits the unfinished lines at the end of input.
func (r *run) flush(asm *Assembler) error {
	for _, e := range asm.Flush() {
		if err := r.emit(e); err != nil {
			return err
		}
	}
	return nil
}

// tick counts a record, checks ctx now and then and reports progress.
func (r *run) tick() error {
	r.st.Records++
	if r.st.Records&63 == 0 {
		if err := r.ctx.Err(); err != nil {
			return err
		}
	}
	if r.opt.Progress != nil && r.cr.n-r.lastProgress >= progressEvery {
		r.lastProgress = r.cr.n
		r.opt.Progress(r.cr.n)
	}
	return nil
}

// emit counts e and passes it to fn.
func (r *run) emit(e domain.Entry) error {
	r.st.Entries++
	if e.Truncated {
		r.st.Truncated++
	}
	if e.Fields[FieldLogLoss] != "" {
		r.st.Orphans++
	}
	return r.fn(e)
}

// malformed counts a bad line or record and keeps the first messages.
func (r *run) malformed(format string, args ...any) {
	r.st.Malformed++
	if len(r.st.Errors) < maxErrors {
		r.st.Errors = append(r.st.Errors, fmt.Sprintf(format, args...))
	}
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// lineReader reads lines of at most max bytes; longer lines are cut (long
// set) and the rest discarded.
type lineReader struct {
	br  *bufio.Reader
	max int
	buf []byte
}

// lineReader is a lineReader of the run's input.
func (r *run) lineReader() lineReader {
	return lineReader{br: r.br, max: r.recordCap}
}

// rest returns the bytes br holds, at most max of them, to be parsed in
// place and consumed with skip. It does not read: a line that does not end
// in them is read by next, which refills br as it needs (a pipe or a
// followed file then hands over each line as it comes; waiting here for a
// fuller buffer held lines back until more arrived).
func (l *lineReader) rest(max int) []byte {
	b, _ := l.br.Peek(min(l.br.Buffered(), max))
	return b[:len(b):len(b)]
}

// skip consumes the next n bytes rest returned, as next does a line.
func (l *lineReader) skip(n int) { _, _ = l.br.Discard(n) }

// next returns the next line without its '\n' (valid until the next call),
// the bytes consumed, and whether it was cut. io.EOF only when no bytes are
// left.
func (l *lineReader) next() (line []byte, n int64, long bool, err error) {
	chunk, err := l.br.ReadSlice('\n')
	if err == nil && len(chunk) <= l.max+1 {
		return chunk[:len(chunk)-1], int64(len(chunk)), false, nil
	}
	l.buf = l.buf[:0]
	for {
		n += int64(len(chunk))
		if !long {
			if room := l.max - len(l.buf); len(chunk) > room && !(len(chunk) == room+1 && chunk[room] == '\n') {
				l.buf = append(l.buf, chunk[:room]...)
				long = true
			} else {
				l.buf = append(l.buf, chunk...)
			}
		}
		switch err {
		case bufio.ErrBufferFull:
			chunk, err = l.br.ReadSlice('\n')
			continue
		case nil, io.EOF:
			if err == io.EOF && n == 0 {
				return nil, 0, false, io.EOF
			}
			if k := len(l.buf); k > 0 && l.buf[k-1] == '\n' {
				l.buf = l.buf[:k-1]
			}
			return l.buf, n, long, nil
		}
		return nil, n, long, err
	}
}

// ErrNotALog is returned for input that is no log at all: empty, binary,
// or text in which no line looks like log output (a timestamp, a log
// level, a process prefix, engine output).
var ErrNotALog = errors.New("not a log")

// expected says what a reader of the analyzer's input should give it.
const expected = "expected journalctl -o json (or -o export) output, or an engine's log text (plain, journalctl short or cat, docker/kubectl logs), optionally gzip/zstd/xz-compressed"

// refuseNonLog looks at the start of the (decompressed) input and refuses
// what cannot be a log: nothing at all, or binary data (NUL bytes, or
// mostly invalid UTF-8 and control bytes in what the first read brought,
// at most 64 KiB).
func (r *run) refuseNonLog() error {
	// Only what the first read brought: on a live pipe, waiting for more
	// would hold up the lines already there.
	b, err := peekMore(r.br, 1)
	if err != nil && err != io.EOF && err != bufio.ErrBufferFull {
		return err
	}
	if n := min(r.br.Buffered(), 64<<10); n > len(b) {
		b, _ = r.br.Peek(n)
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return fmt.Errorf("%w: the input is empty; %s", ErrNotALog, expected)
	}
	if bytes.HasPrefix(b, journalMagic) {
		return nil // binary, by its format
	}
	bad := 0
	for i := 0; i < len(b); {
		c, n := utf8.DecodeRune(b[i:])
		if c == 0 || (c == utf8.RuneError && n == 1 && i+utf8.UTFMax <= len(b)) || (c < 0x20 && c != '\n' && c != '\r' && c != '\t' && c != 0x1b && c != 0x1e) {
			bad++
			if c == 0 && !bytes.HasPrefix(b, []byte("__")) && !isNameStart(b[0]) {
				bad += len(b) // a NUL outside export's binary fields: binary data
			}
		}
		i += n
	}
	if bad*10 > len(b) {
		return fmt.Errorf("%w: binary data (%d of the first %d bytes are not text); %s", ErrNotALog, min(bad, len(b)), len(b), expected)
	}
	return nil
}

// ctxReader reads r in a goroutine of its own and returns ctx's error as
// soon as ctx is done, even while that goroutine waits in a read that
// blocks (a stalled pipe). The goroutine ends with the process.
type ctxReader struct {
	ctx  context.Context
	ch   chan chunk
	left []byte
	err  error
}

type chunk struct {
	b   []byte
	err error
}

func newCtxReader(ctx context.Context, r io.Reader) *ctxReader {
	cr := &ctxReader{ctx: ctx, ch: make(chan chunk, 4)}
	go func() {
		for {
			b := make([]byte, 64<<10)
			n, err := r.Read(b)
			select {
			case cr.ch <- chunk{b[:n], err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return cr
}

func (c *ctxReader) Read(p []byte) (int, error) {
	for len(c.left) == 0 {
		if c.err != nil {
			return 0, c.err
		}
		select {
		case <-c.ctx.Done():
			return 0, c.ctx.Err()
		case ch := <-c.ch:
			c.left, c.err = ch.b, ch.err
		}
	}
	n := copy(p, c.left)
	c.left = c.left[n:]
	return n, nil
}
