package ingest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"unsafe"

	"github.com/llmfleet/analyzer/domain"
)

// A regular file is read through a read-only memory map, as journalctl
// reads its files: JSON lines are parsed where the page cache holds them
// instead of after read(2) copied them (~5 % of explain on a serving
// journal). The map is dropped from the resident set behind the reader, so
// a file of any size costs at most a few MiB of it.
var (
	// mapMin is the smallest file mapped, in bytes: below it one read(2)
	// costs less than the map. A variable so that tests map every file.
	mapMin int64 = 64 << 10
	// dropEvery is how far the reader gets past the pages it last dropped
	// before it drops them, in bytes.
	dropEvery = 256 << 10
)

// errChanged is the error of a mapped file that shrank while it was read:
// its pages past the new end are gone (SIGBUS).
var errChanged = errors.New("the file shrank while it was read (truncated or rewritten in place)")

// readMapped is ReadFile on a regular file mapped as data. A fault on the
// map (the file cut short by another process) ends the run with
// errChanged instead of the process.
func readMapped(ctx context.Context, data []byte, path string, opt Options, fn func(domain.Entry) error) (st Stats, err error) {
	m := &mappedInput{data: data}
	cr := &countingReader{r: m}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if p := recover(); p != nil {
			f, ok := p.(interface{ Addr() uintptr })
			if !ok || !m.holds(f.Addr()) {
				panic(p)
			}
			st.Bytes = cr.n
			err = fmt.Errorf("ingest: %w", errChanged)
		}
	}()
	rn := newRun(ctx, cr, path, opt, fn)
	rn.mapped = m
	return rn.finish(rn.read())
}

// mappedInput is a mapped file read as an io.Reader and io.Seeker (format
// detection and the readers that copy) or line by line in place (line).
type mappedInput struct {
	data    []byte
	off     int // the next unread byte
	dropped int // data[:dropped] is dropped from the resident set
}

func (m *mappedInput) Read(p []byte) (int, error) {
	if m.off >= len(m.data) {
		return 0, io.EOF
	}
	n := copy(p, m.data[m.off:])
	m.advance(n)
	return n, nil
}

// Seek moves the read offset (a journal file's reader skips by it).
func (m *mappedInput) Seek(offset int64, whence int) (int64, error) {
	base := int64(0)
	switch whence {
	case io.SeekCurrent:
		base = int64(m.off)
	case io.SeekEnd:
		base = int64(len(m.data))
	}
	to := base + offset
	if to < 0 {
		return int64(m.off), errors.New("ingest: seek before the start of the file")
	}
	m.off = int(min(to, int64(len(m.data))))
	if m.off < m.dropped {
		m.dropped = m.off &^ (pageSize - 1)
	}
	return to, nil
}

// line returns the next line without its '\n' (valid until the next call),
// the bytes it consumed, and whether it was cut to max bytes: what
// lineReader.next returns from a bufio.Reader.
func (m *mappedInput) line(max int) (line []byte, n int64, long bool, err error) {
	rest := m.data[m.off:]
	if len(rest) == 0 {
		return nil, 0, false, io.EOF
	}
	line = rest
	if i := bytes.IndexByte(rest, '\n'); i >= 0 {
		line = rest[:i]
		m.advance(i + 1)
	} else {
		m.advance(len(rest))
	}
	n = int64(m.off) - int64(len(m.data)-len(rest))
	if len(line) > max {
		line, long = line[:max], true
	}
	return line, n, long, nil
}

// advance moves the read offset n bytes on and drops what lies dropEvery
// bytes behind it (whole pages before the previous line's start stay:
// a line is valid until the next call).
func (m *mappedInput) advance(n int) {
	from := m.off
	m.off += n
	if from-m.dropped >= dropEvery {
		to := from &^ (pageSize - 1)
		dropBehind(m.data[m.dropped:to])
		m.dropped = to
	}
}

// holds reports whether addr lies in the map.
func (m *mappedInput) holds(addr uintptr) bool {
	start := uintptr(unsafe.Pointer(unsafe.SliceData(m.data)))
	return addr >= start && addr-start < uintptr(len(m.data))
}

// pageSize is the granularity of dropBehind, in bytes (a multiple of it
// would do as well; smaller pages only mean a page kept longer).
var pageSize = os.Getpagesize()
