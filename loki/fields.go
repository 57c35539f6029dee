package loki

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"sort"
	"strconv"
	"strings"
	"unsafe"

	"github.com/grafana/loki/pkg/push"

	"github.com/llmfleet/analyzer/ingest"
)

// journalFields are the journald field names (systemd.journal-fields(7),
// plus those of podman, docker and systemd's unit records) that a lowercase
// label name maps back to: label "exit_code" is EXIT_CODE, "comm" is _COMM.
var journalFields = map[string]bool{}

func init() {
	for _, f := range strings.Fields(`
		MESSAGE MESSAGE_ID PRIORITY CODE_FILE CODE_LINE CODE_FUNC ERRNO TID
		SYSLOG_FACILITY SYSLOG_IDENTIFIER SYSLOG_PID SYSLOG_TIMESTAMP SYSLOG_RAW
		DOCUMENTATION INVOCATION_ID USER_INVOCATION_ID UNIT USER_UNIT
		JOB_TYPE JOB_RESULT JOB_ID N_RESTARTS EXIT_CODE EXIT_STATUS UNIT_RESULT CPU_USAGE_NSEC
		OBJECT_PID OBJECT_UID OBJECT_GID OBJECT_COMM OBJECT_EXE OBJECT_CMDLINE OBJECT_SYSTEMD_UNIT
		OBJECT_SYSTEMD_USER_UNIT OBJECT_SYSTEMD_INVOCATION_ID
		CONTAINER_NAME CONTAINER_ID CONTAINER_ID_FULL CONTAINER_TAG CONTAINER_LOG_EPOCH CONTAINER_LOG_ORDINAL
		CONTAINER_PARTIAL_MESSAGE CONTAINER_PARTIAL_ID CONTAINER_PARTIAL_ORDINAL CONTAINER_PARTIAL_LAST
		IMAGE_NAME
		_PID _UID _GID _COMM _EXE _CMDLINE _CAP_EFFECTIVE _AUDIT_SESSION _AUDIT_LOGINUID
		_SYSTEMD_CGROUP _SYSTEMD_SESSION _SYSTEMD_UNIT _SYSTEMD_USER_UNIT _SYSTEMD_USER_SLICE
		_SYSTEMD_SLICE _SYSTEMD_OWNER_UID _SYSTEMD_INVOCATION_ID _BOOT_ID _MACHINE_ID _HOSTNAME
		_TRANSPORT _STREAM_ID _LINE_BREAK _NAMESPACE _RUNTIME_SCOPE _SOURCE_REALTIME_TIMESTAMP
		_SOURCE_MONOTONIC_TIMESTAMP _SELINUX_CONTEXT`) {
		journalFields[f] = true
	}
}

// aliases are the short label names collectors use (and deploy/alloy's
// relabel rules produce) for journald fields.
var aliases = map[string]string{
	"host":                   "_HOSTNAME",
	"hostname":               "_HOSTNAME",
	"nodename":               "_HOSTNAME",
	"unit":                   "_SYSTEMD_UNIT",
	"systemd_unit":           "_SYSTEMD_UNIT",
	"invocation_id":          "_SYSTEMD_INVOCATION_ID",
	"systemd_invocation_id":  "_SYSTEMD_INVOCATION_ID",
	"pid":                    "_PID",
	"transport":              "_TRANSPORT",
	"stream_id":              "_STREAM_ID",
	"line_break":             "_LINE_BREAK",
	"boot_id":                "_BOOT_ID",
	"machine_id":             "_MACHINE_ID",
	"identifier":             "SYSLOG_IDENTIFIER",
	"syslog_identifier":      "SYSLOG_IDENTIFIER",
	"container":              "CONTAINER_NAME",
	"cursor":                 "__CURSOR",
	"journal_cursor":         "__CURSOR",
	"realtime_timestamp":     "__REALTIME_TIMESTAMP",
	"object_unit":            "OBJECT_SYSTEMD_UNIT",
	"podman_systemd_unit":    "PODMAN_SYSTEMD_UNIT",
	"systemd_cgroup":         "_SYSTEMD_CGROUP",
	"systemd_slice":          "_SYSTEMD_SLICE",
	"systemd_user_unit":      "_SYSTEMD_USER_UNIT",
	"container_partial_last": "CONTAINER_PARTIAL_LAST",
}

