package ingest

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"strings"
)

// Format is an input format.
type Format int

// Input formats. FormatAuto (the zero value) means detect per file.
const (
	FormatAuto    Format = iota
	FormatJSON           // journalctl -o json: one JSON object per line
	FormatJSONSeq        // journalctl -o json-seq: RS (0x1E) + object + LF (RFC 7464)
	FormatExport         // journalctl -o export (systemd.io/JOURNAL_EXPORT_FORMATS)
	FormatText           // plain engine output, one entry per line
	FormatJournal        // a binary journal file (systemd.io/JOURNAL_FILE_FORMAT)
)

var formatNames = [...]string{"auto", "json", "json-seq", "export", "text", "journal"}

// String returns the format's name as accepted by ParseFormat.
func (f Format) String() string {
	if f >= 0 && int(f) < len(formatNames) {
		return formatNames[f]
	}
	return fmt.Sprintf("Format(%d)", int(f))
}

// ParseFormat parses a format name: auto, json, json-seq, export, text or
// journal.
func ParseFormat(s string) (Format, error) {
	for i, n := range formatNames {
		if strings.EqualFold(s, n) {
			return Format(i), nil
		}
	}
	return FormatAuto, fmt.Errorf("ingest: unknown format %q (want auto, json, json-seq, export, text or journal)", s)
}

// journalMagic starts a binary journal file (systemd journal-def.h).
var journalMagic = []byte("LPKSHHRH")

// DetectFormat peeks at r, without consuming anything, and returns the
// format of its content: the first non-blank byte 0x1E → FormatJSONSeq, '{' →
// FormatJSON; a first line "NAME=value" (or a binary-field "NAME") whose
// record has a __CURSOR or __REALTIME_TIMESTAMP field → FormatExport;
// anything else → FormatText. journalctl's "-- ..." info lines before the
// data are skipped; input holding only such lines is FormatJSON. It reads
// from the underlying reader only as far as needed (safe on a live pipe) and
// looks no further than r's buffer size. A binary journal file's magic
// bytes → FormatJournal. Errors: a read error other than io.EOF.
func DetectFormat(r *bufio.Reader) (Format, error) {
	pos, want, info := 0, 1, false
	for {
		b, err := peekMore(r, want)
		if err != nil && err != io.EOF && err != bufio.ErrBufferFull {
			return FormatAuto, err
		}
		full := err != nil || len(b) >= r.Size() // no more bytes will come
		if bytes.HasPrefix(b, journalMagic) {
			return FormatJournal, nil
		}
		if !full && (len(b) < len(journalMagic) && bytes.HasPrefix(journalMagic, b) ||
			len(b) < len(bom) && bytes.HasPrefix(bom, b)) {
			want = len(b) + 1
			continue
		}
		if pos == 0 && bytes.HasPrefix(b, bom) {
			pos = len(bom)
		}
		for pos < len(b) && isBlank(b[pos]) {
			pos++
		}
		if pos >= len(b) {
			if full {
				if info {
					return FormatJSON, nil
				}
				return FormatText, nil
			}
			want = len(b) + 1
			continue
		}
		switch c := b[pos]; {
		case c == 0x1e:
			return FormatJSONSeq, nil
		case c == '{':
			return FormatJSON, nil
		case c == '-':
			// journalctl info line ("-- No entries --", "-- cursor: ..."):
			// skip it and look at what follows.
			end := bytes.IndexByte(b[pos:], '\n')
			if end < 0 && !full {
				want = len(b) + 1
				continue
			}
			if !bytes.HasPrefix(b[pos:], []byte("-- ")) {
				return FormatText, nil
			}
			if end < 0 {
				return FormatJSON, nil
			}
			pos += end + 1
			info = true
		case isNameStart(c):
			return detectExport(r, pos)
		default:
			return FormatText, nil
		}
	}
}

var bom = []byte("\xef\xbb\xbf")

// detectExport checks whether the data at offset pos is an export record.
func detectExport(r *bufio.Reader, pos int) (Format, error) {
	sawField, want := false, pos+1
	for {
		b, err := peekMore(r, want)
		if err != nil && err != io.EOF && err != bufio.ErrBufferFull {
			return FormatAuto, err
		}
		full := err != nil || len(b) >= r.Size()
		end := bytes.IndexByte(b[pos:], '\n')
		if end < 0 && !full {
			want = len(b) + 1
			continue
		}
		if end < 0 {
			if sawField && len(b) >= r.Size() {
				return FormatExport, nil // huge first record: give it the benefit
			}
			end = len(b) - pos // last line at EOF
		}
		line := b[pos : pos+end]
		if len(line) == 0 { // end of the first record
			return FormatText, nil
		}
		name, _, isText := bytes.Cut(line, []byte{'='})
		if !validName(name) {
			return FormatText, nil
		}
		if string(name) == "__CURSOR" || string(name) == "__REALTIME_TIMESTAMP" {
			return FormatExport, nil
		}
		pos += end + 1
		if !isText { // binary field: 64-bit LE length, data, '\n'
			for len(b) < pos+8 && !full {
				b, err = peekMore(r, pos+8)
				full = err != nil || len(b) >= r.Size()
			}
			if len(b) < pos+8 {
				return FormatText, nil
			}
			n := binary.LittleEndian.Uint64(b[pos:])
			if n >= uint64(r.Size()) {
				return FormatExport, nil // plausible field, too long to scan further
			}
			pos += 8 + int(n) + 1
			for len(b) < pos && !full {
				b, err = peekMore(r, pos)
				full = err != nil || len(b) >= r.Size()
			}
			if len(b) < pos || b[pos-1] != '\n' {
				return FormatText, nil
			}
		}
		if pos >= len(b) && full {
			if len(b) >= r.Size() {
				return FormatExport, nil // first record fills the buffer
			}
			return FormatText, nil
		}
		sawField = true
		want = pos + 1
	}
}

// peekMore returns the buffered bytes, reading more only when fewer than n
// are buffered; it never asks for more than the buffer size.
func peekMore(r *bufio.Reader, n int) ([]byte, error) {
	if b := r.Buffered(); b >= n {
		return r.Peek(b)
	}
	if n > r.Size() {
		n = r.Size()
	}
	return r.Peek(n)
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

func isNameStart(c byte) bool { return c == '_' || (c >= 'A' && c <= 'Z') }

// validName reports whether s is a journal field name: [A-Z_][A-Z0-9_]*.
func validName(s []byte) bool {
	if len(s) == 0 || !isNameStart(s[0]) {
		return false
	}
	for _, c := range s[1:] {
		if !(c == '_' || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
			return false
		}
	}
	return true
}
