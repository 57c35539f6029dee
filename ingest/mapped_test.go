package ingest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/llmfleet/analyzer/domain"
)

// TestMappedLinesAsBuffered holds mappedInput.line to lineReader.next on a
// bufio.Reader (the reader of every input that is not mapped) over random
// inputs: lines empty, short, longer than the buffer and than max, with and
// without a last '\n', dropping behind the reader at every page.
func TestMappedLinesAsBuffered(t *testing.T) {
	defer func(d, k int) { dropEvery, keepBehind = d, k }(dropEvery, keepBehind)
	dropEvery, keepBehind = pageSize, pageSize
	rng := rand.New(rand.NewPCG(7, 27))
	for round := range 300 {
		var b bytes.Buffer
		for range rng.IntN(40) {
			n := rng.IntN(60)
			if rng.IntN(10) == 0 {
				n = rng.IntN(3 * pageSize)
			}
			b.WriteString(strings.Repeat(string(rune('a'+rng.IntN(26))), n))
			b.WriteByte('\n')
		}
		if rng.IntN(2) == 0 {
			b.WriteString(strings.Repeat("z", rng.IntN(30)))
		}
		max := 1 + rng.IntN(80)
		want := lineReader{br: bufio.NewReaderSize(bytes.NewReader(b.Bytes()), 16), max: max}
		m := &mappedInput{data: mapped(t, b.Bytes())}
		for i := 0; ; i++ {
			wl, wn, wlong, werr := want.next()
			gl, gn, glong, gerr := m.line(max)
			if string(gl) != string(wl) || gn != wn || glong != wlong || gerr != werr {
				t.Fatalf("round %d, line %d (max %d): got %q %d %v %v, want %q %d %v %v", round, i, max, gl, gn, glong, gerr, wl, wn, wlong, werr)
			}
			if werr != nil {
				break
			}
		}
	}
}

// TestMappedFileShrinks cuts a file short while it is read through its map:
// the pages past the new end are gone, and the read must end with
// errChanged, not with the process (SIGBUS).
func TestMappedFileShrinks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cut.json")
	line := `{"__CURSOR":"s=1;i=1","__REALTIME_TIMESTAMP":"1700000000000000","MESSAGE":"` + strings.Repeat("x", 200) + `"}` + "\n"
	if err := os.WriteFile(path, bytes.Repeat([]byte(line), (4<<20)/len(line)), 0o600); err != nil {
		t.Fatal(err)
	}
	mapped(t, nil) // skips where no file is mapped
	entries := 0
	st, err := ReadFile(context.Background(), path, Options{}, func(domain.Entry) error {
		if entries++; entries == 1 {
			return os.Truncate(path, 0)
		}
		return nil
	})
	if !errors.Is(err, errChanged) {
		t.Fatalf("read of a file cut to 0 bytes after its first entry: %d entries, error %v; want %v", entries, err, errChanged)
	}
	if entries < 1 || entries > 100 || st.Entries != int64(entries) || st.Format != FormatJSON || st.Bytes == 0 {
		t.Errorf("%d entries read from a file cut after the first; stats %+v", entries, st)
	}
}

// TestReadsInPlace: a mapped JSON file's lines and a mapped journal
// file's objects are taken from the map, not copied out of it through
// its Reader (which only format detection uses).
func TestReadsInPlace(t *testing.T) {
	// Drops at a fixed distance, so that the bound on what stays resident
	// below stays a small part of the 12-40 MB inputs whatever dropEvery
	// is tuned to.
	defer func(d int) { dropEvery = d }(dropEvery)
	dropEvery = 256 << 10
	var js bytes.Buffer
	for i := range 150000 {
		fmt.Fprintf(&js, `{"__CURSOR":"c%d","__REALTIME_TIMESTAMP":"%d","MESSAGE":"line %d %s"}`+"\n", i, int64(1700000000000000)+int64(i), i, strings.Repeat("x", 40))
	}
	var es [][]string
	for i := range 60000 {
		es = append(es, []string{"_HOSTNAME=h", fmt.Sprintf("MESSAGE=%05d %s", i, strings.Repeat("y", 200))})
	}
	jf, _ := testJournal(true, es, nil)
	// Values longer than the reader keeps mapped behind it.
	es = es[:0]
	for i := range 100 {
		es = append(es, []string{"_HOSTNAME=h", fmt.Sprintf("MESSAGE=%03d %s", i, strings.Repeat("z", 400<<10))})
	}
	big, _ := testJournal(true, es, nil)
	for _, c := range []struct {
		name    string
		in      []byte
		entries int
	}{{"json", js.Bytes(), 150000}, {"journal", jf, 60000}, {"journal of 400 KiB values", big, 100}} {
		m := &mappedInput{data: mapped(t, c.in)}
		n, most := 0, 0
		rn := newRun(context.Background(), &countingReader{r: m}, c.name, Options{}, func(domain.Entry) error {
			if n++; n%2000 == 0 || c.entries < 2000 {
				most = max(most, residentKiB(t, m.data))
			}
			return nil
		})
		rn.mapped = m
		st, err := rn.finish(rn.read())
		if err != nil || n != c.entries || st.Malformed != 0 {
			t.Fatalf("%s: %d entries, %d malformed, error %v", c.name, n, st.Malformed, err)
		}
		if m.copied > readBufSize || m.off < len(c.in)*9/10 {
			t.Errorf("%s: %d of %d bytes copied out of the map, %d read; want only what detection read copied", c.name, m.copied, len(c.in), m.off)
		}
		// The pages behind the reader leave the resident set, and none
		// come back behind it: what stays resident does not follow the
		// input's size (on a file system that caches files in 2 MiB folios,
		// ext4 here, the kernel maps them whole: two of them).
		if limit := (dropEvery + 2*keepBehind + 4<<20) >> 10; most < 0 || most > limit {
			t.Errorf("%s: %d KiB of the %d KiB map resident at most; want at most %d KiB", c.name, most, len(c.in)>>10, limit)
		}
	}
}

