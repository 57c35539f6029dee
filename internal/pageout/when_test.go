package pageout

import (
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"
)

// TestResident: statm's resident count agrees with VmRSS of
// /proc/self/status within an eighth (the two are read a moment apart).
func TestResident(t *testing.T) {
	f, err := os.Open("/proc/self/statm")
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	rss, err := Resident(f)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`VmRSS:\s+(\d+) kB`).FindSubmatch(st)
	if m == nil {
		t.Fatalf("no VmRSS in %s", st)
	}
	kb, _ := strconv.ParseInt(string(m[1]), 10, 64)
	if d, tol := rss-kb<<10, kb<<10/8; rss <= 0 || d > tol || d < -tol {
		t.Errorf("Resident = %d bytes, VmRSS %d kB", rss, kb)
	}
	// Read again from the start: the same file answers twice.
	if again, err := Resident(f); err != nil || again <= 0 {
		t.Errorf("second Resident = %d, %v", again, err)
	}
}

func TestResidentErrors(t *testing.T) {
	for _, content := range []string{"", "1234", "1234 x 5", "1 -3 5"} {
		p := filepath.Join(t.TempDir(), "statm")
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		if n, err := Resident(f); err == nil {
			t.Errorf("Resident(%q) = %d, want an error", content, n)
		}
		f.Close()
	}
}

// TestReleaseWhen: a resident set already past above releases at the
// first check, long before the timer; one never reached waits for the
// timer; either way release runs once.
func TestReleaseWhen(t *testing.T) {
	if _, err := os.Stat("/proc/self/statm"); err != nil {
		t.Skip(err)
	}
	cases := []struct {
		name     string
		after    time.Duration
		above    int64
		min, max time.Duration
	}{
		{"past above", 10 * time.Second, 1, 0, 5 * time.Second},
		{"below above", 200 * time.Millisecond, 1 << 50, 200 * time.Millisecond, 10 * time.Second},
		{"no threshold", 200 * time.Millisecond, 0, 200 * time.Millisecond, 10 * time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			calls := make(chan time.Duration, 2)
			start := time.Now()
			go releaseWhen(c.after, c.above, time.Millisecond, func() { calls <- time.Since(start) })
			var took time.Duration
			select {
			case took = <-calls:
			case <-time.After(c.max + c.after):
				t.Fatal("release was not called")
			}
			if took < c.min || took > c.max {
				t.Errorf("released after %v, want %v to %v", took, c.min, c.max)
			}
			select {
			case <-calls:
				t.Error("release called twice")
			case <-time.After(50 * time.Millisecond):
			}
		})
	}
}

// FuzzStatmResident: any line gives an error or a page count that any
// page size multiplies without overflow (TestStatmResident parses the
// real file's shape).
func FuzzStatmResident(f *testing.F) {
	f.Add([]byte("1234 567 89 10 0 400 0\n"))
	f.Add([]byte(""))
	f.Add([]byte("1 -3"))
	f.Add([]byte("1 99999999999999999999"))
	f.Fuzz(func(t *testing.T, line []byte) {
		pages, err := statmResident(line)
		if err == nil && (pages < 0 || pages > math.MaxInt64/maxPageSize) {
			t.Fatalf("statmResident(%q) = %d", line, pages)
		}
	})
}

func TestStatmResident(t *testing.T) {
	if n, err := statmResident([]byte("1234 567 89 10 0 400 0\n")); err != nil || n != 567 {
		t.Errorf("statmResident = %d, %v; want 567", n, err)
	}
}
