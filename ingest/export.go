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
// "\n". A repeated field keeps its last value. A bad record is counted as
// malformed and skipped up to the next empty line. Values longer than the
// record cap are cut and named in FieldCapped.
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
	rn := &run{ctx: ctx, source: source, opt: opt, cr: cr, br: bufio.NewReaderSize(cr, readBufSize),
		recordCap: max(64<<20, 8*opt.MaxLineBytes)}
	err := rn.exportRecords(func(rec Record) error {
		if err := rn.tick(); err != nil {
			return err
		}
		return fn(rec)
	})
	rn.st.Bytes = cr.n
	return rn.st, err
}

// exportRecords parses export records and hands each to push.
func (r *run) exportRecords(push func(Record) error) error {
	lr := lineReader{br: r.br, max: r.recordCap}
	var (
		off      int64 // offset of the next unread byte
		recStart int64
		recNo    = 1
		rec      = Record{}
		bad      string
		capped   []string
		size     int // bytes of the record's values
	)
	// keep adds a field, unless the record would then hold more than
	// maxRecordFields fields or more than twice recordCap bytes of values
	// (a field capped at recordCap and the rest): one record must not take
	// memory without bound.
	keep := func(name string, v []byte, at int64) {
		if _, ok := rec[name]; !ok && len(rec) >= maxRecordFields {
			bad = fmt.Sprintf("byte %d: %v", at, errTooManyFields)
			return
		}
		if size += len(v); size > 2*r.recordCap {
			bad = fmt.Sprintf("byte %d: more than %d bytes of field values", at, 2*r.recordCap)
			return
		}
		rec[name] = v
	}
	endRecord := func() error {
		defer func() {
			rec, bad, capped, size = Record{}, "", nil, 0
			recNo++
			recStart = off
		}()
		switch {
		case bad != "":
			r.malformed("%s: export record %d (byte %d): %s", r.source, recNo, recStart, bad)
		case len(rec) > 0:
			if len(capped) > 0 {
				rec[FieldCapped] = []byte(strings.Join(capped, ","))
			}
			return push(rec)
		}
		return nil
	}
	for {
		line, n, long, err := lr.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		lineStart := off
		off += n
		if len(line) == 0 && n > 0 && !long {
			if err := endRecord(); err != nil {
				return err
			}
			continue
		}
		if bad != "" {
			continue // skip to the next record
		}
		name, val, isText := bytes.Cut(line, []byte{'='})
		if !validName(name) {
			bad = fmt.Sprintf("byte %d: invalid field name %.40q", lineStart, name)
			continue
		}
		// line aliases the reader's buffer, which the reads of a binary
		// field's data below may move: keep the name.
		name = []byte(string(name))
		if isText {
			if long {
				capped = append(capped, string(name))
			}
			keep(string(name), append([]byte{}, val...), lineStart)
			continue
		}
		if long {
			bad = fmt.Sprintf("byte %d: invalid field name (line longer than %d bytes)", lineStart, r.recordCap)
			continue
		}
		var lb [8]byte
		if _, err := io.ReadFull(r.br, lb[:]); err != nil {
			bad = fmt.Sprintf("byte %d: binary field %s: missing length: %v", lineStart, name, err)
			continue
		}
		off += 8
		size := binary.LittleEndian.Uint64(lb[:])
		if size > maxFieldSize {
			bad = fmt.Sprintf("byte %d: binary field %s: implausible length %d", lineStart, name, size)
			continue
		}
		take := size
		if take > uint64(r.recordCap) {
			take = uint64(r.recordCap)
			capped = append(capped, string(name))
		}
		data, k, next, err := r.binaryField(size, take)
		off += k
		switch {
		case next:
			// The data ran into the next record: the length was corrupt.
			// Resume there, counting what was skipped.
			bad = fmt.Sprintf("byte %d: binary field %s: length %d runs into the next record; %d bytes skipped", lineStart, name, size, off-recStart)
			if err := endRecord(); err != nil {
				return err
			}
			continue
		case err != nil:
			bad = fmt.Sprintf("byte %d: binary field %s of %d bytes: %v", lineStart, name, size, err)
			continue
		}
		nl, err := r.br.ReadByte()
		if err == nil {
			off++
		}
		if err != nil || nl != '\n' {
			bad = fmt.Sprintf("byte %d: binary field %s of %d bytes not followed by a newline", lineStart, name, size)
			if err == nil {
				_ = r.br.UnreadByte()
				off--
			}
			continue
		}
		keep(string(name), data, lineStart)
	}
	return endRecord()
}

// recordStart begins every record journalctl -o export writes.
var recordStart = []byte("\n__CURSOR=")

// binaryField reads a binary field's data of size bytes, keeping the
// first take. A field with a sane length never holds the start of the next
// record ("\n__CURSOR=" after the newline that ends the field); when the
// data does, the length is corrupt: binaryField stops after that newline,
// leaving the reader at the next record, and reports next. The data grows
// as bytes arrive, so a bogus length costs no memory.
func (r *run) binaryField(size, take uint64) (data []byte, n int64, next bool, err error) {
	var buf bytes.Buffer
	left := size
	for left > 0 {
		// Wait only for the field's own bytes (a live pipe may have nothing
		// after them yet); look at whatever else is already buffered.
		chunk, perr := r.br.Peek(int(min(left, uint64(r.br.Size()))))
		if b := r.br.Buffered(); b > len(chunk) {
			chunk, _ = r.br.Peek(b)
		}
		if len(chunk) == 0 {
			if perr == nil {
				perr = io.ErrUnexpectedEOF
			}
			return nil, n, false, perr
		}
		if i := bytes.Index(chunk, recordStart); i >= 0 && uint64(i) < left {
			d, _ := r.br.Discard(i + 1)
			return nil, n + int64(d), true, nil
		}
		// Keep the last bytes, which may start the pattern, for the next peek.
		use := uint64(len(chunk))
		if use > left {
			use = left
		}
		if len(chunk) > len(recordStart) && use == uint64(len(chunk)) {
			use -= uint64(len(recordStart))
		}
		if kept := uint64(buf.Len()); kept < take {
			buf.Write(chunk[:min(use, take-kept)])
		}
		d, derr := r.br.Discard(int(use))
		n += int64(d)
		left -= uint64(d)
		if derr != nil {
			return nil, n, false, derr
		}
	}
	return buf.Bytes(), n, false, nil
}
