package domain

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// marshalEqual fails t unless AppendJSON writes what json.Marshal does.
func marshalEqual(t *testing.T, j AttemptJSON) {
	t.Helper()
	want, werr := json.Marshal(j)
	got, gerr := j.AppendJSON([]byte("x"))
	if (werr != nil) != (gerr != nil) {
		t.Fatalf("error %v, json.Marshal's %v", gerr, werr)
	}
	if werr != nil {
		if string(got) != "x" {
			t.Fatalf("on error, dst changed to %q", got)
		}
		return
	}
	if !bytes.Equal(got[1:], want) || got[0] != 'x' {
		t.Fatalf("AppendJSON:\n%s\njson.Marshal:\n%s", got, want)
	}
	for _, in := range [][2]string{{"", ""}, {"  ", " "}, {"\t", "  "}} {
		want, _ := json.MarshalIndent(j, in[0], in[1])
		got, err := j.AppendJSONIndent([]byte("x"), in[0], in[1])
		if err != nil || !bytes.Equal(got[1:], want) {
			t.Fatalf("AppendJSONIndent(%q, %q) (%v):\n%s\njson.MarshalIndent:\n%s", in[0], in[1], err, got, want)
		}
	}
}

// TestAppendJSONEveryField sets every field of AttemptJSON and
// EvidenceJSON, found by reflection, to a value of its type: a field added
// to the contract and not to AppendJSON fails here.
func TestAppendJSONEveryField(t *testing.T) {
	n := 7
	var j AttemptJSON
	v := reflect.ValueOf(&j).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString("v<" + v.Type().Field(i).Name + ">")
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Pointer:
			f.Set(reflect.ValueOf(&n))
		case reflect.Slice, reflect.Map:
			// below
		default:
			t.Fatalf("field %s: kind %s not covered by this test", v.Type().Field(i).Name, f.Kind())
		}
	}
	j.Findings = []string{"a", "b"}
	j.Shape = Shape{"max_model_len": int64(4096), "kv_cache_dtype": "fp8", "max_concurrency": 12.5, "enforce_eager": true}
	var e EvidenceJSON
	ev := reflect.ValueOf(&e).Elem()
	for i := range ev.NumField() {
		if ev.Field(i).Kind() != reflect.String {
			t.Fatalf("evidence field %s is not a string", ev.Type().Field(i).Name)
		}
		ev.Field(i).SetString("e&" + ev.Type().Field(i).Name)
	}
	j.Evidence = []EvidenceJSON{e, {Message: ""}}
	marshalEqual(t, j)
	got, _ := j.AppendJSON(nil)
	for i := range v.NumField() {
		name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ",")
		if !bytes.Contains(got, []byte(`"`+name+`":`)) {
			t.Errorf("%s missing from %s", name, got)
		}
	}
	// Each field empty in turn: omitempty and null as json.Marshal has them.
	for i := range v.NumField() {
		k := j
		reflect.ValueOf(&k).Elem().Field(i).SetZero()
		marshalEqual(t, k)
	}
	marshalEqual(t, AttemptJSON{})
	marshalEqual(t, AttemptJSON{Findings: []string{}, Shape: Shape{}, Evidence: []EvidenceJSON{}})
}

// TestAppendJSONStrings: every byte alone and inside text, the escapes
// json.Marshal makes (controls, quotes, HTML, U+2028/9), invalid and
// truncated UTF-8, and random byte strings.
func TestAppendJSONStrings(t *testing.T) {
	texts := []string{"", "plain", `a"b\c`, "<script>&amp;</script>", "\u2028x\u2029", "é中😀", "\xff", "a\xc3", "\xed\xa0\x80", "\x7f\x00\x1f"}
	for c := range 256 {
		texts = append(texts, string([]byte{byte(c)}), "ab"+string([]byte{byte(c)})+"cd")
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		b := make([]byte, r.IntN(40))
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		texts = append(texts, string(b))
	}
	for _, s := range texts {
		marshalEqual(t, AttemptJSON{ID: s, Findings: []string{s}, Shape: Shape{s: s}, Evidence: []EvidenceJSON{{Message: s, Cursor: s}}})
	}
	// Shape keys in json.Marshal's order, invalid UTF-8 among them.
	for i := 0; i+8 <= len(texts); i += 8 {
		sh := Shape{}
		for _, k := range texts[i : i+8] {
			sh[k] = len(k)
		}
		marshalEqual(t, AttemptJSON{Shape: sh})
	}
}

// TestAppendJSONShapeValues: the shape's numbers as json.Marshal writes
// them (exponent form at the edges), its other types through json.Marshal,
// and its errors.
func TestAppendJSONShapeValues(t *testing.T) {
	values := []any{nil, true, false, 0, -1, int64(math.MaxInt64), int64(math.MinInt64), 0.0, math.Copysign(0, -1),
		1.5, 1e-6, 9.99e-7, 1e-7, 1.23e-10, 1e20, 1e21, 123456789e15, -2.5e-300, math.MaxFloat64, math.SmallestNonzeroFloat64,
		float32(1.1), uint8(3), []string{"a"}, map[string]int{"b": 1}, json.Number("12")}
	r := rand.New(rand.NewPCG(3, 4))
	for range 3000 {
		values = append(values, math.Float64frombits(r.Uint64()), r.NormFloat64()*math.Pow(10, float64(r.IntN(60)-30)))
	}
	for _, v := range values {
		if f, ok := v.(float64); ok && (math.IsNaN(f) || math.IsInf(f, 0)) {
			continue
		}
		marshalEqual(t, AttemptJSON{Shape: Shape{"k": v, "a": 1}})
	}
	for _, bad := range []any{math.NaN(), math.Inf(1), make(chan int)} {
		marshalEqual(t, AttemptJSON{Shape: Shape{"k": bad}})
	}
}

func FuzzAppendJSON(f *testing.F) {
	f.Add("id", "<msg>\u2028", 1.5, int64(3), true)
	f.Add("\xff", "\x00\"\\", 1e-7, int64(-1), false)
	f.Add("", "0", 2415.3333336666665, int64(-146), false)
	f.Fuzz(func(t *testing.T, s, msg string, x float64, n int64, ok bool) {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			x = 0
		}
		j := AttemptJSON{ID: s, Note: msg, ReachedReady: ok, Findings: []string{s, msg},
			Shape: Shape{s: x, msg: n, "b": ok, "s": msg}, Evidence: []EvidenceJSON{{Time: s, Message: msg}}}
		marshalEqual(t, j)
		// An empty id is left out (omitempty), as json.Marshal does.
		if s != "" && utf8.ValidString(s) && !strings.ContainsAny(s, "<>&\"\\") {
			got, _ := j.AppendJSON(nil)
			if !bytes.Contains(got, []byte(`"id":"`)) {
				t.Fatalf("no id in %s", got)
			}
		}
	})
}
