package ingest

import (
	"bytes"
	"strconv"
	"testing"
)

// TestMemberMemo: members repeated byte for byte are taken from the memo
// (their misses reset), then as a run, and a member that only starts like the one
// remembered (a longer number, a longer string) is parsed.
func TestMemberMemo(t *testing.T) {
	lines := []string{
		`{"N":12,"S":"ab","Z":null,"E":"","M":"one"}`,
		`{"N":12,"S":"ab","Z":null,"E":"","M":"two"}`,
		`{"N":12,"S":"ab","Z":null,"E":"","M":"three"}`,
		`{"N":123,"S":"abc","Z":null,"E":"","M":"four"}`,
		`{"N":123 ,"S":"abc","Z":null,"E":"", "M":"five"}`,
	}
	want := []map[string]string{
		{"N": "12", "S": "ab", "E": "", "M": "one"},
		{"N": "12", "S": "ab", "E": "", "M": "two"},
		{"N": "12", "S": "ab", "E": "", "M": "three"},
		{"N": "123", "S": "abc", "E": "", "M": "four"},
		{"N": "123", "S": "abc", "E": "", "M": "five"},
	}
	var kc keyCache
	var r flatRecord
	for i, l := range lines {
		if !parseFlat(&r, &kc, []byte(l)) {
			t.Fatalf("line %d: refused", i)
		}
		got := r.toMap()
		for k, v := range want[i] {
			if g, ok := got[k]; !ok || string(g) != v || g == nil {
				t.Errorf("line %d: %s = %q (present %v), want %q", i, k, g, ok, v)
			}
		}
		if z, ok := got["Z"]; !ok || z != nil {
			t.Errorf("line %d: Z = %q (present %v), want null", i, z, ok)
		}
		if e := got["E"]; e == nil {
			t.Errorf("line %d: E is nil, want an empty string", i)
		}
		// Line 1 took N, S, Z and E from the memo one by one, which made
		// them a run; line 2 took the run.
		if i == 2 && (len(kc.runs) == 0 || kc.runs[0].n != 4 || string(kc.runs[0].raw) != `"N":12,"S":"ab","Z":null,"E":""`) {
			t.Errorf("after line 2: runs %+v, want N to E as one run", kc.runs)
		}
	}
	// M changed every time.
	for i, name := range []string{"N", "S", "Z", "E"} {
		if m := kc.members[i]; m.name != name {
			t.Fatalf("member %d is %q, want %q", i, m.name, name)
		}
	}
	if m := kc.members[2]; m.misses != 0 || !bytes.Equal(m.raw, []byte(`"Z":null`)) {
		t.Errorf("Z: misses %d, raw %q; want taken from the memo", m.misses, m.raw)
	}
	if m := kc.members[4]; m.misses != 5 || len(m.raw) != 0 {
		t.Errorf("M: misses %d, raw %q; want parsed every time and no longer copied", m.misses, m.raw)
	}
}

// TestRunTakenInPlace: a run the previous record added at the same place
// is taken where it lies, and not once a parse in between (here the
// encoding/json fallback's fromMap) wrote other fields there.
func TestRunTakenInPlace(t *testing.T) {
	var kc keyCache
	var r flatRecord
	check := func(i int, want map[string]string) {
		t.Helper()
		got := r.toMap()
		if len(got) != len(want) {
			t.Fatalf("record %d: %d fields %q, want %d", i, len(got), got, len(want))
		}
		for k, v := range want {
			if string(got[k]) != v {
				t.Errorf("record %d: %s = %q, want %q", i, k, got[k], v)
			}
		}
	}
	parse := func(i int) {
		t.Helper()
		m := strconv.Itoa(i)
		if !parseFlat(&r, &kc, []byte(`{"M":"`+m+`","X":"a","Y":"b","Z":"c"}`)) {
			t.Fatalf("record %d refused", i)
		}
		check(i, map[string]string{"M": m, "X": "a", "Y": "b", "Z": "c"})
	}
	for i := range 4 {
		parse(i) // 1: X to Z from the memo, made a run; 2: added; 3: in place
	}
	if u := kc.runs[1]; u.n != 3 || u.in != &r || u.gen != r.gen {
		t.Fatalf("run at 1: n %d, in %p (record %p), gen %d (record %d); want X to Z added to r by the last parse", u.n, u.in, &r, u.gen, r.gen)
	}
	r.fromMap(Record{"P": []byte("1"), "Q": []byte("2"), "R": []byte("3"), "S": []byte("4")}, nil)
	check(4, map[string]string{"P": "1", "Q": "2", "R": "3", "S": "4"})
	parse(5)
	parse(6)
}
