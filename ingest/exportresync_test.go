package ingest

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/llmfleet/analyzer/internal/race"
)

// exportField is where one field of an encoded record lies.
type exportField struct {
	name   int  // offset of its name
	binary bool // a binary field: its length follows the name line
	length int  // offset of a binary field's 8-byte length
	size   int  // a binary field's data length
}

// exportRecord is where one encoded record lies: [start, end) holds its
// fields; its separator (the empty line) is the byte at end.
type exportRecord struct {
	start, end int
	fields     []exportField
}

// encodeExport writes recs in journalctl's export format, __CURSOR first
// unless withCursor is false (as an upload to systemd-journal-remote), and
// says where each record and field lies.
func encodeExport(recs []Record, withCursor bool) ([]byte, []exportRecord) {
	var b bytes.Buffer
	var idx []exportRecord
	for _, rec := range recs {
		keys := make([]string, 0, len(rec))
		for k := range rec {
			if k != FieldCapped && (withCursor || k != "__CURSOR") {
				keys = append(keys, k)
			}
		}
		rank := map[string]int{"__CURSOR": 0, "__REALTIME_TIMESTAMP": 1, "__MONOTONIC_TIMESTAMP": 2}
		sort.Slice(keys, func(i, j int) bool {
			ri, ok := rank[keys[i]]
			if !ok {
				ri = 3
			}
			rj, ok := rank[keys[j]]
			if !ok {
				rj = 3
			}
			return ri < rj || ri == rj && keys[i] < keys[j]
		})
		r := exportRecord{start: b.Len()}
		for _, k := range keys {
			v := rec[k]
			f := exportField{name: b.Len()}
			if !needsBinary(v) {
				b.WriteString(k + "=")
				b.Write(v)
				b.WriteByte('\n')
			} else {
				b.WriteString(k + "\n")
				f.binary, f.length, f.size = true, b.Len(), len(v)
				b.Write(binary.LittleEndian.AppendUint64(nil, uint64(len(v))))
				b.Write(v)
				b.WriteByte('\n')
			}
			r.fields = append(r.fields, f)
		}
		r.end = b.Len()
		b.WriteByte('\n')
		idx = append(idx, r)
	}
	return b.Bytes(), idx
}

func readExportRecords(t *testing.T, data []byte) ([]Record, Stats) {
	t.Helper()
	var out []Record
	st, err := ReadExportRecords(context.Background(), bytes.NewReader(data), "x.export", Options{},
		func(r Record) error { out = append(out, r); return nil })
	if err != nil {
		t.Fatal(err)
	}
	return out, st
}

