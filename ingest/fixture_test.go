package ingest

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/llmfleet/analyzer/domain"
)

const fixtures = "../examples" // the shared fixtures' journals, as the repository holds them

// Real cursors and timestamps of the fixtures.
const (
	// dankserver-night-ladder: first conmon CONTAINER_PARTIAL_MESSAGE piece
	// (line 760) of a 3-piece vLLM error line, and its final piece (762).
	conmonFirstCursor = "s=2aabfe228f219e9cb0eb53f16947ccf2;i=12f8;b=a4c123b1612dd272d1371c17149d4395;m=3612c601c;t=65cd6aa99641c;x=18db27ac6c6a0a66"
	conmonLastCursor  = "s=2aabfe228f219e9cb0eb53f16947ccf2;i=12fa;b=a4c123b1612dd272d1371c17149d4395;m=3612c6404;t=65cd6aa996804;x=e256e64836e24cb7"
	conmonFirstUsec   = 1790926915200028
	// second occurrence (lines 807-809)
	conmonFirstCursor2 = "s=2aabfe228f219e9cb0eb53f16947ccf2;i=1327;b=a4c123b1612dd272d1371c17149d4395;m=37473173a;t=65cd6bde01b3a;x=aa585e2373ab8562"
	// line 16: "(Worker_TP0 pid=271) \rLoading safetensors ..." (byte array)
	tqdmCursor = "s=2aabfe228f219e9cb0eb53f16947ccf2;i=1010;b=a4c123b1612dd272d1371c17149d4395;m=d9ecad0b;t=65cd42359b10b;x=4072014b3ce107f8"
	// line 6: ANSI-coloured "(APIServer pid=1) INFO ..." (byte array)
	ansiCursor = "s=2aabfe228f219e9cb0eb53f16947ccf2;i=1006;b=a4c123b1612dd272d1371c17149d4395;m=d6d0ad00;t=65cd4203db100;x=e73cf575dcad6ba2"
	// dankclaw-day: _LINE_BREAK=line-max piece (line 61) and its end (62).
	lineMaxFirstCursor = "s=cc42fcd15a82c7790770528e070a6bcd;i=103d;b=91fbb51674c3aefc7d19c6d36a65f55f;m=1474a02c0;t=65cca1da892c0;x=28b71f9fcce50933"
	lineMaxLastCursor  = "s=cc42fcd15a82c7790770528e070a6bcd;i=103e;b=91fbb51674c3aefc7d19c6d36a65f55f;m=1474a02c0;t=65cca1da892c0;x=b071faef61ed6631"
	// dankclaw-day line 12: "\rCapturing batches ..." (byte array)
	sglangTqdmCursor = "s=cc42fcd15a82c7790770528e070a6bcd;i=100c;b=91fbb51674c3aefc7d19c6d36a65f55f;m=d8a82c20;t=65cc9af06bc20;x=65cef363dd5bb54d"
)

func fixture(t *testing.T, name string) []byte { return fixtureBytes(t, name) }

