// Package pageout gives back the pages of the running executable that a
// long batch run no longer uses.
//
// A Go binary's package initializers, command setup and rule compiler run
// once, at the start, yet their code and data stay mapped for the rest of
// the run: on this project's build machine the kernel maps an executable's
// file pages in large folios, so ~24 MiB of the 43 MB binary counted in the
// resident set of a replay, a third of its peak. Once the start is over,
// MADV_DONTNEED takes those pages out of the process; the page cache keeps
// them, so the code a run keeps using faults back in from memory within
// milliseconds (minor faults), and the rest stays out. MADV_PAGEOUT, tried
// first, also evicted them from the page cache: every later touch, by this
// process, by a test running beside it in the same binary, or by the next
// run, read the binary from disk again, and a test waiting 5 s for a note
// timed out on a loaded machine.
package pageout

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// Executable drops the resident pages of the running executable's
// read-only mappings from the process: its code and constant data, which
// the file holds as they are (readOnlyRanges), while the writable data,
// the heap and pages the dynamic linker wrote stay. It returns how many
// bytes of mappings it advised, and the first error: reading
// /proc/self/smaps, or madvise's. Locked pages stay.
func Executable() (int64, error) {
	fi, err := os.Stat("/proc/self/exe")
	if err != nil {
		return 0, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, fmt.Errorf("pageout: no inode for /proc/self/exe")
	}
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return 0, err
	}
	var advised int64
	var first error
	for _, r := range readOnlyRanges(smaps, st.Ino) {
		// The raw call: the range is an address from /proc/self/smaps, not
		// memory Go allocated, so it never becomes a slice.
		if _, _, e := unix.Syscall(unix.SYS_MADVISE, r[0], r[1]-r[0], unix.MADV_DONTNEED); e != 0 {
			if first == nil {
				first = fmt.Errorf("pageout: madvise %x-%x: %w", r[0], r[1], e)
			}
			continue
		}
		advised += int64(r[1] - r[0])
	}
	return advised, first
}

// readOnlyRanges returns the address ranges of /proc/PID/smaps (proc(5))
// that map the file with inode ino read-only and hold no anonymous page.
// MADV_DONTNEED gives a private mapping's pages back as the file has them:
// a page written since it was mapped (Anonymous, such as the GOT in the
// read-only-after-relocation segment of a dynamically linked binary) would
// lose what was written, so a mapping with any, or whose count is missing,
// is left alone.
func readOnlyRanges(smaps []byte, ino uint64) [][2]uintptr {
	var out [][2]uintptr
	var start, end uintptr
	mine, anon := false, -1
	flush := func() {
		if mine && anon == 0 {
			out = append(out, [2]uintptr{start, end})
		}
	}
	sc := bufio.NewScanner(bytes.NewReader(smaps))
	for sc.Scan() {
		line := sc.Bytes()
		f := bytes.Fields(line)
		if len(f) == 0 {
			continue
		}
		if !bytes.HasSuffix(f[0], []byte(":")) { // a mapping's first line
			flush()
			start, end, mine = executableRange(line, ino)
			anon = -1
			continue
		}
		if string(f[0]) == "Anonymous:" && len(f) >= 2 {
			if n, err := strconv.Atoi(string(f[1])); err == nil {
				anon = n
			}
		}
	}
	flush()
	return out
}

// executableRange parses the first line of a mapping in /proc/PID/smaps,
// as in /proc/PID/maps ("start-end perms offset dev inode path", proc(5)),
// and returns its range when it maps the file with inode ino read-only.
func executableRange(line []byte, ino uint64) (start, end uintptr, ok bool) {
	f := bytes.Fields(line)
	if len(f) < 6 || len(f[1]) < 2 || f[1][1] == 'w' {
		return 0, 0, false
	}
	if n, err := strconv.ParseUint(string(f[4]), 10, 64); err != nil || n != ino || n == 0 {
		return 0, 0, false
	}
	a, b, found := bytes.Cut(f[0], []byte("-"))
	if !found {
		return 0, 0, false
	}
	s, err1 := strconv.ParseUint(string(a), 16, 64)
	e, err2 := strconv.ParseUint(string(b), 16, 64)
	if err1 != nil || err2 != nil || e <= s {
		return 0, 0, false
	}
	return uintptr(s), uintptr(e), true
}
