package report

import (
	"bytes"
	"encoding/json"
	"testing"
)

// indentCases are compact JSON texts with what appendIndent must keep
// apart: empty and nested containers, and strings holding brackets,
// commas, colons, escaped quotes and backslashes.
var indentCases = []string{
	`{}`, `[]`, `{"a":[]}`, `{"a":{},"b":[{}]}`, `[1,2,[3,[4,{}]],null,true,false]`,
	`{"s":"a,b:{c}[d]","q":"say \"hi\" \\","u":"\u003c\u00e9\u2028"}`,
	`{"attempts":[{"id":"x","shape":{"max_model_len":262144},"findings":[],"evidence":[{"message":"[rank0]: \"x\": y"}]}]}`,
	`"just a string"`, `12.5e3`,
}

func TestAppendIndentAsJSONIndent(t *testing.T) {
	for _, c := range indentCases {
		checkIndent(t, []byte(c))
	}
}

// FuzzAppendIndent: on any valid JSON, compacted as the encoder writes
// it, appendIndent writes what json.Indent does.
func FuzzAppendIndent(f *testing.F) {
	for _, c := range indentCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !json.Valid(b) {
			return
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, b); err != nil {
			return
		}
		checkIndent(t, compact.Bytes())
	})
}

func checkIndent(t *testing.T, compact []byte) {
	t.Helper()
	var want bytes.Buffer
	if err := json.Indent(&want, compact, "  ", " "); err != nil {
		t.Fatalf("json.Indent(%q): %v", compact, err)
	}
	if got := appendIndent([]byte("x"), compact, "  ", " "); string(got) != "x"+want.String() {
		t.Errorf("appendIndent(%q) =\n%s\njson.Indent:\n%s", compact, got[1:], want.Bytes())
	}
}