func fixtureBytes(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtures, name+".journal.json"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func fixtureLines(t *testing.T, name string) [][]byte {
	var out [][]byte
	for _, l := range bytes.Split(fixture(t, name), []byte("\n")) {
		if len(bytes.TrimSpace(l)) > 0 {
			out = append(out, l)
		}
	}
	return out
}

func readAll(t *testing.T, data []byte, source string, opt Options) ([]domain.Entry, Stats) {
	t.Helper()
	var es []domain.Entry
	st, err := Read(context.Background(), bytes.NewReader(data), source, opt, func(e domain.Entry) error {
		es = append(es, e)
		return nil
	})
	if err != nil {
		t.Fatalf("Read %s: %v", source, err)
	}
	if st.Entries != int64(len(es)) {
		t.Fatalf("Stats.Entries = %d, fn saw %d", st.Entries, len(es))
	}
	return es, st
}

func byCursor(es []domain.Entry, c string) *domain.Entry {
	for i := range es {
		if es[i].Cursor == c {
			return &es[i]
		}
	}
	return nil
}

func TestFixtureCounts(t *testing.T) {
	cases := []struct {
		name             string
		records, entries int64
	}{
		// 6 conmon pieces form 2 lines: 870 - 4.
		{"dankserver-night-ladder", 870, 866},
		// 2 line-max records form 1 line: 66 - 1.
		{"dankclaw-day", 66, 65},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var es []domain.Entry
			st, err := ReadFile(context.Background(), filepath.Join(fixtures, c.name+".journal.json"), Options{},
				func(e domain.Entry) error { es = append(es, e); return nil })
			if err != nil {
				t.Fatal(err)
			}
			if st.Format != FormatJSON || st.Records != c.records || st.Entries != c.entries ||
				st.Malformed != 0 || st.Orphans != 0 || st.Truncated != 0 {
				t.Fatalf("stats %+v, want json, %d records, %d entries, nothing malformed", st, c.records, c.entries)
			}
			if fi, _ := os.Stat(filepath.Join(fixtures, c.name+".journal.json")); st.Bytes != fi.Size() {
				t.Errorf("Bytes = %d, want file size %d", st.Bytes, fi.Size())
			}
			for _, e := range es {
				if strings.ContainsAny(e.Message, "\x1b\r") || !utf8.ValidString(e.Message) {
					t.Errorf("%s: message not clean: %q", e.Cursor, e.Message)
				}
				if strings.HasSuffix(e.Message, "\n") {
					t.Errorf("%s: trailing newline kept", e.Cursor)
				}
				if e.Cursor == "" || e.Host == "" || e.Unit == "" || e.Time.IsZero() || e.PID == 0 ||
					e.Identifier == "" || e.Source == "" || e.Field("_TRANSPORT") == "" {
					t.Errorf("%s: missing journal metadata: %+v", e.Cursor, e)
				}
				for _, k := range []string{"MESSAGE", "__CURSOR", "__REALTIME_TIMESTAMP", "_PID", "_HOSTNAME"} {
					if _, ok := e.Fields[k]; ok {
						t.Errorf("%s: %s left in Fields", e.Cursor, k)
					}
				}
			}
		})
	}
}

func TestConmonPartialReassembly(t *testing.T) {
	es, _ := readAll(t, fixture(t, "dankserver-night-ladder"), "night", Options{})
	var hits []domain.Entry
	for _, e := range es {
		if strings.Contains(e.Message, "specialized it to be a constant (3)") {
			hits = append(hits, e)
		}
	}
	if len(hits) != 2 {
		t.Fatalf("%d entries hold the reassembled dynamo line, want 2", len(hits))
	}
	e := hits[0]
	if e.Cursor != conmonFirstCursor || hits[1].Cursor != conmonFirstCursor2 {
		t.Errorf("cursors %s, %s: want the first pieces' cursors", e.Cursor, hits[1].Cursor)
	}
	if !e.Time.Equal(time.UnixMicro(conmonFirstUsec)) {
		t.Errorf("time %v, want the first piece's %v", e.Time, time.UnixMicro(conmonFirstUsec))
	}
	// 8192 + 8192 + 358 raw bytes, minus conmon's final '\n' and two ANSI
	// sequences (7 + 6 bytes).
	if len(e.Message) != 16728 {
		t.Errorf("reassembled length %d, want 16728", len(e.Message))
	}
	if !strings.HasPrefix(e.Message, "(EngineCore pid=253) ERROR 10-02 00:41:55 [core.py:708] (EngineCore) worker rpc collective_rpc('compile_or_warm_up_model') failed") ||
		!strings.HasSuffix(e.Message, "please check the stack trace above for the root cause") {
		t.Errorf("unexpected text: %.120q ... %.80q", e.Message, e.Message[len(e.Message)-80:])
	}
	if e.Field(FieldPieces) != "3" || e.Field(FieldEndCursor) != conmonLastCursor {
		t.Errorf("pieces %q end cursor %q", e.Field(FieldPieces), e.Field(FieldEndCursor))
	}
	if e.Field("CONTAINER_PARTIAL_MESSAGE") != "" || e.Field(FieldLogLoss) != "" {
		t.Errorf("fields: %v", e.Fields)
	}
	if e.Field("CONTAINER_NAME") != "frank-primary-qwen" || e.Field("PRIORITY") != "3" ||
		!strings.HasPrefix(e.Field("CONTAINER_ID_FULL"), "8b1a46e24436") {
		t.Errorf("first piece's fields not kept: %v", e.Fields)
	}
	// no piece leaks out as its own entry
	for _, c := range []string{conmonLastCursor} {
		if byCursor(es, c) != nil {
			t.Errorf("piece %s emitted on its own", c)
		}
	}
}

