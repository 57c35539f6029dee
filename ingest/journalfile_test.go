package ingest

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"

	"github.com/llmfleet/analyzer/domain"
)

// testJournal builds a journal file as journal-def.h lays it out: a
// 264-byte header (systemd 252's), then for each entry the DATA objects of
// its fields not stored yet and its ENTRY object, each at an 8-byte
// boundary. The hash tables and entry arrays are left out: the reader
// needs none; an entry ["#array N"] is an entry array object of N bytes
// instead. pack, when set, may compress a payload and return the object
// flag saying how. It returns the file and each object's offset.
func testJournal(compact bool, entries [][]string, pack func(payload []byte) (byte, []byte)) ([]byte, []int) {
	le := binary.LittleEndian
	uses := map[string]uint64{}
	for _, e := range entries {
		for _, f := range e {
			uses[f]++
		}
	}
	b := make([]byte, 264)
	copy(b, journalMagic)
	if compact {
		le.PutUint32(b[12:], journalCompact)
	}
	copy(b[72:88], "0123456789abcdef") // seqnum_id
	le.PutUint64(b[88:], 264)
	var objs []int
	object := func(typ, flags byte, body []byte) uint64 {
		at := len(b)
		objs = append(objs, at)
		h := make([]byte, journalObjHeader)
		h[0], h[1] = typ, flags
		le.PutUint64(h[8:], uint64(journalObjHeader+len(body)))
		b = append(b, h...)
		b = append(b, body...)
		for len(b)%8 != 0 {
			b = append(b, 0)
		}
		return uint64(at)
	}
	stored := map[string]uint64{}
	seq := 0
	for _, e := range entries {
		if len(e) == 1 && strings.HasPrefix(e[0], "#array ") {
			// An entry array of that many bytes, which the reader skips.
			n, _ := strconv.Atoi(strings.TrimPrefix(e[0], "#array "))
			object(6, 0, make([]byte, n))
			continue
		}
		i := seq
		seq++
		var offs []uint64
		for _, f := range e {
			if o, ok := stored[f]; ok {
				offs = append(offs, o)
				continue
			}
			fixed := make([]byte, journalDataRegular-journalObjHeader)
			if compact {
				fixed = make([]byte, journalDataCompact-journalObjHeader)
			}
			le.PutUint64(fixed[40:], uses[f])
			flags, payload := byte(0), []byte(f)
			if pack != nil {
				flags, payload = pack(payload)
			}
			stored[f] = object(journalObjData, flags, append(fixed, payload...))
			offs = append(offs, stored[f])
		}
		body := make([]byte, journalEntryFixed-journalObjHeader)
		le.PutUint64(body[0:], uint64(i+1))                     // seqnum
		le.PutUint64(body[8:], 1_790_000_000_000_000+uint64(i)) // realtime
		le.PutUint64(body[16:], uint64(i)*1000)                 // monotonic
		copy(body[24:40], "boot-id-0123456!")
		le.PutUint64(body[40:], 0xabc)
		for _, o := range offs {
			if compact {
				body = le.AppendUint32(body, uint32(o))
			} else {
				body = le.AppendUint64(le.AppendUint64(body, o), 0)
			}
		}
		object(journalObjEntry, 0, body)
	}
	le.PutUint64(b[96:], uint64(len(b)-264))
	le.PutUint64(b[136:], uint64(objs[len(objs)-1]))
	le.PutUint64(b[152:], uint64(seq))
	return b, objs
}

var testJournalEntries = [][]string{
	{"_HOSTNAME=h1", "_SYSTEMD_UNIT=vllm.service", "MESSAGE=first line", "X=1"},
	{"_HOSTNAME=h1", "_SYSTEMD_UNIT=vllm.service", "MESSAGE=second\nline", "X=2"},
	{"_HOSTNAME=h1", "_SYSTEMD_UNIT=vllm.service", "MESSAGE=first line", "X=2", "_BOOT_ID=6161"},
	{"_HOSTNAME=h2", "MESSAGE=" + strings.Repeat("long ", 200)},
}

func readJournalBytes(t *testing.T, b []byte) ([]domain.Entry, Stats, error) {
	t.Helper()
	var es []domain.Entry
	st, err := Read(context.Background(), bytes.NewReader(b), "j", Options{}, func(e domain.Entry) error {
		es = append(es, e)
		return nil
	})
	return es, st, err
}

