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
// reads its files: JSON lines and a journal file's objects are parsed
// where the page cache holds them instead of after read(2) copied them
// (the copy was ~7.5 % of explain on a serving journal; the map's page
// faults and drops take back part of it, ~2 % net). The pages behind the
// reader leave the resident set as it goes.
var (
	// mapMin is the smallest file mapped, in bytes: below it one read(2)
	// costs less than the map. A variable so that tests map every file.
	mapMin int64 = 64 << 10
	// dropEvery is how far the reader gets past the pages it last dropped
	// before it drops them again, in bytes. Each drop interrupts the other
	// cores running the process's threads (a TLB shootdown, a VM exit each
	// on the build machine) and is a system call of its own: dropping
	// every 4 MiB instead of every 256 KiB made replay of both 43.5k-line
	// journals 2-7 % faster, on one core and on two (21 interleaved
	// rounds), for 3.5 MiB more resident at the peak. That room came from
	// giving back the executable's startup pages once the resident set
	// grows (cmd/analyzer's releaseStartupAbove): with both, the 1M-line
	// night journal's two-core replay peaked at ~58 MiB, against 60 with
	// neither (make bench's limit is 64 MiB).
	dropEvery = 4 << 20
	// keepBehind is how much of what the reader passed stays mapped, in
	// bytes: the values a journal file's entry takes from the objects
	// before it. The map holds at most dropEvery + keepBehind resident.
	keepBehind = 256 << 10
)

// errChanged is the error of a mapped file whose pages could not be read
// (SIGBUS): another process cut it short, or the storage failed.
var errChanged = errors.New("the file shrank, or its pages could not be read, while it was mapped (truncated or rewritten in place?)")

// readMapped is ReadFile on a regular file mapped as data. A fault on the
// map ends the run with errChanged and the stats so far, instead of the
// process.
func readMapped(ctx context.Context, data []byte, path string, opt Options, fn func(domain.Entry) error) (st Stats, err error) {
	m := &mappedInput{data: data}
	rn := newRun(ctx, &countingReader{r: m}, path, opt, fn)
	rn.mapped = m
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if p := recover(); p != nil {
			f, ok := p.(interface{ Addr() uintptr })
			if !ok || !m.holds(f.Addr()) {
				panic(p)
			}
			st, err = rn.finish(fmt.Errorf("ingest: %w", errChanged))
		}
	}()
	return rn.finish(rn.read())
}

// mappedInput is a mapped file read as an io.Reader (format detection and
// the readers that copy) or in place: line by line (line), or a journal
// file's objects (journalReader.inPlace).
type mappedInput struct {
	data    []byte
	off     int // the next unread byte
	dropped int // data[:dropped] is dropped from the resident set
	copied  int // bytes Read copied out (the rest were taken in place)
	// hold, when holding, is the first byte a value read in place waits
	// at (a journal file's values of an entry still to come): no page
	// from it on is dropped, so that none comes back behind the drop.
	hold    int
	holding bool
}

func (m *mappedInput) Read(p []byte) (int, error) {
	if m.off >= len(m.data) {
		return 0, io.EOF
	}
	n := copy(p, m.data[m.off:])
	m.advance(n)
	m.copied += n
	return n, nil
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
	// No room past the line: an append copies instead of writing to the
	// read-only map.
	return line[:len(line):len(line)], n, long, nil
}

// advance moves the read offset n bytes on from where this read starts.
// Once that start is dropEvery + keepBehind bytes past the last drop, the
// whole pages more than keepBehind bytes before it, and before hold, are
// dropped: what the last call returned is valid until this one, and the
// values a journal file's next entry takes from the objects before it
// stay mapped until it does, instead of coming back behind the drop to
// stay.
func (m *mappedInput) advance(n int) {
	from := m.off
	m.off += n
	if from-m.dropped >= dropEvery+keepBehind {
		to := from - keepBehind
		if m.holding {
			to = min(to, m.hold)
		}
		if to &^= pageSize - 1; to > m.dropped {
			dropBehind(m.data[m.dropped:to])
			m.dropped = to
		}
	}
}

// holds reports whether addr lies in the map.
func (m *mappedInput) holds(addr uintptr) bool {
	start := uintptr(unsafe.Pointer(unsafe.SliceData(m.data)))
	return addr >= start && addr-start < uintptr(len(m.data))
}

// pageSize is the granularity of dropBehind, in bytes.
var pageSize = os.Getpagesize()
