package ingest

import (
	"bytes"
	"testing"
)

// TestScanByteArray: the one byte-array decoder, as the fast scanner (no
// spaces, "27,91,") and the encoding/json path (spaces after commas) call
// it.
func TestScanByteArray(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []byte
		err      string
	}{
		{"journalctl form", `[27,91,51,50,109,13,65]`, []byte{27, 91, 51, 50, 109, 13, 65}, ""},
		{"spaces", `[ 27, 91 ,	51 ]`, []byte{27, 91, 51}, ""},
		{"one element", `[0]`, []byte{0}, ""},
		{"255 at the end", `[1,255]`, []byte{1, 255}, ""},
		{"255 in the fast path", `[255,1]`, []byte{255, 1}, ""},
		{"above 255", `[1,256,1]`, nil, "byte array element above 255"},
		{"leading zero", `[1,05,1]`, nil, "empty or malformed byte array element"},
		{"zeros", `[0001]`, nil, "empty or malformed byte array element"},
		{"trailing comma", `[1,2,]`, nil, "empty or malformed byte array element"},
		{"double comma", `[1,,2]`, nil, "empty or malformed byte array element"},
		{"unterminated", `[1,2`, nil, "unterminated byte array"},
		{"string element", `[1,"a"]`, nil, "empty or malformed byte array element"},
		{"junk", `[1 2]`, nil, `unexpected '2' in byte array`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := []byte(tc.in)
			first := bytes.IndexAny(in, "0123456789")
			got, next, err := scanByteArray([]byte("kept"), in, first, false)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || next != len(in) || !bytes.Equal(got, append([]byte("kept"), tc.want...)) {
				t.Errorf("= %v, %d, %v; want %v, %d", got, next, err, tc.want, len(in))
			}
			rec, err := slowJSONRecord([]byte(`{"MESSAGE":` + tc.in + `}`))
			if err != nil || !bytes.Equal(rec["MESSAGE"], tc.want) {
				t.Errorf("slow path: %q, %v", rec["MESSAGE"], err)
			}
			fast, ok, _ := fastJSONRecord([]byte(`{"MESSAGE":` + tc.in + `}`))
			if !ok || !bytes.Equal(fast["MESSAGE"], tc.want) {
				t.Errorf("fast path: %q, %v", fast["MESSAGE"], ok)
			}
		})
	}
}
