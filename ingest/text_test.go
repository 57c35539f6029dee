package ingest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmfleet/analyzer/domain"
)

func TestCleanMessage(t *testing.T) {
	cases := []struct{ in, want string }{
		{"plain", "plain"},
		{"conmon line\n", "conmon line"},
		{"two\nlines\n\n", "two\nlines\n"}, // only one trailing newline is dropped
		{"\x1b[1;36m(EngineCore pid=253)\x1b[0;0m ERROR x", "(EngineCore pid=253) ERROR x"},
		{"\x1b]0;title\x07after \x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\", "after link"},
		{"\x1b(Bcharset \x1b7saved\x1b8", "charset saved"},
		{"(Worker_TP0 pid=271) \rLoading 0%\rLoading 50%   \r", "(Worker_TP0 pid=271)\nLoading 0%\nLoading 50%"},
		{"\r\rwindows\r\n", "windows"},
		{"trailing   \nspaces\t\n", "trailing\nspaces"},
		{"bad utf8 \xff\xfe end", "bad utf8 \uFFFD end"},
		{"bell\x07 nul\x00 del\x7f", "bell nul del"},
		{"tab\tkept", "tab\tkept"},
		{"日本 é ü", "日本 é ü"},
		{"\r", ""},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			if got := CleanMessage([]byte(c.in)); got != c.want {
				t.Errorf("CleanMessage(%q) = %q, want %q", c.in, got, c.want)
			}
		})
	}
}

func TestLineTime(t *testing.T) {
	local := func(y, mo, d, h, mi, s, ns int) time.Time {
		return time.Date(y, time.Month(mo), d, h, mi, s, ns, time.Local)
	}
	cases := []struct {
		in   string
		want time.Time
	}{
		{"2026-10-01T09:12:00Z INFO x", time.Date(2026, 10, 1, 9, 12, 0, 0, time.UTC)},
		{"2025-01-15T10:00:00.123456Z  INFO text_generation_launcher", time.Date(2025, 1, 15, 10, 0, 0, 123456000, time.UTC)},
		{"2026-10-01 09:12:00 starting", local(2026, 10, 1, 9, 12, 0, 0)},
		{"[2026-10-01 09:12:00] x", local(2026, 10, 1, 9, 12, 0, 0)},
		{"[2025-04-11 16:24:18 TP7] Scheduler hit an exception", local(2025, 4, 11, 16, 24, 18, 0)},
		{"2025-01-15 10:00:00,250 - INFO - x", local(2025, 1, 15, 10, 0, 0, 250000000)},
		{"vllm-1  | 2025-01-15T10:00:00.5+02:00 INFO", time.Date(2025, 1, 15, 10, 0, 0, 500000000, time.FixedZone("", 7200))},
		{"2026-10-01T09:12:00+0530 host unit[1]: x", time.Date(2026, 10, 1, 9, 12, 0, 0, time.FixedZone("", 19800))},
		{"time=2024-07-04T10:33:52.123-07:00 level=INFO", time.Date(2024, 7, 4, 10, 33, 52, 123000000, time.FixedZone("", -25200))},
		{"2024/07/04 10:33:52 routes.go:1", local(2024, 7, 4, 10, 33, 52, 0)},
		{"INFO 10-01 21:40:04 [api_server.py:1885] x", time.Time{}},
		{"(APIServer pid=1) INFO 10-01 21:40:04 x", time.Time{}},
		{"Oct  1 09:12:00 host x", time.Time{}},
		{"2026-02-31 09:12:00 not a date", time.Time{}},
		{"2026-10-01 25:00:00 bad hour", time.Time{}},
		{"20261-10-01 09:12:00", time.Time{}},
		{"", time.Time{}},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			got, ok := LineTime(c.in)
			if ok != !c.want.IsZero() || !got.Equal(c.want) {
				t.Errorf("LineTime(%q) = %v, %v; want %v", c.in, got, ok, c.want)
			}
		})
	}
}

func TestTextReader(t *testing.T) {
	in := "2026-10-01T09:12:00Z first\r\n" +
		"\n" +
		"vllm-1  | \x1b[32mINFO\x1b[0m 10-01 21:40:04 colour\n" +
		"progress \r 10%\r 20%\n" +
		"last line without newline"
	es, st := readAll(t, []byte(in), "engine.log", Options{})
	if st.Format != FormatText || st.Records != 5 || len(es) != 5 {
		t.Fatalf("stats %+v", st)
	}
	want := []struct {
		cursor, msg string
		zero        bool
	}{
		{"engine.log:0", "2026-10-01T09:12:00Z first", false},
		{"engine.log:28", "", true},
		{"engine.log:29", "INFO 10-01 21:40:04 colour", true}, // compose's service column: a stream of its own
		{"engine.log:75", "progress\n 10%\n 20%", true},
		{"engine.log:95", "last line without newline", true},
	}
	for i, w := range want {
		e := es[i]
		source := "engine.log"
		if i == 2 {
			source = "engine.log|vllm-1"
		}
		if e.Cursor != w.cursor || e.Message != w.msg || e.Time.IsZero() != w.zero || e.Source != source {
			t.Errorf("entry %d = %q %q %v, want %q %q", i, e.Cursor, e.Message, e.Time, w.cursor, w.msg)
		}
	}
	if off := strings.Index(in, "progress"); off != 75 {
		t.Fatalf("test input offsets changed: %d", off)
	}
}