func TestLineMaxReassembly(t *testing.T) {
	es, _ := readAll(t, fixture(t, "dankclaw-day"), "day", Options{})
	e := byCursor(es, lineMaxFirstCursor)
	if e == nil {
		t.Fatal("no entry with the first line-max piece's cursor")
	}
	if len(e.Message) != 49152+37409 {
		t.Errorf("length %d, want %d", len(e.Message), 49152+37409)
	}
	if !strings.HasPrefix(e.Message, "halogen: ledger layer000.kv=0.0MiB layer001.kv=7.1MiB") ||
		!strings.HasSuffix(e.Message, "layer3999.kv=77.9MiB") ||
		!strings.Contains(e.Message, "layer2290.kv=78.0MiB layer2291.kv=85.1MiB") { // piece boundary
		t.Errorf("bad reassembly: %.80q", e.Message)
	}
	if e.Field("_LINE_BREAK") != "" || e.Field(FieldPieces) != "2" || e.Field(FieldEndCursor) != lineMaxLastCursor {
		t.Errorf("fields: _LINE_BREAK=%q pieces=%q end=%q", e.Field("_LINE_BREAK"), e.Field(FieldPieces), e.Field(FieldEndCursor))
	}
	if byCursor(es, lineMaxLastCursor) != nil {
		t.Error("final piece emitted on its own")
	}
	// _LINE_BREAK=eof is not a continuation marker.
	var eof int
	for _, e := range es {
		if e.Field("_LINE_BREAK") == "eof" {
			eof++
			if e.Message != "Killed" {
				t.Errorf("eof record: %q", e.Message)
			}
		}
	}
	if eof != 1 {
		t.Errorf("%d _LINE_BREAK=eof entries, want 1", eof)
	}
}

func TestByteArraysANSIAndTqdm(t *testing.T) {
	es, _ := readAll(t, fixture(t, "dankserver-night-ladder"), "night", Options{})
	if e := byCursor(es, tqdmCursor); e == nil || e.Message != "(Worker_TP0 pid=271)\nLoading safetensors checkpoint shards:   0% Completed | 1/131 [00:01<03:10,  1.45s/it]" {
		t.Errorf("tqdm line: %+v", e)
	}
	if e := byCursor(es, ansiCursor); e == nil || !strings.HasPrefix(e.Message, "(APIServer pid=1) INFO 10-01 21:40:04 [api_server.py:1885] vLLM API server version 0.19.2.dev41+gd7c") {
		t.Errorf("ANSI line: %+v", e)
	}
	day, _ := readAll(t, fixture(t, "dankclaw-day"), "day", Options{})
	if e := byCursor(day, sglangTqdmCursor); e == nil || e.Message != "Capturing batches (bs=8 avail_mem=0.53 GB):  25%|██▌       | 1/4 [00:01<00:03,  1.12s/it]" {
		t.Errorf("sglang tqdm line: %+v", e)
	}
}

// exportEncode converts journalctl JSON lines to journalctl -o export data,
// decoding the JSON independently of the code under test. Values that are
// not printable UTF-8 without newlines use the binary form.
func exportEncode(t *testing.T, lines [][]byte) (data []byte, binaries int) {
	t.Helper()
	var buf bytes.Buffer
	for _, l := range lines {
		var obj map[string]any
		if err := json.Unmarshal(l, &obj); err != nil {
			t.Fatal(err)
		}
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		rank := func(k string) int {
			switch k {
			case "__CURSOR":
				return 0
			case "__REALTIME_TIMESTAMP":
				return 1
			case "__MONOTONIC_TIMESTAMP":
				return 2
			}
			return 3
		}
		sort.Slice(keys, func(i, j int) bool {
			if rank(keys[i]) != rank(keys[j]) {
				return rank(keys[i]) < rank(keys[j])
			}
			return keys[i] < keys[j]
		})
		for _, k := range keys {
			var v []byte
			switch x := obj[k].(type) {
			case string:
				v = []byte(x)
			case []any:
				for _, n := range x {
					v = append(v, byte(n.(float64)))
				}
			default:
				t.Fatalf("unexpected %T in %s", x, k)
			}
			printable := utf8.Valid(v)
			for _, c := range v {
				if c < 0x20 && c != '\t' || c == 0x7f {
					printable = false
				}
			}
			if printable {
				buf.WriteString(k + "=")
				buf.Write(v)
				buf.WriteByte('\n')
				continue
			}
			binaries++
			buf.WriteString(k + "\n")
			var n [8]byte
			binary.LittleEndian.PutUint64(n[:], uint64(len(v)))
			buf.Write(n[:])
			buf.Write(v)
			buf.WriteByte('\n')
		}
		buf.WriteByte('\n')
	}
	return buf.Bytes(), binaries
}

