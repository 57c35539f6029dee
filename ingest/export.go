package ingest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"strings"
)

// maxFieldSize bounds a binary field's length in bytes: systemd's importer
// refuses fields above 768 MiB (DATA_SIZE_MAX, src/shared/journal-importer.h),
// so a larger length means corrupt data.
const maxFieldSize = 1 << 32

// readExport reads journalctl -o export data
// (https://systemd.io/JOURNAL_EXPORT_FORMATS/#journal-export-format):
// records separated by an empty line; a text field is "NAME=value\n"; a
// binary field is "NAME\n", a 64-bit little-endian length, the raw bytes and
// "\n". A repeated field keeps its last value. Values longer than the record
// cap are cut and named in FieldCapped.
//
// A bad record is counted as malformed, with its byte offset, and the reader
// resynchronises on the next record (see exportRecords), so one corrupt
// length, name or separator costs that record only.
func (r *run) readExport() error {
	asm := NewAssembler(r.source, r.opt)
	if err := r.exportRecords(func(rec Record) error { return r.push(asm, rec) }); err != nil {
		return err
	}
	return r.flush(asm)
}

// ReadExportRecords reads journalctl -o export data from rd and calls fn
// with each record, as it is complete (a live `journalctl --follow -o
// export` pipe works: nothing is read ahead of the record at hand). Bad
// records are counted in Stats and skipped; an error of fn or of reading
// ends it.
func ReadExportRecords(ctx context.Context, rd io.Reader, source string, opt Options, fn func(Record) error) (Stats, error) {
	opt = opt.withDefaults()
	cr := &countingReader{r: rd}
	rn := &run{ctx: ctx, source: source, opt: opt, cr: cr, recordCap: max(64<<20, 8*opt.MaxLineBytes)}
	rn.setInput(cr)
	err := rn.exportRecords(func(rec Record) error {
		if err := rn.tick(); err != nil {
			return err
		}
		return fn(rec)
	})
	rn.st.Bytes = cr.n
	return rn.st, err
}

// exportParser holds the state of one export stream. Resynchronisation
// after damage rests on two facts of the format: records end with an empty
// line, and every record a journal writer emits starts with the same field
// (journalctl: __CURSOR; an upload to systemd-journal-remote: the first
// field its source writes), learnt from the first good record. So
//   - a record found bad is skipped to the next empty line or the next line
//     that sets the leading field, whichever comes first;
//   - a good record in which the leading field appears again lost its
//     separator: it ends there and is kept;
//   - a binary field whose length turns out wrong (no newline after the data,
//     the input ends inside it, or the length is impossible) gives its length
//     bytes and data back to the line reader, which skips them as above: the
//     records inside the bogus span are read again, not lost.
type exportParser struct {
	r    *run
	rw   *rewinder
	br   *bufio.Reader
	lr   lineReader
	push func(Record) error

	off      int64 // offset of the next unread byte
	recStart int64
	recNo    int
	rec      Record
	bad      string
	capped   []string
	size     int    // bytes of the record's values
	first    string // name of the record's first field
	leading  string // the first field of the stream's first good record
}

// exportRecords parses export records and hands each to push.
func (r *run) exportRecords(push func(Record) error) error {
	p := &exportParser{r: r, rw: r.rw, br: r.br, lr: lineReader{br: r.br, max: r.recordCap}, push: push,
		recNo: 1, rec: Record{}}
	for {
		line, n, long, err := p.lr.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		lineStart := p.off
		p.off += n
		if err := p.line(line, lineStart, long, n); err != nil {
			return err
		}
	}
	return p.endRecord(p.off)
}

// line takes one line of the stream, of n bytes (newline included), that
// starts at byte at.
func (p *exportParser) line(line []byte, at int64, long bool, n int64) error {
	if len(line) == 0 && n > 0 && !long {
		return p.endRecord(p.off)
	}
	name, val, isText := bytes.Cut(line, []byte{'='})
	if isText && !long && p.leads(name) && (p.bad != "" || p.rec[p.leadingName()] != nil) {
		// The leading field again: a new record starts here, whether the
		// current one was bad (skipped up to here) or lost its separator.
		if p.bad == "" {
			p.r.st.Repaired++
		}
		if err := p.endRecord(at); err != nil {
			return err
		}
	}
	if p.bad != "" {
		return nil // skip to the next record
	}
	if !validName(name) {
		p.bad = fmt.Sprintf("byte %d: invalid field name %.40q", at, name)
		return nil
	}
	if p.first == "" {
		p.first = string(name)
	}
	if isText {
		if long {
			p.capped = append(p.capped, string(name))
		}
		p.keep(string(name), append([]byte{}, val...), at)
		return nil
	}
	if long {
		p.bad = fmt.Sprintf("byte %d: invalid field name (line longer than %d bytes)", at, p.r.recordCap)
		return nil
	}
	return p.binary(string(name), at)
}

