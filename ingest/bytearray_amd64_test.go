package ingest

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
)

// scanBoth runs scanByteArray on s from i with and without decodeBlocks
// and fails t unless both give the same bytes, end and error.
func scanBoth(t *testing.T, s []byte, i int) {
	t.Helper()
	if !haveBlocks {
		t.Skip("no AVX and POPCNT: decodeBlocks never runs")
	}
	got, gotNext, gotErr := scanByteArray([]byte("kept"), s, i, false)
	haveBlocks = false
	want, wantNext, wantErr := scanByteArray([]byte("kept"), s, i, false)
	haveBlocks = true
	if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) || (wantErr == nil && (gotNext != wantNext || !bytes.Equal(got, want))) {
		t.Fatalf("on %q from %d:\nblocks %v %d %v\nloop   %v %d %v", s, i, got, gotNext, gotErr, want, wantNext, wantErr)
	}
}

// TestDecodeBlocksAsLoop: decodeBlocks decodes what the loop does, and
// leaves it every error: random arrays of every length with 1-, 2- and
// 3-digit elements, then the same with one byte changed anywhere (a
// space, a comma, a bracket, a letter, a digit, a zero: leading zeros,
// elements above 255 or of four digits, empty elements, early ends).
func TestDecodeBlocksAsLoop(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	bad := []byte(" ,]a09\t\"-")
	for n := range 400 {
		var b []byte
		b = append(b, `{"MESSAGE":[`...)
		first := len(b)
		for k := range n%150 + 1 {
			if k > 0 {
				b = append(b, ',')
			}
			var v int
			switch r.IntN(3) {
			case 0:
				v = r.IntN(10)
			case 1:
				v = 10 + r.IntN(90)
			default:
				v = 100 + r.IntN(156)
			}
			b = strconv.AppendInt(b, int64(v), 10)
		}
		b = append(b, `],"PRIORITY":"6"}`...)
		scanBoth(t, b, first)
		if out, next := scanBlocks(nil, b, first); n%150 >= 40 && (next < len(b)-80 || len(out) < n%150-25) {
			t.Fatalf("%d elements: the blocks decoded %d, up to %d of %d bytes", n%150+1, len(out), next, len(b))
		}
		for range 20 {
			m := bytes.Clone(b)
			m[first+r.IntN(len(m)-first)] = bad[r.IntN(len(bad))]
			scanBoth(t, m, first)
		}
		// A cut array: the blocks stop short of the end of the text.
		scanBoth(t, b[:first+r.IntN(len(b)-first)], first)
	}
}

// FuzzDecodeBlocks: on any text, decodeBlocks and the loop agree.
func FuzzDecodeBlocks(f *testing.F) {
	f.Add([]byte(`{"MESSAGE":[27,91,51,50,109,13,65,66,67,68,69,70,71,72,73,74,75,76,77,78,79,80,81,82,83,84,85,86,87,88,89,90,255,0,1]}`), 12)
	f.Add([]byte(`x:[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,256,1]`), 3)
	f.Fuzz(func(t *testing.T, s []byte, i int) {
		if i < 0 || i >= len(s) || s[i]-'0' > 9 {
			return
		}
		scanBoth(t, s, i)
	})
}
