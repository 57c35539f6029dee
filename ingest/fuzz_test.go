package ingest

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/internal/fuzzcost"
	"github.com/llmfleet/analyzer/internal/race"
)

// seedLines adds the first lines of the bundled example journals and of the
// corpus logs as seeds.
func seedLines(f *testing.F, max int) {
	paths, _ := filepath.Glob("../examples/*.journal.json")
	more, _ := filepath.Glob("../testdata/corpus/*/log.txt")
	for _, p := range append(paths, more...) {
		fh, err := os.Open(p)
		if err != nil {
			f.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for n := 0; n < max && sc.Scan(); n++ {
			f.Add(append([]byte(nil), sc.Bytes()...))
		}
		fh.Close()
	}
}

// FuzzJSONRecord compares the fast journald JSON parser with encoding/json
// (the slow path): whatever the fast path accepts, encoding/json must accept
// and read the same way.
func FuzzJSONRecord(f *testing.F) {
	seedLines(f, 40)
	f.Add([]byte(`{"MESSAGE":[27,91,49,109],"A":null,"B":["x","y"],"C":12.5e3,"D":true}`))
	f.Add([]byte(`{"M":[`))
	f.Fuzz(func(t *testing.T, line []byte) {
		fast, ok, _ := fastJSONRecord(line)
		if !ok {
			return
		}
		slow, err := slowJSONRecord(line)
		if err != nil {
			t.Fatalf("fast path accepted what encoding/json refuses (%v): %q", err, line)
		}
		if len(fast) != len(slow) {
			t.Fatalf("fast %d fields, slow %d: %q", len(fast), len(slow), line)
		}
		for k, v := range slow {
			if fv, ok := fast[k]; !ok || !bytes.Equal(fv, v) || (fv == nil) != (v == nil) {
				t.Fatalf("field %q: fast %q, slow %q (%q)", k, fast[k], v, line)
			}
		}
	})
}

// FuzzRead runs every input format's reader (journald JSON, export, plain
// text with every paste envelope, binary journal files, compressed input)
// on arbitrary bytes: it must end within its budget of time and allocated
// bytes, emit no more entries than the input has bytes, and keep each
// message under the line cap. Its seeds include a journal-JSON field nested 9,990 deep and
// compressed inputs of each kind.
func FuzzRead(f *testing.F) {
	seedLines(f, 20)
	f.Add([]byte("__CURSOR=s=1\n__REALTIME_TIMESTAMP=1\nMESSAGE\n\x05\x00\x00\x00\x00\x00\x00\x00hello\n\n"))
	f.Add([]byte("Oct 01 21:40:00 h systemd[1]: Started x.service - X.\nOct 01 21:40:01 h x[2]: Traceback (most recent call last):\n"))
	f.Add([]byte("2025-01-01T10:00:00.1Z stdout P a\n2025-01-01T10:00:00.2Z stdout F b\n"))
	f.Add([]byte(`{"level":"error","msg":"x","fields":{"message":"y"}}` + "\n"))
	for _, fm := range []Format{FormatAuto, FormatJSON, FormatExport, FormatText, FormatJournal} {
		f.Add([]byte{byte(fm)})
	}
	for _, compact := range []bool{false, true} {
		j, _ := testJournal(compact, testJournalEntries, nil)
		f.Add(j)
	}
	deep := strings.Repeat("[", 9990) + strings.Repeat("]", 9990)
	f.Add([]byte(`{"__REALTIME_TIMESTAMP":"1","MESSAGE":"x","X":` + deep + "}\n"))
	f.Add([]byte(`{"msg":"x","a":` + deep + "}\n"))
	plain := []byte("INFO 10-01 09:00:00 a line\nERROR 10-01 09:00:01 another\n")
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write(plain)
	_ = zw.Close()
	f.Add(gz.Bytes())
	if zs, err := zstd.NewWriter(nil); err == nil {
		f.Add(zs.EncodeAll(plain, nil))
	}
	f.Add(xzTool(f, plain, "-0"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, fm := range []Format{FormatAuto, FormatJSON, FormatExport, FormatText, FormatJournal} {
			if n := fuzzRead(t, data, fm); n > 2*len(data)+2 {
				t.Fatalf("format %v: %d entries from %d bytes", fm, n, len(data))
			}
		}
	})
}

// fuzzRead reads data in format fm within what one input may cost (the
// read buffers, a decoder's window of 64 MiB at most and the entries; no
// quadratic work), fails on a message past the line cap, and returns how
// many entries it read.
func fuzzRead(t *testing.T, data []byte, fm Format) int {
	n := 0
	fuzzcost.Check(t, fuzzcost.Budget{Bytes: 96 << 20, Time: race.Budget(time.Second)}, func() {
		_, _ = Read(context.Background(), bytes.NewReader(data), "fuzz", Options{Format: fm, MaxLineBytes: 4096},
			func(e domain.Entry) error {
				n++
				if len(e.Message) > 64<<10 {
					t.Fatalf("format %v: a message of %d bytes from %d input bytes", fm, len(e.Message), len(data))
				}
				return nil
			})
	})
	return n
}

// FuzzFlatRecord checks the reader's shortcuts in parseFlat against a fresh
// strict parse: keys compared in place with the previous record's (the
// key cache), and values of fields nobody keeps skipped without decoding.
// Whatever the strict parse accepts, the shortcut parse must accept, with
// the same values for every field it does not drop.
func FuzzFlatRecord(f *testing.F) {
	seedLines(f, 20)
	f.Add([]byte(`{"MESSAGE":"a","_UID":"1\"\\","X":"y"}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		prev, _, _ := bytes.Cut(line, []byte("\n"))
		_, cur, ok := bytes.Cut(line, []byte("\n"))
		if !ok {
			cur = prev
		}
		var strict flatRecord
		if !parseFlat(&strict, &keyCache{}, append([]byte(nil), cur...)) {
			return
		}
		want := strict.toMap()
		keep := newFieldSet([]string{"X", "MESSAGE_ID"})
		kc := keyCache{keep: keep}
		var r flatRecord
		// prev three times: its members are then remembered one by one
		// (keyCache.members) and in runs (keyCache.runs), and compared
		// with cur's.
		for range 3 {
			parseFlat(&r, &kc, append([]byte(nil), prev...))
		}
		if !parseFlat(&r, &kc, append([]byte(nil), cur...)) {
			t.Fatalf("strict parse accepts, the reader's refuses: %q", cur)
		}
		got := r.toMap()
		if len(got) != len(want) {
			t.Fatalf("reader %d fields, strict %d (%q)", len(got), len(want), cur)
		}
		for name, v := range got {
			if keep.slot(name) == slotDropped {
				continue
			}
			if w, ok := want[name]; !ok || !bytes.Equal(v, w) || (v == nil) != (w == nil) {
				t.Fatalf("field %q: reader %q, strict %q (%q)", name, v, w, cur)
			}
		}
	})
}

// FuzzIsPlain compares isPlain's word-at-a-time skip with a byte-by-byte
// reading of its contract.
func FuzzIsPlain(f *testing.F) {
	for _, s := range []string{"plain ascii text, long enough", "tab\tand\nnewline ok", "trailing space \nx", "esc \x1b[0m here",
		"caf\u00e9 non-ascii", "del \x7f byte in the middle ok?", "12345678\n", "1234567 \n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		want := true
		for i, c := range raw {
			if c < 0x20 && c != '\t' && c != '\n' || c == 0x7f || c >= 0x80 ||
				c == '\n' && i > 0 && (raw[i-1] == ' ' || raw[i-1] == '\t') {
				want = false
			}
		}
		if n := len(raw); n > 0 && (raw[n-1] == ' ' || raw[n-1] == '\t') {
			want = false
		}
		if got := isPlain(raw); got != want {
			t.Fatalf("isPlain(%q) = %v, want %v", raw, got, want)
		}
	})
}

// FuzzCleanMessage compares cleanMessage (the plain fast path, a reused
// buffer holding an earlier message, the no-split shortcut) with the long
// way: strip, make valid, split.
func FuzzCleanMessage(f *testing.F) {
	for _, s := range []string{"plain", "\x1b[32mINFO\x1b[0m: ok\n", "a\rb\r\rc", "tail \nx\t", "bad \xff utf8", "\x1b]0;t\x07x", "",
		"\x1b[1;36m(APIServer pid=1)\x1b[0;0m INFO:     10.0.8.232:31436 - \"POST /v1/chat/completions HTTP/1.1\" 200 OK",
		"eight by\x00tes \x7f\x1f\x20 caf\u00e9\xa0\x9f\x80\x01 and a tail", "\x1b"} {
		f.Add([]byte(s), []byte("an earlier, longer message in the buffer"))
	}
	f.Fuzz(func(t *testing.T, raw, earlier []byte) {
		trimmed := bytes.TrimSuffix(raw, []byte("\n"))
		stripped := stripEscapes(nil, trimmed)
		if b := stripByteByByte(trimmed); !bytes.Equal(stripped, b) {
			t.Fatalf("stripEscapes(%q) = %q, byte by byte %q", trimmed, stripped, b)
		}
		want := splitLines(bytes.ToValidUTF8(stripped, []byte("\uFFFD")))
		_, scratch := cleanMessage(nil, earlier)
		scratch = append(scratch, earlier...)
		if got, _ := cleanMessage(scratch, raw); got != want {
			t.Fatalf("cleanMessage(%q) = %q, want %q", raw, got, want)
		}
		if got := CleanMessage(raw); got != want {
			t.Fatalf("CleanMessage(%q) = %q, want %q", raw, got, want)
		}
	})
}

// stripByteByByte is stripEscapes one byte at a time, as its contract
// reads.
func stripByteByByte(raw []byte) []byte {
	var out []byte
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c == 0x1b {
			i = skipEscape(raw, i) - 1
			continue
		}
		if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f {
			continue
		}
		out = append(out, c)
	}
	return out
}

// FuzzTrimRecord holds trimRecord to the bytes.Trim calls it replaces.
func FuzzTrimRecord(f *testing.F) {
	for _, s := range []string{`{"a":1}`, "\x1e{\"a\":1}\r", " \t\r\x1e \x1e{} \t\r", "\x1e", " ", "", "{ } \x1e", "\r\n{}\n\r"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		want := bytes.TrimRight(bytes.TrimLeft(line, "\x1e \t\r"), " \t\r")
		if got := trimRecord(line); !bytes.Equal(got, want) {
			t.Fatalf("trimRecord(%q) = %q, want %q", line, got, want)
		}
	})
}

// inPlaceLines are JSON lines parseFlatLine must refuse or take as their
// line would be taken: a newline where JSON allows white space, in a
// skipped value, in a byte array; '\r' and blanks before it; a last line
// without one.
var inPlaceLines = []byte("{\"MESSAGE\":\"a\",\"X\":\"b\"}\n{\"MESSAGE\":\n\"c\"}\n{\"_UID\":\"1\n2\",\"MESSAGE\":\"d\"}\n" +
	"{\"MESSAGE\":[104,105,\n106]}\n{\"MESSAGE\":\"e\"} \r\n{}\n{\"MESSAGE\":\"f\"}")

// FuzzFlatLine: parseFlatLine, which parses a line where it lies in the
// input and finds its end on the way, gives what parseFlat gives for the
// line cut at its '\n' and trimmed, and the line's length, or refuses
// (then the reader reads it as a line); it refuses no line parseFlat
// takes.
func FuzzFlatLine(f *testing.F) {
	seedLines(f, 20)
	f.Add(inPlaceLines)
	f.Fuzz(func(t *testing.T, data []byte) {
		keep := newFieldSet([]string{"MESSAGE", "X"})
		kcLine, kcIn := keyCache{keep: keep}, keyCache{keep: keep}
		var line, in flatRecord
		for start := 0; start < len(data); {
			rest := data[start:]
			end := bytes.IndexByte(rest, '\n')
			next := start + end + 1
			if end < 0 {
				end, next = len(rest), len(data)
			}
			okLine := parseFlat(&line, &kcLine, append([]byte(nil), trimRecord(rest[:end])...))
			if rest[0] == '{' {
				n, ok := parseFlatLine(&in, &kcIn, rest[:len(rest):len(rest)])
				switch {
				case ok && (n != end || end == len(rest)):
					t.Fatalf("line of %d bytes read as %d: %q", end, n, rest)
				case ok && !okLine:
					t.Fatalf("parsed in place, refused as a line: %q", rest[:end])
				case !ok && okLine && end < len(rest):
					t.Fatalf("parsed as a line, refused in place: %q", rest[:end])
				case ok && !reflect.DeepEqual(in.toMap(), line.toMap()):
					t.Fatalf("in place %q, as a line %q", in.toMap(), line.toMap())
				}
			}
			start = next
		}
	})
}

// TestIndexQuote: the in-place parser's search for a string's closing
// quote stops at the end of the line, and finds what a byte loop finds.
func TestIndexQuote(t *testing.T) {
	ref := func(b []byte, nl bool) int {
		for i, c := range b {
			if c == '"' {
				return i
			}
			if nl && c == '\n' {
				return -1
			}
		}
		return -1
	}
	cases := [][]byte{nil, []byte(`"`), []byte("abc\ndef\"ghi"), []byte("0123456789abcdef\"\n"),
		[]byte("0123456\n89abcdef\""), append(bytes.Repeat([]byte("\x80\xff"), 40), '"')}
	r := rand.New(rand.NewPCG(5, 6))
	for range 5000 {
		b := make([]byte, r.IntN(40))
		for i := range b {
			b[i] = []byte("ab\"\n\\\x80\x0a\x22\xa2")[r.IntN(9)]
		}
		cases = append(cases, b)
	}
	for _, b := range cases {
		for _, nl := range []bool{false, true} {
			p := jscan{nl: nl}
			if got, want := p.indexQuote(b), ref(b, nl); got != want {
				t.Fatalf("indexQuote(%q) with nl %v = %d, want %d", b, nl, got, want)
			}
		}
	}
}