// ignored are labels that carry no journald field: collector bookkeeping
// and names Loki derives itself.
var ignored = map[string]bool{
	"job": true, "service_name": true, "detected_level": true, "level": true, "priority_keyword": true,
	"filename": true, "agent": true, "instance": true, "__journal_priority_keyword": true,
}

// FieldName maps a stream label or structured-metadata name to the journald
// field it carries, or "" for a name to ignore:
//
//   - names as journald writes them (UNIT, INVOCATION_ID, _SYSTEMD_UNIT,
//     _PID, PODMAN_EVENT, …) are kept;
//   - Promtail/Alloy's internal __journal_<lowercased field> names, when a
//     collector forwards them, map back to the field (__journal__systemd_unit
//     → _SYSTEMD_UNIT);
//   - short names map by convention: host/hostname → _HOSTNAME, unit →
//     _SYSTEMD_UNIT, invocation_id → _SYSTEMD_INVOCATION_ID, pid → _PID,
//     cursor → __CURSOR, container → CONTAINER_NAME, … (lowercase unit and
//     invocation_id are the writer's, as in the journal's _SYSTEMD_*; PID 1's
//     records name their subject in UNIT and INVOCATION_ID, upper case);
//   - other lowercase names of journald fields map to them (exit_code →
//     EXIT_CODE, message_id → MESSAGE_ID, comm → _COMM), and podman_*,
//     container_* and object_* names to their upper case;
//   - anything else is kept under its own name (it lands in Entry.Fields).
func FieldName(name string) string {
	if strings.HasPrefix(name, "__journal_") {
		if name == "__journal_priority_keyword" {
			return ""
		}
		return strings.ToUpper(strings.TrimPrefix(name, "__journal_"))
	}
	if strings.HasPrefix(name, "__") {
		return "" // reserved labels never carry data
	}
	if ignored[name] {
		return ""
	}
	if isUpperName(name) {
		return name
	}
	if f, ok := aliases[name]; ok {
		return f
	}
	up := strings.ToUpper(name)
	if journalFields[up] {
		return up
	}
	if journalFields["_"+up] {
		return "_" + up
	}
	for _, p := range []string{"PODMAN_", "CONTAINER_", "OBJECT_", "_SYSTEMD_"} {
		if strings.HasPrefix(up, p) {
			return up
		}
	}
	return name
}

// isUpperName reports whether s looks like a journald field name: upper-case
// letters, digits and underscores, with at least one letter.
func isUpperName(s string) bool {
	letter := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'A' && c <= 'Z':
			letter = true
		case c == '_' || (c >= '0' && c <= '9'):
		default:
			return false
		}
	}
	return letter
}

// fieldRank orders two names that map to the same field: a journald name
// as written beats a convention.
func fieldRank(name string) int {
	switch {
	case isUpperName(name):
		return 2
	case strings.HasPrefix(name, "__journal_"):
		return 1
	}
	return 0
}

// StreamFields maps a stream's labels to journald fields (see FieldName).
func StreamFields(labels push.LabelsAdapter) map[string]string {
	out := make(map[string]string, len(labels))
	rank := make(map[string]int, len(labels))
	for _, l := range labels {
		f := FieldName(l.Name)
		if f == "" || l.Value == "" {
			continue
		}
		if r, ok := rank[f]; ok && r > fieldRank(l.Name) {
			continue
		}
		out[f], rank[f] = l.Value, fieldRank(l.Name)
	}
	return out
}

// streamFields are a stream's fields, mapped once for all its entries,
// and a hash that names the stream in synthetic cursors.
type streamFields struct {
	m    map[string]string
	hash string // 16 hex digits
}

func newStreamFields(labels push.LabelsAdapter) *streamFields {
	return fieldsOf(StreamFields(labels))
}

func fieldsOf(m map[string]string) *streamFields {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h := sha1.New()
	for _, k := range keys {
		h.Write([]byte(k))
		h.Write([]byte{0})
		h.Write([]byte(m[k]))
		h.Write([]byte{0})
	}
	return &streamFields{m: m, hash: hex.EncodeToString(h.Sum(nil)[:8])}
}

