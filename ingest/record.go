// Package ingest turns journald captures (journalctl -o json, json-seq,
// export) and plain engine logs into domain.Entry values, streaming. It
// decodes journalctl's value encodings, strips ANSI escapes and reassembles
// lines that journald, conmon or docker split into pieces; a line that cannot
// be reassembled is emitted with the ANALYZER_LOG_LOSS field, never dropped.
package ingest

import (
	"bytes"
	"strconv"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/llmfleet/analyzer/domain"
)

// Record is one raw journal record: field name → raw value bytes, as parsed
// from JSON or export data or read with sdjournal. A nil value (as opposed to
// an empty, non-nil one) means the producer printed the field as JSON null:
// its text is lost (journalctl -o json without --all, field ≥ 4096 bytes).
type Record map[string][]byte

// Fields ingest adds to an Entry.
const (
	// FieldLogLoss marks an entry holding a split line that could not be
	// reassembled (orphan pieces, missing pieces); the value says why. The
	// tracker raises a log_loss finding from it.
	FieldLogLoss = "ANALYZER_LOG_LOSS"
	// FieldLineCapped marks a piece of a line longer than
	// Options.MaxLineBytes, which was emitted as several entries.
	FieldLineCapped = "ANALYZER_LINE_CAPPED"
	// FieldPieces is the number of journal records joined into the entry
	// (set only when more than one, or for orphans).
	FieldPieces = "ANALYZER_PIECES"
	// FieldEndCursor is the __CURSOR of the last record joined into the
	// entry (the entry's Cursor is the first piece's).
	FieldEndCursor = "ANALYZER_END_CURSOR"
	// FieldCapped lists fields whose value was longer than the record cap
	// and was cut (export format only).
	FieldCapped = "ANALYZER_FIELD_CAPPED"
)

// mapped are the fields that become Entry struct members, not Fields.
var mapped = map[string]bool{
	"__CURSOR": true, "__REALTIME_TIMESTAMP": true, "_HOSTNAME": true,
	"_SYSTEMD_UNIT": true, "_SYSTEMD_INVOCATION_ID": true, "_PID": true,
	"SYSLOG_IDENTIFIER": true, "MESSAGE": true,
}

// Normalize converts one record into an Entry without any reassembly (see
// Assembler for that). Time is __REALTIME_TIMESTAMP (µs since the epoch; else
// _SOURCE_REALTIME_TIMESTAMP) in time.Local; the zero time when absent.
func Normalize(rec Record, source string) domain.Entry {
	msg, ok := rec["MESSAGE"]
	return normalize(rec, msg, ok && msg == nil, source)
}

// normalize builds the Entry of rec with msg as its raw MESSAGE.
func normalize(rec Record, msg []byte, truncated bool, source string) domain.Entry {
	e := domain.Entry{
		Cursor:       string(rec["__CURSOR"]),
		Host:         text(rec["_HOSTNAME"]),
		Unit:         text(rec["_SYSTEMD_UNIT"]),
		InvocationID: text(rec["_SYSTEMD_INVOCATION_ID"]),
		Identifier:   text(rec["SYSLOG_IDENTIFIER"]),
		Message:      CleanMessage(msg),
		Truncated:    truncated,
		Source:       source,
	}
	if t, ok := recordTime(rec); ok {
		e.Time = t
	}
	if v := rec["_PID"]; len(v) > 0 {
		if n, err := strconv.Atoi(string(v)); err == nil {
			e.PID = n
		}
	}
	if n := len(rec) - mappedIn(rec); n > 0 {
		e.Fields = fields(rec, n)
	}
	return e
}

// fields converts the n unmapped fields of rec to text. The values share
// one string (one allocation instead of one per field).
func fields(rec Record, n int) map[string]string {
	type span struct {
		k          string
		start, end int
	}
	var small [40]span
	spans := small[:0]
	size := 0
	for k, v := range rec {
		if !isMapped(k) {
			size += len(v)
		}
	}
	buf := make([]byte, 0, size)
	for k, v := range rec {
		if isMapped(k) {
			continue
		}
		start := len(buf)
		if utf8.Valid(v) {
			buf = append(buf, v...)
		} else {
			buf = append(buf, bytes.ToValidUTF8(v, []byte("\uFFFD"))...)
		}
		spans = append(spans, span{k, start, len(buf)})
	}
	// buf is not written again: share it as the string, as strings.Builder does.
	all := unsafe.String(unsafe.SliceData(buf), len(buf))
	m := make(map[string]string, n)
	for _, sp := range spans {
		m[sp.k] = all[sp.start:sp.end]
	}
	return m
}

// isMapped is mapped[k] without a map lookup (this runs for every field).
func isMapped(k string) bool {
	switch k {
	case "__CURSOR", "__REALTIME_TIMESTAMP", "_HOSTNAME", "_SYSTEMD_UNIT", "_SYSTEMD_INVOCATION_ID", "_PID",
		"SYSLOG_IDENTIFIER", "MESSAGE":
		return true
	}
	return false
}

// mappedIn counts the fields of rec that become Entry members.
func mappedIn(rec Record) int {
	n := 0
	for k := range mapped {
		if _, ok := rec[k]; ok {
			n++
		}
	}
	return n
}

// recordTime returns __REALTIME_TIMESTAMP, or _SOURCE_REALTIME_TIMESTAMP.
func recordTime(rec Record) (time.Time, bool) {
	for _, k := range [...]string{"__REALTIME_TIMESTAMP", "_SOURCE_REALTIME_TIMESTAMP"} {
		if v := rec[k]; len(v) > 0 {
			if us, err := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64); err == nil {
				return time.UnixMicro(us).In(time.Local), true
			}
		}
	}
	return time.Time{}, false
}

// text converts a field value to valid UTF-8.
func text(v []byte) string {
	if utf8.Valid(v) {
		return string(v)
	}
	return string(bytes.ToValidUTF8(v, []byte("\uFFFD")))
}
