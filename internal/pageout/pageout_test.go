package pageout

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

// exeRSS sums the Rss of the test binary's read-only mappings, in KiB,
// from /proc/self/smaps.
func exeRSS(t *testing.T) int {
	t.Helper()
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		t.Skip(err)
	}
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Skip(err)
	}
	total, in := 0, false
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		l := sc.Text()
		if f := strings.Fields(l); len(f) >= 5 && strings.Contains(f[0], "-") && !strings.HasSuffix(f[0], ":") {
			in = strings.HasSuffix(l, " "+exe) && f[1][1] != 'w'
			continue
		}
		if in && strings.HasPrefix(l, "Rss:") {
			n, _ := strconv.Atoi(strings.Fields(l)[1])
			total += n
		}
	}
	return total
}

// TestExecutable: the test binary's read-only mappings hold fewer resident
// pages after Executable than before, and what it advised covers them.
func TestExecutable(t *testing.T) {
	before := exeRSS(t)
	if before == 0 {
		t.Skip("no resident pages of the executable found in /proc/self/smaps")
	}
	n, err := Executable()
	if err != nil {
		t.Fatal(err)
	}
	after := exeRSS(t)
	t.Logf("advised %d KiB; resident %d -> %d KiB", n>>10, before, after)
	if n>>10 < int64(before) {
		t.Errorf("advised %d KiB, less than the %d KiB resident", n>>10, before)
	}
	if after >= before {
		t.Errorf("resident pages of the executable %d KiB after, %d before", after, before)
	}
}

// TestExecutableRange: only read-only mappings of the inode count.
func TestExecutableRange(t *testing.T) {
	for _, c := range []struct {
		line       string
		start, end uintptr
		ok         bool
	}{
		{"00400000-00403000 r--p 00000000 fd:01 1234 /usr/bin/analyzer", 0x400000, 0x403000, true},
		{"00403000-01182000 r-xp 00003000 fd:01 1234 /usr/bin/analyzer (deleted)", 0x403000, 0x1182000, true},
		{"01f71000-01f74000 rw-p 01b71000 fd:01 1234 /usr/bin/analyzer", 0, 0, false},
		{"7f00-8f00 r--p 00000000 fd:01 99 /usr/lib/libc.so.6", 0, 0, false},
		{"7f00-8f00 rw-p 00000000 00:00 0", 0, 0, false},
		{"8f00-7f00 r--p 00000000 fd:01 1234 /usr/bin/analyzer", 0, 0, false},
		{"garbage", 0, 0, false},
		{"", 0, 0, false},
	} {
		s, e, ok := executableRange([]byte(c.line), 1234)
		if s != c.start || e != c.end || ok != c.ok {
			t.Errorf("%q: %x-%x %v, want %x-%x %v", c.line, s, e, ok, c.start, c.end, c.ok)
		}
	}
}

// TestReadOnlyRanges: of the executable's mappings, only those without an
// anonymous (written) page are given back; a mapping whose count is
// missing is not.
func TestReadOnlyRanges(t *testing.T) {
	smaps := `00400000-00403000 r--p 00000000 fd:01 1234 /usr/bin/analyzer
Size:                 12 kB
Rss:                  12 kB
Anonymous:             0 kB
VmFlags: rd mr mw me
00403000-01182000 r-xp 00003000 fd:01 1234 /usr/bin/analyzer
Rss:               13820 kB
Anonymous:             0 kB
01f71000-01f74000 r--p 01b71000 fd:01 1234 /usr/bin/analyzer
Rss:                  12 kB
Anonymous:            12 kB
01f74000-020b0000 rw-p 01b74000 fd:01 1234 /usr/bin/analyzer
Anonymous:           100 kB
7f00-8f00 r--p 00000000 fd:01 99 /usr/lib/libc.so.6
Anonymous:             0 kB
9000-a000 r--p 00000000 fd:01 1234 /usr/bin/analyzer
Rss:                   4 kB
`
	got := readOnlyRanges([]byte(smaps), 1234)
	want := [][2]uintptr{{0x400000, 0x403000}, {0x403000, 0x1182000}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("readOnlyRanges = %x, want %x", got, want)
	}
}
