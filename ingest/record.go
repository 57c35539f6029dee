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
	// FieldPasted marks a unit lifecycle record read back from pasted
	// journalctl output (no MESSAGE_ID or INVOCATION_ID of its own).
	FieldPasted = "ANALYZER_PASTED"
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

// Normalize converts one record into an Entry without any reassembly (see
// Assembler for that). Time is __REALTIME_TIMESTAMP (µs since the epoch; else
// _SOURCE_REALTIME_TIMESTAMP) in time.Local; the zero time when absent.
func Normalize(rec Record, source string) domain.Entry {
	var r flatRecord
	r.fromMap(rec, nil)
	msg, ok := r.lookup(slotMessage)
	var c textCache
	return c.normalize(&r, msg, ok && msg == nil, source)
}

// textCache keeps the last Host, Unit, InvocationID and Identifier, and
// the last Fields map: a record usually repeats its predecessor's (the
// lines of one stream differ in MESSAGE and the cursor, not in _TRANSPORT
// or CONTAINER_NAME), which then costs no allocation.
type textCache struct {
	s       [4]string
	fields  fieldsMemo
	scratch []byte // cleanMessage's buffer
}

// text is text(v), reusing the cached string i when v equals it.
func (c *textCache) text(i int, v []byte) string {
	if c.s[i] == string(v) {
		return c.s[i]
	}
	if !utf8.Valid(v) {
		return text(v) // not cached: the cache compares raw bytes
	}
	c.s[i] = string(v)
	return c.s[i]
}

// fieldsMemo is the last Fields map fields built and the raw fields it came
// from (names and values, in record order).
type fieldsMemo struct {
	names []string
	vals  []byte // the values, end to end
	ends  []int  // where each value ends in vals
	m     map[string]string
	gen   uint64 // flatRecord.gen of the last record m was found for
}

// same tells whether the kept fields of r are the ones m was built from.
func (f *fieldsMemo) same(r *flatRecord) bool {
	if f.m == nil {
		return false
	}
	k, start := 0, 0
	for i, v := range r.vals {
		if !r.kept[i] {
			continue
		}
		if k == len(f.names) || f.names[k] != r.names[i] || string(f.vals[start:f.ends[k]]) != string(v) {
			return false
		}
		start = f.ends[k]
		k++
	}
	return k == len(f.names)
}

// remember records r's kept fields as the ones m was built from.
func (f *fieldsMemo) remember(r *flatRecord, m map[string]string) {
	f.names, f.vals, f.ends, f.m = f.names[:0], f.vals[:0], f.ends[:0], m
	for i, v := range r.vals {
		if r.kept[i] {
			f.names = append(f.names, r.names[i])
			f.vals = append(f.vals, v...)
			f.ends = append(f.ends, len(f.vals))
		}
	}
}

// normalize builds the Entry of r with msg as its raw MESSAGE.
func (c *textCache) normalize(r *flatRecord, msg []byte, truncated bool, source string) domain.Entry {
	t, hasTime := recordTime(r)
	return c.normalizeAt(r, msg, truncated, source, t, hasTime)
}

// normalizeAt is normalize for a record whose recordTime the caller has
// already read (t, hasTime).
func (c *textCache) normalizeAt(r *flatRecord, msg []byte, truncated bool, source string, t time.Time, hasTime bool) domain.Entry {
	e := domain.Entry{
		Cursor:       string(r.get(slotCursor)),
		Host:         c.text(0, r.get(slotHostname)),
		Unit:         c.text(1, r.get(slotUnit)),
		InvocationID: c.text(2, r.get(slotInvocation)),
		Identifier:   c.text(3, r.get(slotIdentifier)),
		Truncated:    truncated,
		Source:       source,
		Journal:      true,
	}
	e.Message, c.scratch = cleanMessage(c.scratch, msg)
	if cap(c.scratch) > maxArena {
		c.scratch = nil
	}
	if hasTime {
		e.Time = t
	}
	if v := r.get(slotPID); len(v) > 0 {
		if n, err := strconv.Atoi(string(v)); err == nil {
			e.PID = n
		}
	}
	// Entries share an unchanged Fields map: it is read-only (Entry.Fields).
	if r.keptFrom != 0 && r.keptFrom == c.fields.gen && c.fields.m != nil || c.fields.same(r) {
		e.Fields = c.fields.m
	} else {
		e.Fields = fields(r)
		c.fields.remember(r, e.Fields)
	}
	c.fields.gen = r.gen
	return e
}

// fields converts the fields of r kept for Entry.Fields to text (nil when
// there are none). The values share one string (one allocation instead of one per
// field); a repeated name keeps its last value.
func fields(r *flatRecord) map[string]string {
	type span struct{ start, end int }
	var small [48]span
	spans := small[:0]
	size, n := 0, 0
	for i, v := range r.vals {
		if r.kept[i] {
			size += len(v)
			n++
		}
	}
	if n == 0 {
		return nil
	}
	buf := make([]byte, 0, size)
	for i, v := range r.vals {
		if !r.kept[i] {
			spans = append(spans, span{-1, -1})
			continue
		}
		start := len(buf)
		if utf8.Valid(v) {
			buf = append(buf, v...)
		} else {
			buf = append(buf, bytes.ToValidUTF8(v, []byte("\uFFFD"))...)
		}
		spans = append(spans, span{start, len(buf)})
	}
	// buf is not written again: share it as the string, as strings.Builder does.
	all := unsafe.String(unsafe.SliceData(buf), len(buf))
	m := make(map[string]string, n)
	for i, sp := range spans {
		if sp.start >= 0 {
			m[r.names[i]] = all[sp.start:sp.end]
		}
	}
	return m
}

// inFields reports whether field name of slot s goes to Entry.Fields: not
// an Entry member, and kept. Unslotted fields were checked when parsed;
// slotted ones, which reassembly reads from the record, are checked here.
func (keep fieldSet) inFields(name string, s int8) bool {
	switch {
	case s == slotDropped || isMappedSlot(s):
		return false
	case s == slotNone || keep == nil:
		return true
	}
	return keep[name]
}

// recordTime returns __REALTIME_TIMESTAMP, or _SOURCE_REALTIME_TIMESTAMP.
func recordTime(r *flatRecord) (time.Time, bool) {
	if r.realtimeOK {
		return time.UnixMicro(r.realtime).In(time.Local), true
	}
	for _, s := range [...]int8{slotRealtime, slotSourceRealtime} {
		if v := r.get(s); len(v) > 0 {
			if us, ok := digits(v); ok {
				return time.UnixMicro(us).In(time.Local), true
			}
			if us, err := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64); err == nil {
				return time.UnixMicro(us).In(time.Local), true
			}
		}
	}
	return time.Time{}, false
}

// digits reads v as a decimal number of 1 to 18 digits and nothing else
// (how journald writes its timestamps); ok is false for anything else,
// which strconv then reads.
func digits(v []byte) (n int64, ok bool) {
	if len(v) == 0 || len(v) > 18 {
		return 0, false
	}
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// text converts a field value to valid UTF-8.
func text(v []byte) string {
	if utf8.Valid(v) {
		return string(v)
	}
	return string(bytes.ToValidUTF8(v, []byte("\uFFFD")))
}
