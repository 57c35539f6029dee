package ingest

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/llmfleet/analyzer/domain"
)

// TestDigits: digits reads what strconv reads for plain decimals and
// leaves everything else to it.
func TestDigits(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"1791114160861825", 1791114160861825, true}, {"0", 0, true}, {"999999999999999999", 999999999999999999, true},
		{"", 0, false}, {"1000000000000000000", 0, false}, {" 12", 0, false}, {"-5", 0, false}, {"12a", 0, false},
	} {
		if n, ok := digits([]byte(c.in)); n != c.want || ok != c.ok {
			t.Errorf("digits(%q) = %d, %v; want %d, %v", c.in, n, ok, c.want, c.ok)
		}
	}
	// Every length, each position holding every byte: a byte that is not
	// a digit is refused (strconv takes a leading sign), the rest read as
	// strconv reads them.
	for n := 1; n <= 18; n++ {
		in := []byte("918273645546372819"[:n])
		for i := range in {
			d := in[i]
			for c := range 256 {
				in[i] = byte(c)
				want, err := strconv.ParseInt(string(in), 10, 64)
				wantOK := err == nil && c >= '0' && c <= '9'
				if got, ok := digits(in); ok != wantOK || (ok && got != want) {
					t.Fatalf("digits(%q) = %d, %v; want %d, %v", in, got, ok, want, wantOK)
				}
			}
			in[i] = d
		}
	}
}

// fieldsRecord writes one record of n fields F0..F(n-1) and a MESSAGE, as
// journalctl's JSON (export: as -o export).
func fieldsRecord(n int, export bool) string {
	var b strings.Builder
	if export {
		b.WriteString("__CURSOR=c\nMESSAGE=m\n")
		for i := range n - 2 {
			fmt.Fprintf(&b, "F%d=x\n", i)
		}
		return b.String() + "\n"
	}
	b.WriteString(`{"__CURSOR":"c","MESSAGE":"m"`)
	for i := range n - 2 {
		fmt.Fprintf(&b, `,"F%d":"x"`, i)
	}
	return b.String() + "}\n"
}

// TestFieldsPerRecordCapped: a record of more than maxRecordFields fields
// (journald stores at most 1024) is a counted, worded malformed record in
// both JSON and export input; one at the cap is read.
func TestFieldsPerRecordCapped(t *testing.T) {
	for _, export := range []bool{false, true} {
		in := fieldsRecord(maxRecordFields, export) + fieldsRecord(maxRecordFields+1, export)
		var n int
		var st Stats
		var err error
		if export {
			st, err = ReadExportRecords(context.Background(), strings.NewReader(in), "t", Options{}, func(Record) error { n++; return nil })
		} else {
			st, err = Read(context.Background(), strings.NewReader(in), "t", Options{}, func(domain.Entry) error { n++; return nil })
		}
		if err != nil {
			t.Fatal(err)
		}
		if n != 1 || st.Malformed != 1 || len(st.Errors) != 1 || !strings.Contains(st.Errors[0], "more than 2048 fields") {
			t.Errorf("export %v: %d records read, %d malformed (%q); want 1 and 1, too many fields", export, n, st.Malformed, st.Errors)
		}
	}
	if _, err := ParseJSONRecord([]byte(strings.TrimSpace(fieldsRecord(maxRecordFields+1, false)))); err != errTooManyFields {
		t.Errorf("ParseJSONRecord of %d fields: %v, want errTooManyFields", maxRecordFields+1, err)
	}
	long := `{"MESSAGE":{"nested":"` + strings.Repeat("x", maxSlowJSON) + `"}}`
	if _, err := ParseJSONRecord([]byte(long)); err == nil || !strings.Contains(err.Error(), "not decoded further") {
		t.Errorf("a long line the fast parser refuses: %v", err)
	}
}