func TestExportAndJSONSeqMatchJSON(t *testing.T) {
	for _, name := range []string{"dankserver-night-ladder", "dankclaw-day"} {
		t.Run(name, func(t *testing.T) {
			want, wst := readAll(t, fixture(t, name), "src", Options{})

			exp, binaries := exportEncode(t, fixtureLines(t, name))
			if binaries == 0 {
				t.Fatal("encoder wrote no binary field")
			}
			got, st := readAll(t, exp, "src", Options{})
			if st.Format != FormatExport || st.Records != wst.Records || st.Malformed != 0 {
				t.Fatalf("export stats %+v (errors %v)", st, st.Errors)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("export entries differ from JSON entries (%d vs %d)", len(got), len(want))
			}

			var seq bytes.Buffer
			for _, l := range fixtureLines(t, name) {
				seq.WriteByte(0x1e)
				seq.Write(l)
				seq.WriteByte('\n')
			}
			got, st = readAll(t, seq.Bytes(), "src", Options{})
			if st.Format != FormatJSONSeq || st.Malformed != 0 || !reflect.DeepEqual(got, want) {
				t.Fatalf("json-seq: stats %+v, %d entries", st, len(got))
			}
		})
	}
}

func TestExportBinaryFieldWithNewlines(t *testing.T) {
	var b bytes.Buffer
	b.WriteString("__CURSOR=c1\n__REALTIME_TIMESTAMP=1790916000000000\n_HOSTNAME=h\nMESSAGE\n")
	msg := []byte("Traceback (most recent call last):\n  File \"x.py\", line 1\n\x1b[31mValueError\x1b[0m: bad\n")
	b.Write(binary.LittleEndian.AppendUint64(nil, uint64(len(msg))))
	b.Write(msg)
	b.WriteString("\nFOO=a=b\nFOO=second\n\n")
	b.WriteString("__CURSOR=c2\nMESSAGE=last record without a trailing empty line")
	es, st := readAll(t, b.Bytes(), "x.export", Options{})
	if st.Format != FormatExport || len(es) != 2 || st.Malformed != 0 {
		t.Fatalf("stats %+v", st)
	}
	if es[0].Message != "Traceback (most recent call last):\n  File \"x.py\", line 1\nValueError: bad" {
		t.Errorf("message %q", es[0].Message)
	}
	if es[0].Field("FOO") != "second" || es[0].Host != "h" || !es[0].Time.Equal(time.UnixMicro(1790916000000000)) {
		t.Errorf("entry %+v", es[0])
	}
	if es[1].Cursor != "c2" || es[1].Message != "last record without a trailing empty line" {
		t.Errorf("last entry %+v", es[1])
	}
}

func TestMalformedLinesAreSkipped(t *testing.T) {
	lines := fixtureLines(t, "dankclaw-day")
	var b bytes.Buffer
	var at []int // where each bad line starts
	for i, l := range lines {
		if i == 10 || i == 30 || i == 40 {
			at = append(at, b.Len())
		}
		switch i {
		case 10:
			b.WriteString("this is not json\n") // file line 11
		case 30:
			b.WriteString(`{"MESSAGE": "cut off` + "\n") // file line 32
		case 40:
			b.WriteString(`{"MESSAGE": [27, 300], "__CURSOR": "x"}` + "\n") // file line 43
		}
		b.Write(l)
		b.WriteByte('\n')
	}
	b.WriteString("-- cursor: s=abc\n") // journalctl --show-cursor trailer: skipped silently
	es, st := readAll(t, b.Bytes(), "bad.json", Options{})
	if st.Malformed != 3 || len(es) != 65 || st.Records != 66 {
		t.Fatalf("stats %+v", st)
	}
	for i, prefix := range []string{fmt.Sprintf("bad.json:11 (byte %d): not a JSON object", at[0]),
		fmt.Sprintf("bad.json:32 (byte %d): bad JSON record", at[1]),
		fmt.Sprintf("bad.json:43 (byte %d): bad JSON record: field MESSAGE: byte array element above 255", at[2])} {
		if !strings.HasPrefix(st.Errors[i], prefix) {
			t.Errorf("error %d = %q, want prefix %q", i, st.Errors[i], prefix)
		}
	}
	// A bad export record is skipped up to the next empty line.
	exp := "__CURSOR=a\nMESSAGE=one\n\n__CURSOR=b\nbad name=x\nMESSAGE=lost\n\n__CURSOR=c\nMESSAGE=three\n\n"
	es, st = readAll(t, []byte(exp), "bad.export", Options{})
	if st.Malformed != 1 || len(es) != 2 || es[1].Message != "three" ||
		!strings.HasPrefix(st.Errors[0], "bad.export: export record 2 (byte 24): byte 35: invalid field name") {
		t.Fatalf("export: stats %+v entries %d", st, len(es))
	}
}

