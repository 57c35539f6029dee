package ingest

import (
	"bytes"
	"context"
	"reflect"
	"testing"

	"github.com/llmfleet/analyzer/domain"
)

// The fast parser must agree with encoding/json on every fixture line and
// on tricky values, and give up (ok=false) on what encoding/json rejects.
func TestFastJSONAgreesWithEncodingJSON(t *testing.T) {
	var lines [][]byte
	for _, name := range []string{"dankserver-night-ladder", "dankclaw-day"} {
		lines = append(lines, fixtureLines(t, name)...)
	}
	tricky := []string{
		`{}`,
		` { "A" : "x" , "B":null } `,
		`{"M":"esc \" \\ \/ \b \f \n \r \t \u00e9 \u65e5 \ud83d\ude00 end"}`,
		`{"M":"lone \ud83d surrogate"}`,
		`{"M":"lone \ud83d\u0041 pair"}`,
		`{"M":["a","b"],"N":[[1,2],[3]],"O":["x",null],"P":[]}`,
		`{"N":-1.5e+3,"Z":0,"T":true,"F":false}`,
		`{"M":[0, 255 ,10]}`,
		`{"M":[0,9,10,99,100,199,200,249,250,255,1,27,91,5]}`,
		`{"M":[255,0],"N":[7]}`,
		`{"A":"dup","A":"last"}`,
	}
	for _, s := range tricky {
		lines = append(lines, []byte(s))
	}
	for _, l := range lines {
		fast, ok, _ := fastJSONRecord(l)
		slow, err := slowJSONRecord(l)
		if !ok || err != nil {
			t.Errorf("%.60s: fast ok=%v, slow err=%v", l, ok, err)
			continue
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Errorf("%.60s: fast %q != slow %q", l, fast, slow)
		}
	}
	bad := []string{
		`{"M":"unterminated}`, `{"M":[256]}`, `{"M":[01]}`, `{"M":[1,]}`, `{"M":"x",}`, `{"M":"x"} trailing`,
		`{"M":[`, `{"M":[ `, `{"M":[1,256,1]}`, `{"M":[1,300,1]}`, `{"M":[1,05,1]}`, `{"M":[1,0001,1]}`, `{"M":[1,2,]}`, `{"M":[1,,2]}`, `{"M":[12,345,6]}`, `{"M":{"nested":1}}`, `{"M":"ctl` + "\x01" + `"}`, `{"M":[[[1]]]}`, `{"M":01}`, `{"M":"\x"}`, `{M:"x"}`, `["x"]`,
	}
	for _, s := range bad {
		t.Run(s, func(t *testing.T) {
			if _, ok, _ := fastJSONRecord([]byte(s)); ok {
				t.Errorf("fast parser accepted %q", s)
			}
		})
	}
}

func BenchmarkReadFixture(b *testing.B) {
	data := bytes.Repeat(fixtureBytes(b, "dankserver-night-ladder"), 4)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := Read(context.Background(), bytes.NewReader(data), "bench", Options{}, func(domain.Entry) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
}
