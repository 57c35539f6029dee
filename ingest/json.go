package ingest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/llmfleet/analyzer/domain"
)

// ParseJSONRecord parses one object of journalctl -o json / json-seq
// (journalctl(1); https://systemd.io/JOURNAL_EXPORT_FORMATS/#journal-json-format).
// A value may be a string; null (field ≥ 4096 bytes without --all) → nil; an
// array of byte numbers (ANSI, '\r', invalid UTF-8) → those bytes; an array
// of values (repeated field) → its last value; a number or boolean → its
// JSON text. Errors: invalid JSON, a value of another type, a byte > 255.
func ParseJSONRecord(line []byte) (Record, error) {
	rec, ok, over := fastJSONRecord(line)
	switch {
	case ok:
		return rec, nil
	case over:
		return nil, errTooManyFields
	}
	return slowJSONRecord(line)
}

// maxRecordFields bounds the fields of one record. journald stores at most
// 1024 fields per entry (ENTRY_FIELD_COUNT_MAX, its fix of CVE-2018-16865)
// and adds its own trusted ones; a record with more did not come from a
// journal, and each field would cost memory.
const maxRecordFields = 2048

var errTooManyFields = fmt.Errorf("more than %d fields (journald stores at most 1024 per entry)", maxRecordFields)

// maxSlowJSON bounds the lines slowJSONRecord decodes: it runs only on
// lines the fast parser refused, to word the error, and encoding/json
// holds a whole object's members at once.
const maxSlowJSON = 1 << 20

// maxJournalDepth is how deep journalctl -o json nests: the record
// object, a repeated field's array of values, a value's byte array.
const maxJournalDepth = 3

// maxAppDepth bounds the nesting of an application's JSON log line (its
// message is at most two objects down; real loggers nest a few levels).
const maxAppDepth = 32

// jsonDepth returns the deepest nesting of arrays and objects in b, a JSON
// text, looking no further than limit+1: one pass, strings skipped. It
// bounds the depth before a decoder descends (encoding/json allows 10000,
// and jsonArray re-decodes each level).
func jsonDepth(b []byte, limit int) int {
	depth, deepest := 0, 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '"':
			for i++; i < len(b) && b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
		case '[', '{':
			if depth++; depth > deepest {
				if deepest = depth; deepest > limit {
					return deepest
				}
			}
		case ']', '}':
			depth--
		}
	}
	return deepest
}

// slowJSONRecord is ParseJSONRecord with encoding/json.
func slowJSONRecord(line []byte) (Record, error) {
	if len(line) > maxSlowJSON {
		return nil, fmt.Errorf("not a flat JSON object as journalctl prints (a line of %d bytes, not decoded further)", len(line))
	}
	if d := jsonDepth(line, maxJournalDepth); d > maxJournalDepth {
		return nil, fmt.Errorf("not a journal record: JSON nested more than %d deep (journalctl writes %d)", d-1, maxJournalDepth)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(line, &raw); err != nil {
		return nil, err
	}
	rec := make(Record, len(raw))
	for k, v := range raw {
		b, err := jsonValue(v)
		if err != nil {
			return nil, fmt.Errorf("field %s: %w", k, err)
		}
		rec[k] = b
	}
	return rec, nil
}

// jsonValue decodes one field value (see ParseJSONRecord).
func jsonValue(v []byte) ([]byte, error) {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return nil, errors.New("empty value")
	}
	switch c := v[0]; {
	case c == '"':
		if s := v[1 : len(v)-1]; bytes.IndexByte(s, '\\') < 0 {
			return append([]byte{}, s...), nil
		}
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return nil, err
		}
		return []byte(s), nil
	case c == 'n':
		return nil, nil
	case c == '[':
		return jsonArray(v)
	case c == 't' || c == 'f' || c == '-' || (c >= '0' && c <= '9'):
		return append([]byte{}, v...), nil
	}
	return nil, fmt.Errorf("unexpected JSON value %.20q", v)
}