func TestJournalFileEntries(t *testing.T) {
	for _, compact := range []bool{false, true} {
		t.Run(fmt.Sprint("compact=", compact), func(t *testing.T) {
			b, _ := testJournal(compact, testJournalEntries, nil)
			es, st, err := readJournalBytes(t, b)
			if err != nil || st.Format != FormatJournal || st.Malformed != 0 || st.Records != 4 {
				t.Fatalf("err %v, format %v, %d records, %d malformed %v", err, st.Format, st.Records, st.Malformed, st.Errors)
			}
			var msgs []string
			for _, e := range es {
				msgs = append(msgs, e.Message)
			}
			if want := []string{"first line", "second\nline", "first line", strings.TrimSpace(strings.Repeat("long ", 200))}; fmt.Sprint(msgs) != fmt.Sprint(want) {
				t.Errorf("messages %q, want %q", msgs, want)
			}
			e := es[0]
			if e.Host != "h1" || e.Unit != "vllm.service" || e.Fields["X"] != "1" ||
				e.Cursor != "s=30313233343536373839616263646566;i=1;b=626f6f742d69642d3031323334353621;m=0;t=65bfeda25e000;x=abc" ||
				e.Fields["_BOOT_ID"] != "626f6f742d69642d3031323334353621" || e.Fields["__MONOTONIC_TIMESTAMP"] != "0" ||
				!e.Time.Equal(time.UnixMicro(1_790_000_000_000_000)) {
				t.Errorf("first entry %+v", e)
			}
			// The third entry repeats the first's items and adds _BOOT_ID:
			// the data's value wins over the entry object's boot ID.
			if es[2].Fields["X"] != "2" || es[2].Fields["_BOOT_ID"] != "6161" || es[3].Host != "h2" || es[3].Unit != "" {
				t.Errorf("later entries: %+v / %+v", es[2], es[3])
			}
		})
	}
}

func TestJournalFileCompressedValues(t *testing.T) {
	zw, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	xz := xzTool(t, []byte("X=from xz"), "-0")
	// LZ4 as systemd writes it: the decoded size, then one block.
	long := []byte(testJournalEntries[3][1])
	block := make([]byte, lz4.CompressBlockBound(len(long)))
	n, err := lz4.CompressBlock(long, block, nil)
	if err != nil || n == 0 {
		t.Fatalf("lz4: %d, %v", n, err)
	}
	pack := func(p []byte) (byte, []byte) {
		switch string(p) {
		case "X=1":
			return journalObjZSTD, zw.EncodeAll([]byte("X=from zstd"), nil)
		case "X=2":
			return journalObjXZ, xz
		case string(long):
			return journalObjLZ4, append(binary.LittleEndian.AppendUint64(nil, uint64(len(long))), block[:n]...)
		case "_SYSTEMD_UNIT=vllm.service":
			// 10 bytes that claim 1 MiB: refused before it is allocated.
			return journalObjLZ4, append(binary.LittleEndian.AppendUint64(nil, 1<<20), 0, 0)
		}
		return 0, p
	}
	b, _ := testJournal(true, testJournalEntries, pack)
	es, st, err := readJournalBytes(t, b)
	if err != nil {
		t.Fatal(err)
	}
	if es[0].Fields["X"] != "from zstd" || es[1].Fields["X"] != "from xz" || es[0].Unit != "" || es[0].Message != "first line" ||
		es[3].Message != strings.TrimSpace(string(long[len("MESSAGE="):])) {
		t.Errorf("entries %+v / %+v / %.30q", es[0], es[1], es[3].Message)
	}
	// The claiming LZ4 object, then each of the three entries that lack it.
	if st.Malformed != 4 || !strings.Contains(st.Errors[0], "claims 1048576") {
		t.Errorf("%d malformed: %q", st.Malformed, st.Errors)
	}
	// A value that decompresses past the record cap is refused.
	big := zw.EncodeAll(append([]byte("X="), bytes.Repeat([]byte("a"), 65<<20)...), nil)
	b, _ = testJournal(false, [][]string{{"MESSAGE=m", "X=big"}}, func(p []byte) (byte, []byte) {
		if string(p) == "X=big" {
			return journalObjZSTD, big
		}
		return 0, p
	})
	es, st, err = readJournalBytes(t, b)
	if err != nil || len(es) != 1 || es[0].Fields["X"] != "" || st.Malformed != 2 || !strings.Contains(st.Errors[0], "decompressed") {
		t.Errorf("err %v, %d entries, %d malformed %q", err, len(es), st.Malformed, st.Errors)
	}
}