// leadingName is the field every record starts with: learnt from the
// first good record; until then the first record's first field, or
// journalctl's __CURSOR before any.
func (p *exportParser) leadingName() string {
	switch {
	case p.leading != "":
		return p.leading
	case p.recNo == 1 && p.first != "":
		return p.first
	}
	return "__CURSOR"
}

// leads reports whether a text field of this name starts a record.
func (p *exportParser) leads(name []byte) bool { return string(name) == p.leadingName() }

// binary reads a binary field's length, data and newline; its name line,
// which starts at byte at, is read. A length that proves wrong gives the
// bytes read after the name line back to the line reader.
func (p *exportParser) binary(name string, at int64) error {
	var lb [8]byte
	k, err := io.ReadFull(p.br, lb[:])
	p.off += int64(k)
	if err != nil {
		p.rewind(lb[:k])
		p.bad = fmt.Sprintf("byte %d: binary field %s: missing length: %v", at, name, err)
		return nil
	}
	size := binary.LittleEndian.Uint64(lb[:])
	if size > maxFieldSize {
		p.rewind(lb[:])
		p.bad = fmt.Sprintf("byte %d: binary field %s: implausible length %d", at, name, size)
		return nil
	}
	take := min(size, uint64(p.r.recordCap))
	data, n, next, err := p.binaryData(size, take)
	p.off += n
	if next {
		// The data ran into the next record, and the reader stands there.
		p.bad = fmt.Sprintf("byte %d: binary field %s: length %d runs into the next record; %d bytes skipped", at, name, size, p.off-p.recStart)
		return p.endRecord(p.off)
	}
	if err == nil {
		var nl byte
		if nl, err = p.br.ReadByte(); err == nil {
			if nl == '\n' {
				p.off++
				if size > take {
					p.capped = append(p.capped, name)
				}
				p.keep(name, data, at)
				return nil
			}
			_ = p.br.UnreadByte()
			err = fmt.Errorf("not followed by a newline")
		}
	}
	// All of a field up to the cap is at hand: read it again as lines.
	// Beyond the cap binaryData has already stopped at any record boundary.
	if size <= take {
		p.rewind(append(lb[:], data...))
	}
	p.bad = fmt.Sprintf("byte %d: binary field %s of %d bytes: %v", at, name, size, err)
	return nil
}

// rewind gives b, the last bytes read, back to the reader.
func (p *exportParser) rewind(b []byte) {
	if len(b) == 0 {
		return
	}
	p.off -= int64(len(b))
	p.rw.unread(b, p.br)
}

// keep adds a field, unless the record would then hold more than
// maxRecordFields fields or more than twice recordCap bytes of values (a
// field capped at recordCap and the rest): one record must not take memory
// without bound.
func (p *exportParser) keep(name string, v []byte, at int64) {
	if _, ok := p.rec[name]; !ok && len(p.rec) >= maxRecordFields {
		p.bad = fmt.Sprintf("byte %d: %v", at, errTooManyFields)
		return
	}
	if p.size += len(v); p.size > 2*p.r.recordCap {
		p.bad = fmt.Sprintf("byte %d: more than %d bytes of field values", at, 2*p.r.recordCap)
		return
	}
	p.rec[name] = v
}

// endRecord ends the record at hand; the next starts at byte next.
func (p *exportParser) endRecord(next int64) error {
	rec, bad, capped, first := p.rec, p.bad, p.capped, p.first
	p.rec, p.bad, p.capped, p.size, p.first = Record{}, "", nil, 0, ""
	defer func() { p.recNo++; p.recStart = next }()
	switch {
	case bad != "":
		p.r.malformed("%s: export record %d (byte %d): %s", p.r.source, p.recNo, p.recStart, bad)
	case len(rec) > 0:
		if p.leading == "" {
			p.leading = first
		}
		if len(capped) > 0 {
			rec[FieldCapped] = []byte(strings.Join(capped, ","))
		}
		return p.push(rec)
	}
	return nil
}