// TestExportKeepsEveryOtherRecord damages the night fixture's export one
// place at a time (every field name, every binary field's length, every
// separator) and checks that every other record arrives as it was: the
// reader resynchronises on the next record instead of losing the rest.
// Each damage is read in a window of records around it (the mechanism does
// not depend on how much follows); TestExportCorruptLengthKeepsAttempts
// reads whole files.
func TestExportKeepsEveryOtherRecord(t *testing.T) {
	clean, _ := exportEncode(t, fixtureLines(t, "dankserver-night-ladder"))
	recs, st := readExportRecords(t, clean)
	if st.Malformed != 0 || len(recs) < 800 {
		t.Fatalf("clean export: %d records, stats %+v", len(recs), st)
	}
	step := 1
	if testing.Short() || race.Enabled {
		step = 7 // every 7th record: the race detector makes a full pass take minutes
	}
	for _, withCursor := range []bool{true, false} {
		data, idx := encodeExport(recs, withCursor)
		want := recs
		if !withCursor {
			want = make([]Record, len(recs))
			for i, r := range recs {
				want[i] = Record{}
				for k, v := range r {
					if k != "__CURSOR" {
						want[i][k] = v
					}
				}
			}
		}
		damages := 0
		check := func(i int, what string, damaged []byte, lo, hi int, keepsDamaged bool) {
			t.Helper()
			damages++
			got, st := readExportRecords(t, damaged)
			// The records before and after the damaged one arrive whole and
			// in order; of the damaged one, at most two pieces.
			before, after := want[lo:i], want[i+1:hi]
			ok := len(got) >= len(before)+len(after) && len(got) <= len(before)+len(after)+2 &&
				reflect.DeepEqual(got[:len(before)], before) &&
				reflect.DeepEqual(got[len(got)-len(after):], after)
			if keepsDamaged {
				ok = ok && reflect.DeepEqual(got, want[lo:hi])
			}
			if !ok {
				t.Fatalf("cursor %v, record %d, %s: got %d records of a window of %d (%d malformed: %v)",
					withCursor, i, what, len(got), hi-lo, st.Malformed, st.Errors)
			}
		}
		for i := 0; i < len(idx); i += step {
			lo, hi := max(0, i-4), min(len(idx), i+5)
			base, end := idx[lo].start, idx[hi-1].end+1
			window := func(edit func(b []byte) []byte) []byte {
				b := append([]byte{}, data[base:end]...)
				return edit(b)
			}
			r := idx[i]
			for _, f := range r.fields {
				at := f.name - base
				check(i, fmt.Sprintf("name at byte %d", f.name), window(func(b []byte) []byte { b[at] = '-'; return b }), lo, hi, false)
				if !f.binary {
					continue
				}
				for _, n := range []uint64{0, uint64(f.size) - 1, uint64(f.size) + 1, uint64(f.size) + 4096, 3 << 30, 1 << 63} {
					l := f.length - base
					check(i, fmt.Sprintf("length %d at byte %d", n, f.length), window(func(b []byte) []byte {
						binary.LittleEndian.PutUint64(b[l:], n)
						return b
					}), lo, hi, n == uint64(f.size))
				}
			}
			if i+1 < hi {
				sep := r.end - base
				check(i, "separator lost", window(func(b []byte) []byte { return append(b[:sep], b[sep+1:]...) }), lo, hi, true)
				for _, junk := range []string{"-", "X", "XY", "MESSAGE"} {
					check(i, "separator "+junk, window(func(b []byte) []byte {
						return append(b[:sep], append([]byte(junk+"\n"), b[sep+1:]...)...)
					}), lo, hi, false)
				}
			}
		}
		t.Logf("cursor %v: %d damaged windows, each kept every other record", withCursor, damages)
	}
}

// TestExportCorruptLengthKeepsAttempts: one binary field's length made
// 3 GiB (the reviewer's case) anywhere in the night export, without
// journalctl's __CURSOR fields, costs that record only: the whole file
// still yields every attempt.
func TestExportCorruptLengthKeepsAttempts(t *testing.T) {
	clean, _ := exportEncode(t, fixtureLines(t, "dankserver-night-ladder"))
	recs, _ := readExportRecords(t, clean)
	data, idx := encodeExport(recs, false)
	entries := func(b []byte) (map[string]bool, Stats) {
		es, st := readAll(t, b, "night.export", Options{})
		seen := map[string]bool{}
		for _, e := range es {
			seen[e.Fields["_SYSTEMD_INVOCATION_ID"]+e.Fields["INVOCATION_ID"]+e.Fields["CONTAINER_ID_FULL"]] = true
		}
		return seen, st
	}
	want, _ := entries(data)
	var lengths []int
	for _, r := range idx {
		for _, f := range r.fields {
			if f.binary {
				lengths = append(lengths, f.length)
			}
		}
	}
	if len(lengths) < 100 {
		t.Fatalf("only %d binary fields", len(lengths))
	}
	for k := 0; k < len(lengths); k += len(lengths) / 9 {
		b := append([]byte{}, data...)
		binary.LittleEndian.PutUint64(b[lengths[k]:], 3<<30)
		got, st := entries(b)
		if st.Malformed != 1 || !reflect.DeepEqual(got, want) {
			t.Errorf("length at byte %d: %d malformed (%s), %d of %d invocations", lengths[k], st.Malformed,
				strings.Join(st.Errors, "; "), len(got), len(want))
		}
	}
}