func TestJSONValueForms(t *testing.T) {
	in := `{"__CURSOR":"c1","__REALTIME_TIMESTAMP":"1790916000000000","MESSAGE":null,"_PID":"42","BIG":null}
{"__CURSOR":"c2","MESSAGE":["first","second"],"REP":["x",[27,91,48,109]],"NUM":7,"OK":true}
{"__CURSOR":"c3","MESSAGE":[[104,105],[98,121,101,13,10]],"EMPTY":"","ESC":"tab\there \"q\" \u00e9"}
`
	es, st := readAll(t, []byte(in), "v.json", Options{})
	if len(es) != 3 || st.Truncated != 1 || st.Malformed != 0 {
		t.Fatalf("stats %+v", st)
	}
	if !es[0].Truncated || es[0].Message != "" || es[0].PID != 42 || es[0].Field("BIG") != "" {
		t.Errorf("null message: %+v", es[0])
	}
	if es[1].Truncated || es[1].Message != "second" || es[1].Field("REP") != "\x1b[0m" || es[1].Field("NUM") != "7" || es[1].Field("OK") != "true" {
		t.Errorf("repeated: %+v", es[1])
	}
	if es[2].Message != "bye" || es[2].Field("ESC") != "tab\there \"q\" é" {
		t.Errorf("arrays of byte arrays / escapes: %+v", es[2])
	}
	if v, ok := es[2].Fields["EMPTY"]; !ok || v != "" {
		t.Errorf("empty field lost")
	}
}

func TestOrphanAtEOF(t *testing.T) {
	// Cut dankserver-night-ladder after the second conmon piece.
	var b bytes.Buffer
	for i, l := range fixtureLines(t, "dankserver-night-ladder") {
		if i > 760 { // 0-based index 760 = second piece
			break
		}
		b.Write(l)
		b.WriteByte('\n')
	}
	es, st := readAll(t, b.Bytes(), "cut.json", Options{})
	if st.Orphans != 1 || st.Records != 761 || len(es) != 760 {
		t.Fatalf("stats %+v", st)
	}
	e := es[len(es)-1]
	if e.Cursor != conmonFirstCursor || e.Field(FieldLogLoss) != "partial line not reassembled (2 pieces, 16384 bytes): input ended before the last piece" {
		t.Fatalf("orphan: cursor %s loss %q", e.Cursor, e.Field(FieldLogLoss))
	}
	if len(e.Message) != 16384-13 || !strings.Contains(e.Message, "specialized it to be a constant (3)") ||
		!strings.HasSuffix(e.Message, "return self._compiled_callable(*args, **k") {
		t.Errorf("orphan text lost: %d bytes, ends %q", len(e.Message), e.Message[len(e.Message)-100:])
	}
}

// rec builds a record; t is journal time in seconds.
func rec(cursor string, t int64, kv ...string) Record {
	r := Record{"__CURSOR": []byte(cursor), "__REALTIME_TIMESTAMP": []byte(strconv.FormatInt(t*1e6, 10)), "_HOSTNAME": []byte("h")}
	for i := 0; i+1 < len(kv); i += 2 {
		r[kv[i]] = []byte(kv[i+1])
	}
	return r
}

func messages(es []domain.Entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Cursor+"="+e.Message)
	}
	return out
}

