package store

import (
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
)

// An attempt_lines row (migration 0011) holds an attempt's evidence and
// context lines and its timeline: a format byte, then the compressed bytes
// of
//
//	uvarint line count, per line:
//	  uvarint flags (lineEvidence, lineContext, lineRole, lineInLog)
//	  uvarint evidence seq, if lineEvidence; uvarint context seq, if lineContext
//	  string role, if lineRole
//	  string time (RFC 3339, source offset), string cursor
//	  uvarint log seq, if lineInLog; else string message
//	uvarint mark count, per timeline mark:
//	  string phase, string time
//	  uvarint ref: k > 0 is line k-1's cursor and message; 0 is
//	    string cursor, then uvarint 1 and log seq, or 0 and string message
//
// where a string is a uvarint length and its bytes. Cursors repeat their
// journal and boot ids line after line, which the compression stores once.
// The format byte is the codec of the rest (compress.go): codecZstd, or
// codecDeflate in rows written by earlier versions.

// maxLinesBlob caps a row's decoded size: lines within the tracker's caps
// are far below it; anything larger is not ours.
const maxLinesBlob = 16 << 20

// maxLineCount caps the lines and marks a row may claim, before any is
// read: each takes at least 4 bytes, so a larger count is a lie.
const maxLineCount = maxLinesBlob / 4

const (
	lineEvidence = 1 << iota
	lineContext
	lineRole
	lineInLog
)

// lineRec is one evidence or context line as stored: message is empty
// when logSeq is set (the text is line logSeq of the attempt's log).
type lineRec struct {
	evSeq, ctxSeq sql.NullInt64
	role          sql.NullString
	time, cursor  string
	message       string
	logSeq        sql.NullInt64
}

// markRec is one timeline mark as stored, its line resolved like a
// lineRec's.
type markRec struct {
	phase, time, cursor, message string
	logSeq                       sql.NullInt64
}

var errBadLines = errors.New("bad attempt_lines row")

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// bufPool holds appendLines' buffers for a row before compression.
var bufPool = sync.Pool{New: func() any { return new([]byte) }}

// encodeLines is an attempt_lines row: lines and marks as above.
func encodeLines(lines []lineRec, marks []markRec) []byte { return appendLines(nil, lines, marks) }

// appendLines appends encodeLines(lines, marks) to dst (see rawLogChunk).
func appendLines(dst []byte, lines []lineRec, marks []markRec) []byte {
	bp := bufPool.Get().(*[]byte)
	b := binary.AppendUvarint((*bp)[:0], uint64(len(lines)))
	// A mark refers to the first line with its cursor and text (or log
	// line: logSeq -1 for none).
	type key struct {
		cursor, message string
		logSeq          int64
	}
	first := make(map[key]int, len(lines))
	for i, l := range lines {
		var flags uint64
		if l.evSeq.Valid {
			flags |= lineEvidence
		}
		if l.ctxSeq.Valid {
			flags |= lineContext
		}
		if l.role.Valid {
			flags |= lineRole
		}
		if l.logSeq.Valid {
			flags |= lineInLog
		}
		b = binary.AppendUvarint(b, flags)
		if l.evSeq.Valid {
			b = binary.AppendUvarint(b, uint64(l.evSeq.Int64))
		}
		if l.ctxSeq.Valid {
			b = binary.AppendUvarint(b, uint64(l.ctxSeq.Int64))
		}
		if l.role.Valid {
			b = appendString(b, l.role.String)
		}
		b = appendString(appendString(b, l.time), l.cursor)
		if l.logSeq.Valid {
			b = binary.AppendUvarint(b, uint64(l.logSeq.Int64))
		} else {
			b = appendString(b, l.message)
		}
		k := key{l.cursor, l.message, -1}
		if l.logSeq.Valid {
			k.logSeq = l.logSeq.Int64
		}
		if _, dup := first[k]; !dup {
			first[k] = i
		}
	}
	b = binary.AppendUvarint(b, uint64(len(marks)))
	for _, m := range marks {
		b = appendString(appendString(b, m.phase), m.time)
		k := key{m.cursor, m.message, -1}
		if m.logSeq.Valid {
			k.logSeq = m.logSeq.Int64
		}
		if i, ok := first[k]; ok {
			b = binary.AppendUvarint(b, uint64(i)+1)
			continue
		}
		b = appendString(binary.AppendUvarint(b, 0), m.cursor)
		if m.logSeq.Valid {
			b = binary.AppendUvarint(binary.AppendUvarint(b, 1), uint64(m.logSeq.Int64))
		} else {
			b = appendString(binary.AppendUvarint(b, 0), m.message)
		}
	}
	out := compress(append(dst, codecZstd), b)
	*bp = b
	bufPool.Put(bp)
	return out
}