// residentKiB is the Rss /proc/self/smaps gives the mapping that holds b,
// in KiB (the test is skipped where there is no such file, and fails when
// no mapping holds b).
func residentKiB(t *testing.T, b []byte) int {
	t.Helper()
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Skip("needs /proc/self/smaps:", err)
	}
	addr := uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b))))
	in := false
	for _, l := range strings.Split(string(smaps), "\n") {
		var lo, hi uint64
		if n, _ := fmt.Sscanf(l, "%x-%x ", &lo, &hi); n == 2 {
			in = addr >= lo && addr < hi
			continue
		}
		var kb int
		if in {
			if n, _ := fmt.Sscanf(l, "Rss: %d kB", &kb); n == 1 {
				return kb
			}
		}
	}
	t.Fatalf("no mapping holds %p in /proc/self/smaps", unsafe.SliceData(b))
	return -1
}

// mapped is b in a mapped file, unmapped when the test ends.
func mapped(t *testing.T, b []byte) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "in")
	if err := os.WriteFile(path, append(b, 0), 0o600); err != nil { // a map of 0 bytes fails
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	defer func(n int64) { mapMin = n }(mapMin)
	mapMin = 0
	data := mapFile(f)
	if data == nil {
		t.Skip("the platform maps no file")
	}
	t.Cleanup(func() { unmapFile(data) })
	return data[:len(b)]
}

// FuzzMappedAsRead reads arbitrary files through their map (lines and
// journal objects in place, pages dropped behind the reader at every
// page) and through read(2): the same entries, stats and errors. A
// journal file's byte count may end earlier in place (at its last object,
// not where the buffer read to).
func FuzzMappedAsRead(f *testing.F) {
	seedLines(f, 3)
	for _, compact := range []bool{false, true} {
		j, _ := testJournal(compact, testJournalEntries, nil)
		f.Add(j)
		f.Add(j[:len(j)*2/3])
	}
	// JSON lines the map reads in place, and the reader as lines.
	f.Add(inPlaceLines)
	defer func(n int64, d, k, w int) {
		mapMin, dropEvery, keepBehind, inPlaceLine = n, d, k, w
	}(mapMin, dropEvery, keepBehind, inPlaceLine)
	// Lines longer than 64 bytes are read as lines.
	mapMin, dropEvery, keepBehind, inPlaceLine = 1, pageSize, pageSize, 64
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "in")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := mappedAgainstRead(path, Options{MaxLineBytes: 4096}); err != nil {
			t.Fatal(err)
		}
	})
}

// mappedAgainstRead reads path through its map (ReadFile) and through
// read(2) (Read of the open file) with opt, and describes the first
// difference in their entries, stats or errors; a journal file's byte
// count may end earlier through the map (at its last object, where read
// counts what its buffer read past it). It returns the format read.
func mappedAgainstRead(path string, opt Options) (Format, error) {
	got, gst, gerr := collect(func(fn func(domain.Entry) error) (Stats, error) {
		return ReadFile(context.Background(), path, opt, fn)
	})
	want, wst, werr := collect(func(fn func(domain.Entry) error) (Stats, error) {
		fh, err := os.Open(path)
		if err != nil {
			return Stats{}, err
		}
		defer fh.Close()
		return Read(context.Background(), fh, path, opt, fn)
	})
	if gst.Format == FormatJournal && gst.Bytes <= wst.Bytes && gst.Bytes >= wst.Bytes-readBufSize {
		gst.Bytes = wst.Bytes
	}
	if !reflect.DeepEqual(gst, wst) || fmt.Sprint(gerr) != fmt.Sprint(werr) {
		return gst.Format, fmt.Errorf("%s: mapped: %+v, %v\nread:   %+v, %v", path, gst, gerr, wst, werr)
	}
	if len(got) != len(want) {
		return gst.Format, fmt.Errorf("%s: %d entries mapped, %d read", path, len(got), len(want))
	}
	for i := range got {
		if !reflect.DeepEqual(got[i], want[i]) {
			return gst.Format, fmt.Errorf("%s: entry %d:\nmapped: %+v\nread:   %+v", path, i, got[i], want[i])
		}
	}
	return gst.Format, nil
}

func collect(r func(fn func(domain.Entry) error) (Stats, error)) ([]domain.Entry, Stats, error) {
	var es []domain.Entry
	st, err := r(func(e domain.Entry) error {
		es = append(es, e)
		return nil
	})
	return es, st, err
}