func TestAssemblerOrphanTimeoutAndInterleaving(t *testing.T) {
	a := NewAssembler("live", Options{})
	var out []domain.Entry
	push := func(r Record) { out = append(out, a.Push(r)...) }
	cid := "CONTAINER_ID_FULL"
	push(rec("p1", 100, cid, "A", "PRIORITY", "6", "CONTAINER_PARTIAL_MESSAGE", "true", "MESSAGE", "alpha-"))
	push(rec("s1", 101, "_STREAM_ID", "S", "_LINE_BREAK", "line-max", "MESSAGE", "x1"))
	push(rec("o1", 101, "MESSAGE", "other\n"))
	push(rec("e1", 102, cid, "A", "PRIORITY", "3", "MESSAGE", "stderr line\n")) // other stream of A
	push(rec("p2", 103, cid, "A", "PRIORITY", "6", "MESSAGE", "omega\n"))
	push(rec("s2", 140, "_STREAM_ID", "S", "MESSAGE", "x2")) // 39 s after s1: s1 is an orphan
	want := []string{"o1=other", "e1=stderr line", "p1=alpha-omega", "s1=x1", "s2=x2"}
	if got := messages(out); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	if out[3].Field(FieldLogLoss) != "partial line not reassembled (1 piece, 2 bytes): no further piece within 30s" {
		t.Errorf("orphan reason %q", out[3].Field(FieldLogLoss))
	}
	if out[2].Field(FieldLogLoss) != "" || out[4].Field(FieldLogLoss) != "" || a.Pending() != 0 {
		t.Errorf("unexpected loss marks or pending lines")
	}
}

func TestAssemblerDocker(t *testing.T) {
	a := NewAssembler("d", Options{})
	var out []domain.Entry
	pid := "CONTAINER_PARTIAL_ID"
	for _, r := range []Record{
		rec("d1", 1, pid, "P", "CONTAINER_PARTIAL_ORDINAL", "1", "CONTAINER_PARTIAL_LAST", "false", "CONTAINER_PARTIAL_MESSAGE", "true", "MESSAGE", "he"),
		rec("x", 1, "MESSAGE", "between"),
		rec("d2", 1, pid, "P", "CONTAINER_PARTIAL_ORDINAL", "2", "CONTAINER_PARTIAL_LAST", "false", "CONTAINER_PARTIAL_MESSAGE", "true", "MESSAGE", "ll"),
		rec("d3", 2, pid, "P", "CONTAINER_PARTIAL_ORDINAL", "3", "CONTAINER_PARTIAL_LAST", "true", "MESSAGE", "o"),
		rec("q1", 3, pid, "Q", "CONTAINER_PARTIAL_ORDINAL", "1", "CONTAINER_PARTIAL_LAST", "false", "MESSAGE", "a"),
		rec("q3", 3, pid, "Q", "CONTAINER_PARTIAL_ORDINAL", "3", "CONTAINER_PARTIAL_LAST", "true", "MESSAGE", "c"),
	} {
		out = append(out, a.Push(r)...)
	}
	if got := messages(out); !reflect.DeepEqual(got, []string{"x=between", "d1=hello", "q1=ac"}) {
		t.Fatalf("got %q", got)
	}
	if out[1].Field("CONTAINER_PARTIAL_ORDINAL") != "" || out[1].Field(FieldLogLoss) != "" {
		t.Errorf("fields %v", out[1].Fields)
	}
	if out[2].Field(FieldLogLoss) != "split line has missing pieces (piece 3 followed piece 1)" {
		t.Errorf("gap not reported: %v", out[2].Fields)
	}
}

func TestMaxLineBytesSplitsLongLines(t *testing.T) {
	es, st := readAll(t, fixture(t, "dankclaw-day"), "day", Options{MaxLineBytes: 10000})
	var parts []string
	for _, e := range es {
		if e.Field(FieldLineCapped) != "" {
			parts = append(parts, e.Message)
			if len(e.Message) > 10000 {
				t.Errorf("part of %d bytes", len(e.Message))
			}
		}
	}
	// 86561 bytes in parts of 10000.
	if len(parts) != 9 || st.Orphans != 0 || len(es) != 65-1+9 {
		t.Fatalf("%d parts, %d entries", len(parts), len(es))
	}
	// Each part is cleaned on its own, so a space at a cut is trimmed.
	full, _ := readAll(t, fixture(t, "dankclaw-day"), "day", Options{})
	nospace := func(s string) string { return strings.ReplaceAll(s, " ", "") }
	if nospace(strings.Join(parts, "")) != nospace(byCursor(full, lineMaxFirstCursor).Message) {
		t.Error("parts do not join to the whole line")
	}
	if parts[0][:80] != byCursor(full, lineMaxFirstCursor).Message[:80] || es[60].Cursor != lineMaxFirstCursor || es[68].Cursor != lineMaxLastCursor {
		t.Errorf("first part: %q", parts[0][:80])
	}
}