// binaryData reads a binary field's data of size bytes, keeping the first
// take. A field with a sane length never holds the start of the next record:
// a newline and the record's leading field ("\n__CURSOR=" in journalctl's
// output); nor, when it is longer than the cap (it is cut anyway), an empty
// line followed by a field. When the data does, the length is corrupt:
// binaryData stops at that record, and reports next. The data grows as bytes
// arrive, so a bogus length costs no memory.
func (p *exportParser) binaryData(size, take uint64) (data []byte, n int64, next bool, err error) {
	var buf bytes.Buffer
	lead := []byte("\n" + p.leadingName() + "=")
	keepTail := len(lead)
	if size > take {
		keepTail = max(keepTail, 2+maxNameLen+1)
	}
	left := size
	for left > 0 {
		// Wait only for the field's own bytes (a live pipe may have nothing
		// after them yet); look at whatever else is already buffered.
		chunk, perr := p.br.Peek(int(min(left, uint64(p.br.Size()))))
		if b := p.br.Buffered(); b > len(chunk) {
			chunk, _ = p.br.Peek(b)
		}
		if len(chunk) == 0 {
			if perr == nil {
				perr = io.ErrUnexpectedEOF
			}
			return buf.Bytes(), n, false, perr
		}
		// A boundary inside the field's span: its first newline is data, not
		// the field's own end.
		start := -1
		if at := bytes.Index(chunk, lead); at >= 0 && uint64(at) < left {
			start = at + 1
		}
		if size > take {
			if i := recordBoundary(chunk); i >= 0 && uint64(i)+1 < left && (start < 0 || i+2 < start) {
				start = i + 2
			}
		}
		if start >= 0 {
			d, _ := p.br.Discard(start)
			return nil, n + int64(d), true, nil
		}
		// Keep the last bytes, which may start a boundary, for the next peek.
		use := min(uint64(len(chunk)), left)
		if len(chunk) > keepTail && use == uint64(len(chunk)) {
			use -= uint64(keepTail)
		}
		if kept := uint64(buf.Len()); kept < take {
			buf.Write(chunk[:min(use, take-kept)])
		}
		d, derr := p.br.Discard(int(use))
		n += int64(d)
		left -= uint64(d)
		if derr != nil {
			return buf.Bytes(), n, false, derr
		}
	}
	return buf.Bytes(), n, false, nil
}

// maxNameLen is the longest field name journald accepts (64 bytes,
// JOURNAL_FIELD_NAME_MAX in systemd's journal-file.h).
const maxNameLen = 64

// recordBoundary returns the index of an empty line's first newline
// followed by a field, "\n\nNAME=" or "\n\nNAME\n" with a length under
// maxFieldSize, in b, or -1.
func recordBoundary(b []byte) int {
	for i := 0; ; {
		j := bytes.Index(b[i:], []byte("\n\n"))
		if j < 0 {
			return -1
		}
		j += i
		rest := b[j+2:]
		if e := bytes.IndexAny(rest[:min(len(rest), maxNameLen+1)], "=\n"); e > 0 && validName(rest[:e]) &&
			(rest[e] == '=' || len(rest) >= e+9 && binary.LittleEndian.Uint64(rest[e+1:]) <= maxFieldSize) {
			return j
		}
		i = j + 1
	}
}

// rewinder is a reader with bytes given back in front of its source.
type rewinder struct {
	pending []byte
	src     io.Reader
}

func (w *rewinder) Read(b []byte) (int, error) {
	if len(w.pending) > 0 {
		n := copy(b, w.pending)
		w.pending = w.pending[n:]
		return n, nil
	}
	return w.src.Read(b)
}

// unread puts b back in front of what br, which reads w, holds.
func (w *rewinder) unread(b []byte, br *bufio.Reader) {
	held, _ := br.Peek(br.Buffered())
	next := make([]byte, 0, len(b)+len(held)+len(w.pending))
	next = append(append(append(next, b...), held...), w.pending...)
	w.pending = next
	br.Reset(w)
}