func TestJournalFileDamaged(t *testing.T) {
	b, objs := testJournal(true, testJournalEntries, nil)
	// Cut anywhere: the entries before the cut are read, and the cut is
	// counted (a header cut short is an error).
	for n := 0; n < len(b); n++ {
		es, st, err := readJournalBytes(t, b[:n])
		if n < journalHeaderMin+1 {
			continue // too short to be told from other input, or the header cut
		}
		if err != nil {
			t.Fatalf("cut at %d: %v", n, err)
		}
		if len(es) > 4 || n <= objs[len(objs)-1] && st.Malformed == 0 {
			t.Fatalf("cut at %d: %d entries, %d malformed", n, len(es), st.Malformed)
		}
	}
	// An object whose size is not one: the rest of the file is lost, what
	// came before is kept.
	bad := bytes.Clone(b)
	binary.LittleEndian.PutUint64(bad[objs[5]+8:], 3)
	es, st, err := readJournalBytes(t, bad)
	if err != nil || len(es) != 1 || st.Malformed != 1 || !strings.Contains(st.Errors[0], "size 3") {
		t.Errorf("bad size: err %v, %d entries, %q", err, len(es), st.Errors)
	}
	// An entry pointing at no data object it can have read.
	bad = bytes.Clone(b)
	binary.LittleEndian.PutUint32(bad[objs[4]+journalEntryFixed:], 9)
	es, st, _ = readJournalBytes(t, bad)
	if len(es) != 4 || es[0].Host != "" || st.Malformed != 1 {
		t.Errorf("dangling item: %d entries, host %q, %q", len(es), es[0].Host, st.Errors)
	}
	// A layout this reader does not know is refused whole.
	bad = bytes.Clone(b)
	binary.LittleEndian.PutUint32(bad[12:], journalCompact|1<<7)
	if _, _, err := readJournalBytes(t, bad); err == nil || !strings.Contains(err.Error(), "0x90") {
		t.Errorf("unknown incompatible flag: %v", err)
	}
	bad = bytes.Clone(b)
	binary.LittleEndian.PutUint64(bad[88:], 1<<40)
	if _, _, err := readJournalBytes(t, bad); err == nil || !strings.Contains(err.Error(), "header of") {
		t.Errorf("header size: %v", err)
	}
}

// FuzzJournalFile reads mutations of built journal files (both layouts,
// zstd and LZ4 values): within the budget FuzzRead allows, an entry per 64
// bytes of input at most (an ENTRY object's fixed part), messages under
// the line cap.
func FuzzJournalFile(f *testing.F) {
	zw, err := zstd.NewWriter(nil)
	if err != nil {
		f.Fatal(err)
	}
	for _, compact := range []bool{false, true} {
		j, _ := testJournal(compact, testJournalEntries, nil)
		f.Add(j)
		j, _ = testJournal(compact, testJournalEntries, func(p []byte) (byte, []byte) {
			return journalObjZSTD, zw.EncodeAll(p, nil)
		})
		f.Add(j)
		j, _ = testJournal(compact, testJournalEntries, func(p []byte) (byte, []byte) {
			block := make([]byte, lz4.CompressBlockBound(len(p)))
			if n, err := lz4.CompressBlock(p, block, nil); err == nil && n > 0 {
				return journalObjLZ4, append(binary.LittleEndian.AppendUint64(nil, uint64(len(p))), block[:n]...)
			}
			return 0, p
		})
		f.Add(j)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if n := fuzzRead(t, data, FormatJournal); n > len(data)/64+1 {
			t.Fatalf("%d entries from %d bytes", n, len(data))
		}
	})
}

func TestAppendHex(t *testing.T) {
	for _, v := range []uint64{0, 1, 0xf, 0x10, 0xabc, 1<<63 - 1, 1 << 63, ^uint64(0), 0x65bfeda25e000} {
		if got, want := string(appendHex([]byte("x"), v)), "x"+strconv.FormatUint(v, 16); got != want {
			t.Errorf("appendHex(%d) = %q, want %q", v, got, want)
		}
	}
}

// TestJournalFileLingeringValue: values announced for one entry that come
// late or never (the entry their counters were written for turned into a
// TAG here) wait while 1 KB messages pass; the arena the messages are
// read into is emptied past 1 MiB all the same, and every value reads
// right, the late one too (written into an arena already grown large, it
// is overwritten unless moved out first).
func TestJournalFileLingeringValue(t *testing.T) {
	msgs := func(from int) (es [][]string) {
		for i := from; i < from+1100; i++ {
			es = append(es, []string{"_HOSTNAME=h", fmt.Sprintf("MESSAGE=%04d %s", i, strings.Repeat("x", 1000))})
		}
		return es
	}
	entries := [][]string{{"Y=never"}}
	entries = append(entries, msgs(0)...)
	entries = append(entries, []string{"X=late"})
	entries = append(entries, msgs(1100)...)
	entries = append(entries, []string{"_HOSTNAME=h", "MESSAGE=last", "X=late"})
	b, objs := testJournal(true, entries, nil)
	for _, v := range []string{"Y=never", "X=late"} {
		data := bytes.Index(b, []byte(v)) - journalDataCompact
		k := slices.Index(objs, data)
		binary.LittleEndian.PutUint64(b[data+journalObjHeader+40:], 1) // n_entries
		b[objs[k+1]] = 7                                               // its ENTRY object, now a TAG
	}
	es, st, err := readJournalBytes(t, b)
	if err != nil || len(es) != 2201 || st.Malformed != 0 {
		t.Fatalf("err %v, %d entries, %d malformed", err, len(es), st.Malformed)
	}
	for i, e := range es[:2200] {
		if want := fmt.Sprintf("%04d %s", i, strings.Repeat("x", 1000)); e.Message != want {
			t.Fatalf("entry %d: %.20q", i, e.Message)
		}
	}
	if last := es[2200]; last.Message != "last" || last.Fields["X"] != "late" {
		t.Errorf("last entry: %q, X=%q", last.Message, last.Fields["X"])
	}
}