// lineReader reads the fields of a decoded attempt_lines row; the first
// malformed field sets err, and every later read returns zero values.
type lineReader struct {
	b   []byte
	err error
}

func (r *lineReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errBadLines
		return 0
	}
	r.b = r.b[n:]
	return v
}

// seq reads a line number (a position or a log seq), capped as the log's.
func (r *lineReader) seq() int64 {
	v := r.uvarint()
	if v > 1<<40 {
		r.err = errBadLines
		return 0
	}
	return int64(v)
}

func (r *lineReader) str() string {
	n := r.uvarint()
	if r.err != nil {
		return ""
	}
	if n > uint64(len(r.b)) {
		r.err = errBadLines
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

// count reads a line or mark count, capped by what the rest could hold.
func (r *lineReader) count() int {
	n := r.uvarint()
	if n > maxLineCount || n > uint64(len(r.b)) {
		r.err = errBadLines
		return 0
	}
	return int(n)
}

// decodeLines is the inverse of encodeLines. A mark referring to a line
// gets that line's cursor, message and log seq.
func decodeLines(data []byte) ([]lineRec, []markRec, error) {
	if len(data) == 0 {
		return nil, nil, errBadLines
	}
	b, err := uncompress(int(data[0]), data[1:], maxLinesBlob)
	if err != nil {
		return nil, nil, fmt.Errorf("attempt_lines: %w", err)
	}
	r := &lineReader{b: b}
	lines := make([]lineRec, r.count())
	for i := range lines {
		l := &lines[i]
		flags := r.uvarint()
		if flags&lineEvidence != 0 {
			l.evSeq = sql.NullInt64{Int64: r.seq(), Valid: true}
		}
		if flags&lineContext != 0 {
			l.ctxSeq = sql.NullInt64{Int64: r.seq(), Valid: true}
		}
		if flags&lineRole != 0 {
			l.role = sql.NullString{String: r.str(), Valid: true}
		}
		l.time, l.cursor = r.str(), r.str()
		if flags&lineInLog != 0 {
			l.logSeq = sql.NullInt64{Int64: r.seq(), Valid: true}
		} else {
			l.message = r.str()
		}
	}
	marks := make([]markRec, r.count())
	for i := range marks {
		m := &marks[i]
		m.phase, m.time = r.str(), r.str()
		ref := r.uvarint()
		switch {
		case r.err != nil:
		case ref > uint64(len(lines)):
			r.err = errBadLines
		case ref > 0:
			l := lines[ref-1]
			m.cursor, m.message, m.logSeq = l.cursor, l.message, l.logSeq
		default:
			m.cursor = r.str()
			switch r.uvarint() {
			case 0:
				m.message = r.str()
			case 1:
				m.logSeq = sql.NullInt64{Int64: r.seq(), Valid: true}
			default:
				r.err = errBadLines
			}
		}
	}
	if r.err == nil && len(r.b) > 0 {
		r.err = errBadLines // trailing bytes: not a row this version wrote
	}
	if r.err != nil {
		return nil, nil, r.err
	}
	return lines, marks, nil
}
