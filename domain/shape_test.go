package domain

import (
	"math"
	"testing"
)

// TestParseBytes holds the sizes the rules (engine startup lines) and the
// ladder (OOM lines, --kv-cache-memory-bytes) parse.
func TestParseBytes(t *testing.T) {
	for _, tc := range []struct {
		in    string
		want  float64
		count int64
		ok    bool
	}{
		{"76.00 MiB", 76 << 20, 76 << 20, true},
		{"10.70 GiB", 10.70 * (1 << 30), int64(math.Round(10.70 * (1 << 30))), true},
		{"11.05 GB", 11.05e9, 11050000000, true},
		{"0 bytes", 0, 0, true},
		{"512", 512, 512, true},
		{"96.00 MiB", 96 << 20, 96 << 20, true},
		{"9.18 GiB", 9.18 * (1 << 30), int64(math.Round(9.18 * (1 << 30))), true},
		{"512 KiB", 512 << 10, 512 << 10, true},
		{"9.68GiB", 9.68 * (1 << 30), int64(math.Round(9.68 * (1 << 30))), true},
		{"1,024 KB", 1024e3, 1024000, true},
		{"lots", 0, 0, false},
		{"12 parsecs", 0, 0, false},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, ok := ParseBytes(tc.in)
			if ok != tc.ok || got != tc.want {
				t.Errorf("ParseBytes(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
			}
			n, ok := ParseByteCount(tc.in)
			if ok != tc.ok || n != tc.count {
				t.Errorf("ParseByteCount(%q) = %d, %v; want %d, %v", tc.in, n, ok, tc.count, tc.ok)
			}
		})
	}
}

// TestParseByteCountOverflow: a size past int64 (a log or a request
// states what it likes) is refused, not converted to whatever the
// platform makes of it (math.MinInt64 on amd64).
func TestParseByteCountOverflow(t *testing.T) {
	for _, in := range []string{"99999999999 TiB", "9223372036854775808", "-9223372036854775809"} {
		if f, ok := ParseBytes(in); !ok || math.Abs(f) < 1<<63 {
			t.Errorf("ParseBytes(%q) = %v, %v: want a size past int64", in, f, ok)
		}
		if n, ok := ParseByteCount(in); ok {
			t.Errorf("ParseByteCount(%q) = %d, ok", in, n)
		}
	}
	if n, ok := ParseByteCount("256 TiB"); !ok || n != 1<<48 {
		t.Errorf("ParseByteCount(256 TiB) = %d, %v", n, ok)
	}
}
