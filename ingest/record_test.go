package ingest

import "testing"

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
}