// TestJournalFileSharedFields: entries whose DATA objects for Entry.Fields
// are the last entry's share its Fields map without a comparison; one
// changed, added or dropped gives a map of its own with the right values.
func TestJournalFileSharedFields(t *testing.T) {
	entries := [][]string{
		{"_HOSTNAME=h", "X=1", "MESSAGE=a"},
		{"_HOSTNAME=h", "X=1", "MESSAGE=b"},
		{"_HOSTNAME=h", "X=2", "MESSAGE=c"},
		{"_HOSTNAME=h", "X=2", "MESSAGE=d", "Y=not kept"},
		{"_HOSTNAME=h", "X=2", "MESSAGE=e", "Z=9"},
		{"_HOSTNAME=h", "MESSAGE=f"},
		{"_HOSTNAME=h", "MESSAGE=g"},
	}
	b, _ := testJournal(true, entries, nil)
	var es []domain.Entry
	if _, err := Read(context.Background(), bytes.NewReader(b), "j", Options{Fields: []string{"X", "Z"}}, func(e domain.Entry) error {
		es = append(es, e)
		return nil
	}); err != nil || len(es) != 7 {
		t.Fatalf("err %v, %d entries", err, len(es))
	}
	for i, want := range []string{"map[X:1]", "map[X:1]", "map[X:2]", "map[X:2]", "map[X:2 Z:9]", "map[]", "map[]"} {
		if got := fmt.Sprint(es[i].Fields); got != want {
			t.Errorf("entry %d: Fields %s, want %s", i, got, want)
		}
	}
	same := func(i, j int) bool {
		return reflect.ValueOf(es[i].Fields).Pointer() == reflect.ValueOf(es[j].Fields).Pointer()
	}
	if !same(0, 1) || same(1, 2) || !same(2, 3) || same(3, 4) {
		t.Errorf("maps shared: 0-1 %v, 1-2 %v, 2-3 %v, 3-4 %v", same(0, 1), same(1, 2), same(2, 3), same(3, 4))
	}
}

// TestJournalFileSkipsBySeeking: objects the reader does not need are
// passed over by seeking in a seekable file, by reading otherwise, with
// the same entries; the seek starts inside the read buffer or past it.
func TestJournalFileSkipsBySeeking(t *testing.T) {
	entries := [][]string{{"MESSAGE=a", "X=1"}, {"#array 300000"}, {"MESSAGE=b", "X=1"}, {"#array 70000"}, {"MESSAGE=c"}}
	for i := 0; i < 3000; i++ {
		entries = append(entries, []string{fmt.Sprintf("MESSAGE=%d", i), "X=1"})
	}
	entries = append(entries, []string{"#array 1000000"}, []string{"MESSAGE=last", "X=1"})
	b, _ := testJournal(false, entries, nil)
	var seek, read []string
	for _, c := range []struct {
		r   io.Reader
		out *[]string
	}{{bytes.NewReader(b), &seek}, {io.MultiReader(bytes.NewReader(b)), &read}} {
		st, err := Read(context.Background(), c.r, "j", Options{}, func(e domain.Entry) error {
			*c.out = append(*c.out, e.Message+" "+e.Fields["X"])
			return nil
		})
		if err != nil || st.Malformed != 0 || st.Bytes != int64(len(b)) {
			t.Fatalf("err %v, %d malformed %q, %d of %d bytes", err, st.Malformed, st.Errors, st.Bytes, len(b))
		}
	}
	if len(seek) != 3004 || !slices.Equal(seek, read) || seek[3003] != "last 1" || seek[2] != "c " {
		t.Errorf("%d entries seeking, %d reading; last %q", len(seek), len(read), seek[len(seek)-1])
	}
}