func TestTextLongLine(t *testing.T) {
	line := strings.Repeat("é", 3000) // 6000 bytes
	in := "INFO short\n" + line + "\nafter\n"
	es, _ := readAll(t, []byte(in), "long.log", Options{MaxLineBytes: 2001})
	// 6000 bytes in parts of ≤ 2001 bytes cut at rune boundaries: 2000, 2000, 2000.
	if len(es) != 5 || es[1].Message+es[2].Message+es[3].Message != line || es[4].Message != "after" {
		t.Fatalf("got %d entries", len(es))
	}
	if es[1].Cursor != "long.log:11" || es[2].Cursor != "long.log:2011" || es[3].Field(FieldLineCapped) == "" || es[4].Field(FieldLineCapped) != "" {
		t.Errorf("cursors %s %s, marks %v %v", es[1].Cursor, es[2].Cursor, es[3].Fields, es[4].Fields)
	}
}

// Real plain-text engine logs of the corpus: one entry per line, byte
// offsets as cursors, no ANSI left.
func TestCorpusText(t *testing.T) {
	if _, err := os.Stat("../../shared/corpus"); err != nil {
		t.Skip("skipped: ../../shared/corpus is absent; this test needs the shared corpus beside the repository")
	}
	dirs, _ := filepath.Glob("../../shared/corpus/*/log.txt")
	if len(dirs) == 0 {
		t.Fatal("no corpus cases in ../../shared/corpus")
	}
	for _, p := range dirs {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var es []domain.Entry
		st, err := ReadFile(context.Background(), p, Options{}, func(e domain.Entry) error { es = append(es, e); return nil })
		if err != nil {
			t.Fatal(err)
		}
		lines := bytes.Count(data, []byte("\n"))
		if len(data) > 0 && data[len(data)-1] != '\n' {
			lines++
		}
		if st.Format != FormatText || len(es) != lines {
			t.Errorf("%s: format %v, %d entries, want %d lines", p, st.Format, len(es), lines)
		}
		off := 0
		for i, l := range strings.SplitAfter(string(data), "\n") {
			if i >= len(es) {
				break
			}
			if want := p + ":" + strconv.Itoa(off); es[i].Cursor != want {
				t.Errorf("%s line %d: cursor %s, want %s", p, i+1, es[i].Cursor, want)
				break
			}
			off += len(l)
		}
		for _, e := range es {
			if strings.ContainsAny(e.Message, "\x1b\r\n") {
				t.Errorf("%s: unclean %q", e.Cursor, e.Message)
			}
		}
	}
	// Concrete values.
	es := readPath(t, "../../shared/corpus/tgi-02/log.txt")
	if !es[0].Time.Equal(time.Date(2024, 3, 6, 17, 53, 22, 335714000, time.UTC)) {
		t.Errorf("tgi time %v", es[0].Time)
	}
	es = readPath(t, "../../shared/corpus/ollama-02/log.txt")
	if !strings.HasPrefix(es[0].Message, "llm_load_print_meta: max token length = 256") || !es[0].Time.IsZero() ||
		!strings.HasSuffix(es[0].Source, "|ollama") {
		t.Errorf("compose prefix: %q %v", es[0].Message, es[0].Time)
	}
	es = readPath(t, "../../shared/corpus/vllm-02/log.txt")
	if !es[0].Time.IsZero() { // "INFO 10-31 15:07:49": no year
		t.Errorf("vllm time invented: %v", es[0].Time)
	}
}

func readPath(t *testing.T, p string) []domain.Entry {
	t.Helper()
	var es []domain.Entry
	if _, err := ReadFile(context.Background(), p, Options{}, func(e domain.Entry) error { es = append(es, e); return nil }); err != nil {
		t.Fatal(err)
	}
	return es
}