// jsonArray decodes a byte-number array, or returns the last value of an
// array of values (a repeated field).
func jsonArray(v []byte) ([]byte, error) {
	inner := bytes.TrimSpace(v[1 : len(v)-1])
	if len(inner) == 0 {
		return []byte{}, nil
	}
	if c := inner[0]; c >= '0' && c <= '9' {
		first := len(v) - 1 - len(bytes.TrimLeft(v[1:], " \t\n\r"))
		out, next, err := scanByteArray(make([]byte, 0, len(inner)/3+1), v, first+1, false)
		if err == nil && next != len(v) {
			err = fmt.Errorf("unexpected %q after byte array", v[next:])
		}
		return out, err
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(v, &elems); err != nil {
		return nil, err
	}
	return jsonValue(elems[len(elems)-1])
}

// readJSON reads journalctl -o json or json-seq: one object per line, an
// optional RS (0x1E) before it (RFC 7464). Blank lines and journalctl's
// "-- ..." info lines are skipped; any other bad line is counted as
// malformed and skipped.
func (r *run) readJSON() error {
	lr := r.lineReader()
	asm := NewAssembler(r.source, r.opt)
	var (
		rec flatRecord // the line's record; its values alias the line
		kc  = keyCache{keep: asm.keep}
		app int // 0 undecided, 1 journald records, 2 an application's JSON lines
	)
	var off, at int64 // offset of the next line, and of this one
	for lineNo := 1; ; lineNo++ {
		// A journald record is parsed where the read buffer holds it,
		// its line's end found by the parse (parseFlatLine); anything
		// else, or a line that does not end in the buffer, is read as a
		// line first.
		if rest := lr.rest(inPlaceLine); app == 1 && len(rest) > 0 && rest[0] == '{' {
			if n, ok := parseFlatLine(&rec, &kc, rest); ok {
				lr.skip(n + 1)
				off += int64(n + 1)
				if err := r.pushFlat(asm, &rec); err != nil {
					return err
				}
				continue
			}
		}
		line, n, long, err := lr.next()
		at, off = off, off+n
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if lineNo == 1 {
			line = bytes.TrimPrefix(line, bom)
		}
		line = trimRecord(line)
		if r.st.Records == 0 && r.st.Malformed == 0 && string(line) == "{" {
			return fmt.Errorf("ingest: line %d: multi-line JSON (journalctl -o json-pretty?) is not supported; use -o json or -o export", lineNo)
		}
		switch {
		case len(line) == 0, bytes.HasPrefix(line, []byte("-- ")):
			continue
		case long:
			r.malformed("%s:%d (byte %d): line longer than %d bytes, skipped", r.source, lineNo, at, r.recordCap)
			continue
		case line[0] != '{':
			r.malformed("%s:%d (byte %d): not a JSON object: %.40q", r.source, lineNo, at, line)
			continue
		}
		if app == 0 {
			app = 1
			if appLog(line) {
				app = 2
			}
		}
		if app == 2 {
			if err := r.appEntry(line, lineNo); err != nil {
				return err
			}
			continue
		}
		if !parseFlat(&rec, &kc, line) {
			if rec.over {
				r.malformed("%s:%d (byte %d): bad JSON record: %v", r.source, lineNo, at, errTooManyFields)
				continue
			}
			slow, perr := slowJSONRecord(line)
			if perr != nil {
				r.malformed("%s:%d (byte %d): bad JSON record: %v", r.source, lineNo, at, perr)
				continue
			}
			rec.fromMap(slow, asm.keep)
		}
		if err := r.pushFlat(asm, &rec); err != nil {
			return err
		}
	}
	return r.flush(asm)
}

// inPlaceLine is how far past a line's start parseFlatLine looks for its
// end, in bytes: a longer line is read as a line (parsed twice). It also
// sizes the decode buffer a flatRecord keeps. A variable so that tests
// take both ways.
var inPlaceLine = 64 << 10

// trimRecord cuts what may surround a JSON line's object: a json-seq
// record separator (RFC 7464), blanks, and a '\r' on either side. It is
// bytes.TrimRight(bytes.TrimLeft(line, "\x1e \t\r"), " \t\r") without
// building the cutsets for each line: a journalctl line has nothing to cut.
func trimRecord(line []byte) []byte {
	for len(line) > 0 {
		if c := line[0]; c != 0x1e && c != ' ' && c != '\t' && c != '\r' {
			break
		}
		line = line[1:]
	}
	for n := len(line); n > 0; n-- {
		if c := line[n-1]; c != ' ' && c != '\t' && c != '\r' {
			break
		}
		line = line[:n-1]
	}
	return line
}

// appLog reports whether a JSON line is an application's log record (a
// service's structured logging, docker's json-file driver, TGI's
// --json-output) rather than a journald record: it has a message field
// under another name and none of journald's.
func appLog(line []byte) bool {
	var m map[string]any
	if jsonDepth(line, maxAppDepth) > maxAppDepth || json.Unmarshal(line, &m) != nil {
		return false
	}
	for _, k := range []string{"MESSAGE", "__CURSOR", "__REALTIME_TIMESTAMP", "_HOSTNAME", "_SYSTEMD_UNIT"} {
		if _, ok := m[k]; ok {
			return false
		}
	}
	_, ok := appField(m, appMessageKeys)
	return ok
}

// Where applications put a record's message, time and level (Go's slog and
// logrus, Python's structlog and json loggers, Rust's tracing, docker's
// json-file driver, Bunyan).
var (
	appMessageKeys = []string{"msg", "message", "log", "text", "fields.message", "event"}
	appTimeKeys    = []string{"time", "timestamp", "ts", "@timestamp", "asctime", "datetime"}
	appLevelKeys   = []string{"level", "levelname", "severity", "lvl", "log.level"}
)

// appField returns the first of keys (a dot goes one object down) that m
// holds as a string.
func appField(m map[string]any, keys []string) (string, bool) {
	for _, k := range keys {
		v := any(m)
		for _, part := range strings.Split(k, ".") {
			obj, ok := v.(map[string]any)
			if !ok {
				v = nil
				break
			}
			v = obj[part]
		}
		if s, ok := v.(string); ok {
			return s, true
		}
	}
	return "", false
}

// appEntry emits one application JSON record as a line of plain text: its
// level, then its message (multi-line messages split as text lines are),
// at its time.
func (r *run) appEntry(line []byte, lineNo int) error {
	var m map[string]any
	if d := jsonDepth(line, maxAppDepth); d > maxAppDepth {
		r.malformed("%s:%d: bad JSON record: nested more than %d deep", r.source, lineNo, maxAppDepth)
		return nil
	}
	if err := json.Unmarshal(line, &m); err != nil {
		r.malformed("%s:%d: bad JSON record: %v", r.source, lineNo, err)
		return nil
	}
	msg, ok := appField(m, appMessageKeys)
	if !ok {
		r.malformed("%s:%d: JSON record without a message field", r.source, lineNo)
		return nil
	}
	if lv, ok := appField(m, appLevelKeys); ok && !strings.Contains(msg, strings.ToUpper(lv)) {
		msg = strings.ToUpper(lv) + " " + msg
	}
	if err := r.tick(); err != nil {
		return err
	}
	e := domain.Entry{Cursor: r.source + ":" + strconv.Itoa(lineNo), Source: r.source, Message: CleanMessage([]byte(strings.TrimRight(msg, "\n")))}
	if ts, ok := appField(m, appTimeKeys); ok {
		if t, ok := parseStamp(ts); ok {
			e.Time = t
		}
	}
	return r.emit(e)
}
