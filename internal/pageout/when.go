package pageout

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"strconv"
	"time"
)

// ExecutableWhen calls Executable once, on a goroutine of its own: as
// soon as the process's resident set reaches above bytes (Resident,
// checked every interval), or after after, whichever comes first. above
// or interval <= 0, or no /proc/self/statm, leaves only the timer.
//
// A batch run's resident set peaks while the start's pages are still
// mapped: a 1M-line night ladder's replay reached its peak 0.2 s in, the
// binary's ~27 MiB beside a heap growing to its limit, and fell by 13 MiB
// when the pages went at 500 ms. A run that grows past above gives them
// back then instead. One that stays below keeps them until the timer; a
// short one ends first and pays nothing.
func ExecutableWhen(after time.Duration, above int64, interval time.Duration) {
	go releaseWhen(after, above, interval, func() { _, _ = Executable() })
}

// releaseWhen waits as ExecutableWhen describes, then calls release.
func releaseWhen(after time.Duration, above int64, interval time.Duration, release func()) {
	deadline := time.NewTimer(after)
	defer deadline.Stop()
	defer release()
	var tick <-chan time.Time // nil: only the timer decides
	var statm *os.File
	if above > 0 && interval > 0 {
		if f, err := os.Open("/proc/self/statm"); err == nil {
			statm = f
			defer statm.Close()
			t := time.NewTicker(interval)
			defer t.Stop()
			tick = t.C
		}
	}
	for {
		select {
		case <-deadline.C:
			return
		case <-tick:
			rss, err := Resident(statm)
			if err != nil {
				tick = nil // a read that failed will fail again
			} else if rss >= above {
				return
			}
		}
	}
}

// Resident returns the process's resident set size in bytes: the second
// field of /proc/self/statm (proc(5)), a count of pages. It reads f, an
// open /proc/self/statm, from its start, so that a caller checking often
// opens it once. The error says which read or field failed.
func Resident(f *os.File) (int64, error) {
	var buf [128]byte
	n, err := f.ReadAt(buf[:], 0)
	if n == 0 {
		return 0, fmt.Errorf("pageout: reading %s: %w", f.Name(), err)
	}
	pages, err := statmResident(buf[:n])
	if err != nil {
		return 0, fmt.Errorf("pageout: %s: %w", f.Name(), err)
	}
	return pages * int64(os.Getpagesize()), nil
}

// maxPageSize bounds the page sizes Resident multiplies by, in bytes:
// 64 KiB, the largest base page Linux has (arm64, ppc64).
const maxPageSize = 64 << 10

// statmResident returns the resident page count of a statm line ("size
// resident shared text lib data dt", proc(5)).
func statmResident(line []byte) (int64, error) {
	fields := bytes.Fields(line)
	if len(fields) < 2 {
		return 0, fmt.Errorf("no resident field in %q", line)
	}
	pages, err := strconv.ParseInt(string(fields[1]), 10, 64)
	if err != nil || pages < 0 || pages > math.MaxInt64/maxPageSize {
		return 0, fmt.Errorf("resident field %q is not a page count", fields[1])
	}
	return pages, nil
}