func TestDetectFormat(t *testing.T) {
	cases := []struct {
		in   string
		want Format
	}{
		{`{"MESSAGE":"x"}`, FormatJSON},
		{"\n  \n{\"a\":1}\n", FormatJSON},
		{"\xef\xbb\xbf{\"a\":1}\n", FormatJSON},
		{"\x1e{\"a\":1}\n", FormatJSONSeq},
		{"-- No entries --\n", FormatJSON},
		{"-- Journal begins at Mon 2026-10-01. --\n{\"a\":1}\n", FormatJSON},
		{"-- Boot abc --\nOct 01 09:00:00 host x\n", FormatText},
		{"__CURSOR=s=1\n__REALTIME_TIMESTAMP=1\nMESSAGE=x\n\n", FormatExport},
		{"_BOOT_ID=x\nMESSAGE\n\x05\x00\x00\x00\x00\x00\x00\x00a\nbcd\n__REALTIME_TIMESTAMP=1\n\n", FormatExport},
		{"MESSAGE=hi\nPRIORITY=6\n\nMESSAGE=again\n", FormatText}, // no cursor/timestamp
		{"FOO=bar baz\n", FormatText},
		{"INFO 10-01 21:40:04 [api_server.py:1885] x\n", FormatText},
		{"(APIServer pid=1) INFO\n", FormatText},
		{"2026-10-01T09:12:00Z x\n", FormatText},
		{"", FormatText},
		{"A", FormatText},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			got, err := DetectFormat(bufio.NewReader(strings.NewReader(c.in)))
			if err != nil || got != c.want {
				t.Errorf("DetectFormat(%q) = %v, %v; want %v", c.in, got, err, c.want)
			}
		})
	}
	if f, err := DetectFormat(bufio.NewReader(strings.NewReader("LPKSHHRH\x00\x00\x00"))); f != FormatJournal || err != nil {
		t.Errorf("binary journal: %v, %v; want %v", f, err, FormatJournal)
	}
	// Nothing is consumed.
	br := bufio.NewReader(strings.NewReader("__CURSOR=a\nMESSAGE=x\n"))
	_, _ = DetectFormat(br)
	if rest, _ := io.ReadAll(br); string(rest) != "__CURSOR=a\nMESSAGE=x\n" {
		t.Errorf("DetectFormat consumed input: %q", rest)
	}
}

// On a live pipe, detection must not wait for more than it needs.
func TestDetectFormatLivePipe(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	go func() { _, _ = pw.Write([]byte(`{"MESSAGE":"first record, the writer then blocks`)) }()
	done := make(chan Format, 1)
	go func() {
		f, _ := DetectFormat(bufio.NewReaderSize(pr, 1<<20))
		done <- f
	}()
	select {
	case f := <-done:
		if f != FormatJSON {
			t.Errorf("got %v", f)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("DetectFormat blocked on a live pipe")
	}
}

func TestParseFormat(t *testing.T) {
	for _, f := range []Format{FormatAuto, FormatJSON, FormatJSONSeq, FormatExport, FormatText} {
		if g, err := ParseFormat(f.String()); err != nil || g != f {
			t.Errorf("ParseFormat(%q) = %v, %v", f.String(), g, err)
		}
	}
	if _, err := ParseFormat("xml"); err == nil {
		t.Error("ParseFormat(xml) succeeded")
	}
	// A forced format skips detection.
	es, st := readAll(t, []byte("{\"not\":\"parsed\"}\n"), "x", Options{Format: FormatText})
	if st.Format != FormatText || len(es) != 1 || es[0].Message != `{"not":"parsed"}` {
		t.Errorf("forced text: %+v", st)
	}
}

func TestBOMAndJSONPretty(t *testing.T) {
	es, _ := readAll(t, []byte("\xef\xbb\xbfINFO hello\nworld\n"), "bom.log", Options{})
	if len(es) != 2 || es[0].Message != "INFO hello" || es[0].Cursor != "bom.log:3" || es[1].Cursor != "bom.log:14" {
		t.Errorf("BOM text: %+v", es)
	}
	es, _ = readAll(t, []byte("\xef\xbb\xbf{\"MESSAGE\":\"x\"}\n"), "bom.json", Options{})
	if len(es) != 1 || es[0].Message != "x" {
		t.Errorf("BOM json: %+v", es)
	}
	_, err := Read(context.Background(), strings.NewReader("{\n\t\"MESSAGE\" : \"x\"\n}\n"), "pretty.json", Options{}, func(domain.Entry) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "json-pretty") {
		t.Errorf("json-pretty: %v", err)
	}
}

// TestLlamaCppPrefixIsALog: current llama.cpp prints each line behind its
// elapsed time and a level letter (common/log.cpp); a paste of such lines
// alone is a log, while prose with numbers is not.
func TestLlamaCppPrefixIsALog(t *testing.T) {
	read := func(text string) error {
		_, err := Read(context.Background(), strings.NewReader(text), "paste", Options{}, func(domain.Entry) error { return nil })
		return err
	}
	if err := read("0.00.651.452 I loaded  70% model tensors into buffer\n0.00.653.168 I loaded  71% model tensors into buffer\n"); err != nil {
		t.Errorf("llama.cpp's prefixed lines: %v", err)
	}
	if err := read("we bought 3.50.100 apples\nand some pears\n"); !errors.Is(err, ErrNotALog) {
		t.Errorf("prose: %v, want ErrNotALog", err)
	}
}
