package store

import (
	"bytes"
	"database/sql"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"

	"github.com/llmfleet/analyzer/domain"
)

// storedLines decodes attempt id's attempt_lines row ("": every row's
// lines), nil when there is none.
func storedLines(t *testing.T, db *DB, id string) []lineRec {
	t.Helper()
	rows, err := db.db.Query(`SELECT data FROM attempt_lines WHERE ? = '' OR attempt_id = ? ORDER BY attempt_id`, id, id)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []lineRec
	for rows.Next() {
		var data []byte
		if err := rows.Scan(&data); err != nil {
			t.Fatal(err)
		}
		lines, _, err := decodeLines(data)
		if err != nil {
			t.Fatalf("attempt_lines of %q: %v", id, err)
		}
		out = append(out, lines...)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// countLines counts the stored lines of attempt id ("": all) that match.
func countLines(t *testing.T, db *DB, id string, match func(lineRec) bool) int {
	t.Helper()
	n := 0
	for _, l := range storedLines(t, db, id) {
		if match(l) {
			n++
		}
	}
	return n
}

// TestLinesRoundTrip: every kind of line and mark comes back as stored: in
// one list or both, with and without a role, text inline or in the log,
// marks sharing a line's cursor and text (by reference), marks of their
// own, and marks whose text is a log line no evidence line holds.
func TestLinesRoundTrip(t *testing.T) {
	n := func(v int64) sql.NullInt64 { return sql.NullInt64{Int64: v, Valid: true} }
	lines := []lineRec{
		{evSeq: n(0), ctxSeq: n(3), role: sql.NullString{String: "finding,candidate", Valid: true},
			time: "2026-10-01T21:45:14.300002-07:00", cursor: "s=a;i=1", logSeq: n(53)},
		{evSeq: n(1), time: "2026-10-01T21:45:15-07:00", cursor: "s=a;i=2", message: "not in the log"},
		{ctxSeq: n(0), time: "", cursor: "", message: ""},
		{evSeq: n(2), role: sql.NullString{String: "", Valid: true}, time: "2026-10-01T21:45:16Z", cursor: "s=a;i=3", logSeq: n(0)},
	}
	marks := []markRec{
		{phase: "graph_capture", time: "2026-10-01T21:45:14.300002-07:00", cursor: "s=a;i=1", logSeq: n(53)},
		{phase: "loading", time: "2026-10-01T21:40:00-07:00", cursor: "s=a;i=2", message: "not in the log"},
		{phase: "starting", time: "2026-10-01T21:39:00-07:00", cursor: "s=a;i=0", message: "own text"},
		{phase: "ready", time: "2026-10-01T21:50:00-07:00", cursor: "s=a;i=9", logSeq: n(7)},
		{phase: "exited"},
	}
	data := encodeLines(lines, marks)
	if data[0] != codecZstd {
		t.Fatalf("format byte %d, want %d", data[0], codecZstd)
	}
	// A row written before zstd: the same bytes in DEFLATE.
	plain, err := decompress(data[1:], maxLinesBlob)
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range [][]byte{data, deflateRaw([]byte{codecDeflate}, plain)} {
		gotLines, gotMarks, err := decodeLines(row)
		if err != nil {
			t.Fatalf("format %d: %v", row[0], err)
		}
		if g, w := fmt.Sprintf("%+v", gotLines), fmt.Sprintf("%+v", lines); g != w {
			t.Errorf("format %d lines:\ngot  %s\nwant %s", row[0], g, w)
		}
		if g, w := fmt.Sprintf("%+v", gotMarks), fmt.Sprintf("%+v", marks); g != w {
			t.Errorf("format %d marks:\ngot  %s\nwant %s", row[0], g, w)
		}
	}
	// None: still a row that decodes to nothing.
	if l, m, err := decodeLines(encodeLines(nil, nil)); err != nil || len(l) != 0 || len(m) != 0 {
		t.Errorf("empty row: %d lines, %d marks, %v", len(l), len(m), err)
	}
}

// TestLinesRejectBadRows: a row this version did not write (another
// format, cut short, bytes changed, a count or length past its end, more
// than the cap decoded) is an error, never a panic.
func TestLinesRejectBadRows(t *testing.T) {
	good := encodeLines([]lineRec{{evSeq: sql.NullInt64{Valid: true}, time: "t", cursor: "c", message: "m"}},
		[]markRec{{phase: "p", cursor: "c", message: "m"}})
	raw := func(b []byte) []byte { return compress([]byte{codecZstd}, b) }
	bad := map[string][]byte{
		"empty":           nil,
		"other format":    append([]byte{codecZstd + 1}, good[1:]...),
		"cut short":       good[:len(good)/2],
		"not zstd":        {codecZstd, 0xff, 0xff, 0xff},
		"not deflate":     {codecDeflate, 0xff, 0xff, 0xff},
		"unstated size":   append([]byte{codecZstd}, zstdStream(t, []byte{0, 0})...),
		"two frames":      append(raw([]byte{0}), compress(nil, []byte{0})...),
		"deflate over":    deflateRaw([]byte{codecDeflate}, make([]byte, maxLinesBlob+1)),
		"huge count":      raw(binary.AppendUvarint(nil, 1<<40)),
		"count past end":  raw([]byte{5, 0}),
		"string past end": raw(append(binary.AppendUvarint([]byte{1, 0}, 100), 'x')),
		"mark past lines": raw([]byte{0, 1, 0, 0, 3}),
		"bad log flag":    raw([]byte{0, 1, 0, 0, 0, 0, 2, 0}),
		"trailing bytes":  raw([]byte{0, 0, 7}),
		"over the cap":    raw(make([]byte, maxLinesBlob+1)),
	}
	for name, data := range bad {
		if _, _, err := decodeLines(data); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	for i := 1; i < len(good); i++ {
		flipped := bytes.Clone(good)
		flipped[i] ^= 0x55
		_, _, _ = decodeLines(flipped) // may decode or fail; must not panic
	}
}

// FuzzDecodeLines: any row decodes or fails, without a panic, and what
// decodes encodes back to a row that decodes the same.
func FuzzDecodeLines(f *testing.F) {
	f.Add(encodeLines([]lineRec{{evSeq: sql.NullInt64{Valid: true}, time: "t", cursor: "c", logSeq: sql.NullInt64{Int64: 3, Valid: true}}},
		[]markRec{{phase: "p", cursor: "c", logSeq: sql.NullInt64{Int64: 3, Valid: true}}, {phase: "q", message: "own"}}))
	f.Add([]byte{codecZstd})
	f.Add(deflateRaw([]byte{codecDeflate}, []byte{1, 0, 0, 0, 0, 0}))
	f.Fuzz(func(t *testing.T, data []byte) {
		lines, marks, err := decodeLines(data)
		if err != nil {
			return
		}
		l2, m2, err := decodeLines(encodeLines(lines, marks))
		if err != nil {
			t.Fatalf("re-encoded row: %v", err)
		}
		if fmt.Sprintf("%+v %+v", l2, m2) != fmt.Sprintf("%+v %+v", lines, marks) {
			t.Fatalf("re-encoded row decodes differently")
		}
	})
}

// FuzzDecodeLogChunk: any chunk of any codec decodes or fails, without a
// panic, and what decodes encodes back to a chunk that decodes the same.
func FuzzDecodeLogChunk(f *testing.F) {
	lines := []domain.LogLine{{Seq: 3, Time: time.UnixMicro(1791008244840111).UTC(), Message: "INFO ready"}, {Seq: 9, Message: ""}}
	data := encodeLogChunk(lines)
	plain, err := decompress(data, maxLogChunk)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data, codecZstd)
	f.Add(deflateRaw(nil, plain), codecDeflate)
	f.Add(s2.Encode(nil, []byte{3, 2, 1, 'x'}), logS2)
	f.Fuzz(func(t *testing.T, data []byte, codec int) {
		got, err := decodeLogChunk(nil, data, codec, time.UTC, nil)
		if err != nil || len(got) == 0 || len(got) > logChunkLines*4 {
			return
		}
		for i := 1; i < len(got); i++ {
			if got[i].Seq <= got[i-1].Seq {
				return // not a chunk a save writes (an S2 row holds any order)
			}
		}
		again, err := decodeLogChunk(nil, encodeLogChunk(got), codecZstd, time.UTC, nil)
		if err != nil {
			t.Fatalf("re-encoded chunk: %v", err)
		}
		if fmt.Sprint(again) != fmt.Sprint(got) {
			t.Fatalf("re-encoded chunk decodes differently:\n%v\n%v", again, got)
		}
	})
}

// TestLogChunkRoundTrip: a chunk (zstd, or DEFLATE as stored before) gives back each line's seq (gaps
// kept), time (unknown ones, and times going back) and text; a chunk cut
// short or claiming more than it holds is an error.
func TestLogChunkRoundTrip(t *testing.T) {
	t0 := time.Date(2026, 10, 1, 21, 45, 14, 300002000, time.FixedZone("", -7*3600))
	lines := []domain.LogLine{
		{Seq: 0, Time: t0, Message: "first"},
		{Seq: 1, Message: "no time"},
		{Seq: 5, Time: t0.Add(-time.Second), Message: ""},
		{Seq: 6, Time: t0.Add(time.Hour), Message: "ünïcode \x00 bytes"},
	}
	data := encodeLogChunk(lines)
	plain, err := decompress(data, maxLogChunk)
	if err != nil {
		t.Fatal(err)
	}
	for codec, row := range map[int][]byte{codecZstd: data, codecDeflate: deflateRaw(nil, plain)} {
		got, err := decodeLogChunk(nil, row, codec, t0.Location(), nil)
		if err != nil {
			t.Fatalf("codec %d: %v", codec, err)
		}
		if len(got) != len(lines) {
			t.Fatalf("codec %d: %d lines, want %d", codec, len(got), len(lines))
		}
		for i, l := range got {
			w := lines[i]
			if l.Seq != w.Seq || l.Message != w.Message || !l.Time.Equal(w.Time) || l.Time.IsZero() != w.Time.IsZero() {
				t.Errorf("codec %d line %d = %+v, want %+v", codec, i, l, w)
			}
		}
		if _, err := decodeLogChunk(nil, row[:len(row)/2], codec, time.UTC, nil); err == nil {
			t.Errorf("codec %d: chunk cut short: no error", codec)
		}
	}
	if _, err := decodeLogChunk(nil, data, 7, time.UTC, nil); err == nil {
		t.Error("unknown codec: no error")
	}
	// A chunk that is right but for its size: one line longer than any a
	// save writes.
	big := encodeLogChunk([]domain.LogLine{{Seq: 0, Message: strings.Repeat("x", maxLogChunk)}})
	if _, err := decodeLogChunk(nil, big, codecZstd, time.UTC, nil); err == nil {
		t.Error("chunk over the cap: no error")
	}
	if _, err := decompress(compress(nil, make([]byte, 100)), 99); err == nil {
		t.Error("decompress: a 100-byte frame under a 99-byte cap: no error")
	}
	for name, b := range map[string][]byte{
		"count past end":  {9, 0, 0},
		"length past end": {1, 0, 0, 4, 'a'},
		"text left over":  {1, 0, 0, 1, 'a', 'b'},
		"seq over cap":    binary.AppendUvarint([]byte{1}, 1<<41),
	} {
		if _, err := decodeLogChunk(nil, compress(nil, b), codecZstd, time.UTC, nil); err == nil {
			t.Errorf("%s: no error", name)
		}
		if _, err := decodeLogChunk(nil, deflateRaw(nil, b), codecDeflate, time.UTC, nil); err == nil {
			t.Errorf("%s (DEFLATE): no error", name)
		}
	}
	// A chunk stored before 0011 (S2, absolute numbers) still reads.
	var old []byte
	for _, l := range lines[:1] {
		old = binary.AppendUvarint(old, uint64(l.Seq))
		old = binary.AppendVarint(old, l.Time.UnixMicro())
		old = binary.AppendUvarint(old, uint64(len(l.Message)))
		old = append(old, l.Message...)
	}
	if got, err := decodeLogChunk(nil, s2.Encode(nil, old), logS2, time.UTC, nil); err != nil || len(got) != 1 || got[0].Message != "first" {
		t.Errorf("S2 chunk: %+v, %v", got, err)
	}
}

// deflateRaw appends the DEFLATE stream of b to dst: a row as versions
// before zstd wrote it.
func deflateRaw(dst, b []byte) []byte {
	buf := bytes.NewBuffer(dst)
	w, _ := flate.NewWriter(buf, flate.DefaultCompression)
	_, _ = w.Write(b)
	_ = w.Close()
	return buf.Bytes()
}

// zstdStream is b as a zstd frame written as a stream: no size in its
// header.
func zstdStream(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := zstd.NewWriter(&buf, zstd.WithSingleSegment(false))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