// Record builds the journal record of one pushed line: the stream's fields,
// the entry's structured metadata (which wins over a stream label for the
// same field), MESSAGE = the line and __REALTIME_TIMESTAMP = the entry's
// time in µs. A line that is itself a journal record in JSON (Alloy's
// format_as_json, Promtail's json: true) is parsed as one, and the labels
// only fill in fields it lacks. __CURSOR is kept when the sender provides
// one; otherwise the record gets a stable synthetic cursor
// ("loki;s=STREAM;t=µs;x=HASH", STREAM a hash of the stream's fields and
// HASH of the record's: some 60 bytes, whatever the labels), used for
// evidence and to drop a record pushed twice. The record's values are
// read-only: those of stream fields share the stream's memory.
func Record(stream map[string]string, e *push.Entry) ingest.Record {
	return recordOf(fieldsOf(stream), e)
}

// readOnly is s as bytes without a copy: the records of a stream's
// entries share its labels (a 2 KB label on 100,000 entries would
// otherwise be 200 MB), and nothing writes into a record's values.
func readOnly(s string) []byte {
	return unsafe.Slice(unsafe.StringData(s), len(s))
}

func recordOf(sf *streamFields, e *push.Entry) ingest.Record {
	var rec ingest.Record
	if line := strings.TrimSpace(e.Line); strings.HasPrefix(line, "{") && strings.HasSuffix(line, "}") {
		if r, err := ingest.ParseJSONRecord([]byte(line)); err == nil && isJournalJSON(r) {
			rec = r
		}
	}
	fromJSON := rec != nil
	if rec == nil {
		rec = make(ingest.Record, len(sf.m)+len(e.StructuredMetadata)+3)
	}
	set := func(f, v string) {
		if _, ok := rec[f]; ok && fromJSON {
			return
		}
		rec[f] = readOnly(v)
	}
	for f, v := range sf.m {
		set(f, v)
	}
	var rank map[string]int
	for _, l := range e.StructuredMetadata {
		f := FieldName(l.Name)
		if f == "" || l.Value == "" {
			continue
		}
		if rank == nil {
			rank = map[string]int{}
		}
		if r, ok := rank[f]; ok && r > fieldRank(l.Name) {
			continue
		}
		rank[f] = fieldRank(l.Name)
		set(f, l.Value)
	}
	if !fromJSON {
		rec["MESSAGE"] = readOnly(e.Line)
	}
	if _, ok := rec["__REALTIME_TIMESTAMP"]; !ok || !fromJSON {
		if !e.Timestamp.IsZero() {
			rec["__REALTIME_TIMESTAMP"] = []byte(strconv.FormatInt(e.Timestamp.UnixMicro(), 10))
		}
	}
	if len(rec["__CURSOR"]) == 0 {
		rec["__CURSOR"] = []byte(syntheticCursor(sf, rec))
	}
	return rec
}

// isJournalJSON reports whether a JSON line is a journal record: it has
// MESSAGE and at least one trusted (underscore) field.
func isJournalJSON(r ingest.Record) bool {
	if _, ok := r["MESSAGE"]; !ok {
		return false
	}
	for k := range r {
		if strings.HasPrefix(k, "_") {
			return true
		}
	}
	return false
}

// syntheticCursor names a record that came without __CURSOR: its
// stream's hash, time and a hash of every field, so the same record pushed
// again gets the same cursor. Fields equal to the stream's are hashed in
// the stream's hash already: a record costs its own bytes only.
func syntheticCursor(sf *streamFields, rec ingest.Record) string {
	keys := make([]string, 0, len(rec))
	for k, v := range rec {
		if sv, ok := sf.m[k]; ok && len(sv) == len(v) && (len(v) == 0 || &readOnly(sv)[0] == &v[0]) {
			continue // the stream's own value, shared
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h := sha1.New()
	h.Write([]byte(sf.hash))
	for _, k := range keys {
		h.Write([]byte(k))
		h.Write([]byte{0})
		h.Write(rec[k])
		h.Write([]byte{0})
	}
	sum := h.Sum(nil)
	var b bytes.Buffer
	b.WriteString("loki;s=")
	b.WriteString(sf.hash)
	b.WriteString(";t=")
	b.Write(rec["__REALTIME_TIMESTAMP"])
	b.WriteString(";x=")
	b.WriteString(hex.EncodeToString(sum[:8]))
	return b.String()
}