func TestGzipAndStopAndCancel(t *testing.T) {
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	if _, err := zw.Write(fixture(t, "dankclaw-day")); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	es, st := readAll(t, z.Bytes(), "day.json.gz", Options{})
	if len(es) != 65 || st.Format != FormatJSON || st.Bytes != int64(z.Len()) {
		t.Fatalf("gzip: %+v", st)
	}

	stop := errors.New("stop")
	n := 0
	st, err := Read(context.Background(), bytes.NewReader(fixture(t, "dankclaw-day")), "day", Options{},
		func(domain.Entry) error {
			if n++; n == 10 {
				return stop
			}
			return nil
		})
	if err != stop || st.Entries != 10 {
		t.Fatalf("stop: err %v entries %d", err, st.Entries)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = Read(ctx, bytes.NewReader(fixture(t, "dankserver-night-ladder")), "night", Options{}, func(domain.Entry) error { return nil })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancel: %v", err)
	}
}

func TestProgress(t *testing.T) {
	var last int64
	_, err := Read(context.Background(), bytes.NewReader(fixture(t, "dankserver-night-ladder")), "night",
		Options{Progress: func(n int64) { last = n }}, func(domain.Entry) error { return nil })
	if err != nil || last != int64(len(fixture(t, "dankserver-night-ladder"))) {
		t.Fatalf("progress %d, err %v", last, err)
	}
}

// TestFieldsKeepsOnlyListed reads a fixture with Options.Fields in each
// format: Entry.Fields holds only the listed fields (plus the ones ingest
// sets itself), with the same values as a full read, and everything else
// about the entries is unchanged.
func TestFieldsKeepsOnlyListed(t *testing.T) {
	// CONTAINER_NAME is parsed past; PRIORITY is read by reassembly first.
	keep := []string{"UNIT", "_TRANSPORT", "CONTAINER_NAME"}
	allowed := map[string]bool{"UNIT": true, "_TRANSPORT": true, "CONTAINER_NAME": true,
		FieldPieces: true, FieldEndCursor: true, FieldLogLoss: true, FieldLineCapped: true}
	name := "dankclaw-day"
	full, _ := readAll(t, fixture(t, name), "src", Options{})
	exp, _ := exportEncode(t, fixtureLines(t, name))
	for format, data := range map[string][]byte{"json": fixture(t, name), "export": exp} {
		got, _ := readAll(t, data, "src", Options{Fields: keep})
		if len(got) != len(full) {
			t.Fatalf("%s: %d entries, want %d", format, len(got), len(full))
		}
		units, dropped := 0, 0
		for i := range got {
			g, w := got[i], full[i]
			for k, v := range g.Fields {
				if !allowed[k] {
					t.Fatalf("%s: entry %s kept field %s", format, g.Cursor, k)
				}
				if w.Fields[k] != v {
					t.Fatalf("%s: entry %s field %s = %q, full read has %q", format, g.Cursor, k, v, w.Fields[k])
				}
			}
			for _, k := range keep {
				if w.Fields[k] != g.Fields[k] {
					t.Fatalf("%s: entry %s lost field %s", format, g.Cursor, k)
				}
			}
			if w.Fields["UNIT"] != "" {
				units++
			}
			if w.Fields["_CMDLINE"] != "" && w.Fields["PRIORITY"] != "" {
				dropped++
			}
			g.Fields, w.Fields = nil, nil
			if !reflect.DeepEqual(g, w) {
				t.Fatalf("%s: entry %s differs beyond Fields:\n%+v\n%+v", format, g.Cursor, g, w)
			}
		}
		if units == 0 || dropped == 0 {
			t.Fatalf("%s: fixture has %d UNIT and %d _CMDLINE+PRIORITY fields; the test checks nothing", format, units, dropped)
		}
	}
}
