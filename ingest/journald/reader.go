//go:build linux && cgo

// Package journald reads a live systemd journal through sd-journal
// (github.com/coreos/go-systemd/v22/sdjournal, which loads libsystemd at
// run time; building needs the libsystemd-dev headers).
//
// One goroutine owns a Reader from Open to Close, locked to its OS thread:
// sd-journal objects are not thread-safe (pitfall 14 of
// ../shared/reference/journald.md). Waiting never blocks for longer than
// one second, so a shutdown is noticed within that time (pitfall 13).
package journald

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"syscall"
	"time"

	"github.com/coreos/go-systemd/v22/sdjournal"

	"github.com/llmfleet/analyzer/ingest"
)

// Reader iterates over the entries of a journal (the local one, or the
// files of a directory) in journal order.
type Reader struct {
	j   *sdjournal.Journal
	dir string
	// hold: the journal is on an entry that Next must return before moving.
	hold bool
	// BadEntries counts entries that could not be read (EBADMSG, corrupt
	// files) and were skipped.
	BadEntries int64
}

// Open opens the local journal (dir == "") or the journal files in dir.
// The data threshold is lifted so long fields arrive whole (pitfall 17).
func Open(dir string) (*Reader, error) {
	var j *sdjournal.Journal
	var err error
	if dir == "" {
		j, err = sdjournal.NewJournal()
	} else {
		j, err = sdjournal.NewJournalFromDir(dir)
	}
	if err != nil {
		return nil, fmt.Errorf("journald: open %q: %w", dir, err)
	}
	if err := j.SetDataThreshold(0); err != nil {
		j.Close()
		return nil, fmt.Errorf("journald: data threshold: %w", err)
	}
	return &Reader{j: j, dir: dir}, nil
}

// Close releases the journal.
func (r *Reader) Close() error { return r.j.Close() }

// Bad is BadEntries.
func (r *Reader) Bad() int64 { return r.BadEntries }

// TakeGap is always "": sd-journal reports a lost cursor through Seek.
func (r *Reader) TakeGap() string { return "" }

// SeekHead positions before the oldest entry.
func (r *Reader) SeekHead() error { r.hold = false; return r.j.SeekHead() }

// SeekTail positions after the newest entry, so that Next returns only
// entries appended from now on. sd_journal_seek_tail followed by Next jumps
// to an old entry on some systemd versions (pitfall 12): step back onto the
// last entry, which Next then skips.
func (r *Reader) SeekTail() error {
	r.hold = false
	if err := r.j.SeekTail(); err != nil {
		return err
	}
	_, err := r.j.Previous()
	return err
}

// SeekSince positions before the first entry at or after t.
func (r *Reader) SeekSince(t time.Time) error {
	r.hold = false
	return r.j.SeekRealtimeUsec(uint64(t.UnixMicro()))
}

// SeekAt positions so that Next returns the entry of cursor itself. It
// returns ErrCursorGone when that entry no longer exists.
func (r *Reader) SeekAt(cursor string) error {
	r.hold = false
	if err := r.j.SeekCursor(cursor); err != nil {
		return ErrCursorGone
	}
	n, err := r.j.Next()
	if err != nil {
		return err
	}
	if n == 0 || r.j.TestCursor(cursor) != nil {
		return ErrCursorGone
	}
	r.hold = true
	return nil
}

// SeekAfter positions so that Next returns the entry after cursor. sd-journal
// lands on the saved entry itself, which is skipped here (pitfall 8). When
// the cursor is gone it positions at the closest entry sd-journal finds (the
// oldest one when it is older than the journal) and returns ErrCursorGone,
// so that the caller records the gap.
func (r *Reader) SeekAfter(cursor string) error {
	r.hold = false
	if err := r.j.SeekCursor(cursor); err != nil {
		if err := r.j.SeekHead(); err != nil {
			return err
		}
		return ErrCursorGone
	}
	n, err := r.j.Next()
	if err != nil {
		return err
	}
	if n == 0 {
		// An empty journal, or the cursor points past its end.
		return r.j.SeekHead()
	}
	if r.j.TestCursor(cursor) == nil {
		return nil // on the saved entry: the next Next moves past it
	}
	// Landed on another entry (the saved one was vacuumed): return it first.
	r.hold = true
	return ErrCursorGone
}

// Next reads the next entry. It returns ok == false when there is none yet.
// An unreadable entry (EBADMSG from a corrupt file) is counted in
// BadEntries and skipped, never the end of the stream (pitfall 15).
func (r *Reader) Next() (rec ingest.Record, cursor string, ok bool, err error) {
	for tries := 0; tries < 1000; tries++ {
		var n uint64 = 1
		if r.hold {
			r.hold = false
		} else {
			n, err = r.j.Next()
		}
		if err != nil {
			if isBadMessage(err) {
				r.BadEntries++
				continue
			}
			return nil, "", false, err
		}
		if n == 0 {
			return nil, "", false, nil
		}
		e, err := r.j.GetEntry()
		if err != nil {
			r.BadEntries++
			continue
		}
		rec = make(ingest.Record, len(e.Fields)+3)
		for k, v := range e.Fields {
			rec[k] = []byte(v)
		}
		rec["__CURSOR"] = []byte(e.Cursor)
		rec["__REALTIME_TIMESTAMP"] = []byte(strconv.FormatUint(e.RealtimeTimestamp, 10))
		rec["__MONOTONIC_TIMESTAMP"] = []byte(strconv.FormatUint(e.MonotonicTimestamp, 10))
		return rec, e.Cursor, true, nil
	}
	return nil, "", false, fmt.Errorf("journald: too many unreadable entries in a row")
}

// Wait waits for the journal to change (entries appended, files rotated or
// invalidated), at most one second and no longer than ctx's deadline; it
// returns at once when ctx is done. sd-journal's wait cannot be
// interrupted, so a cancel during it is noticed within that second. The
// caller just reads again.
func (r *Reader) Wait(ctx context.Context) {
	if ctx.Err() != nil {
		return
	}
	d := time.Second
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < d {
		d = max(time.Until(dl), 0)
	}
	if r.j.Wait(d) < 0 {
		// systemd 257 may return a negative value (systemd#40788): back off.
		time.Sleep(d)
	}
}

func isBadMessage(err error) bool {
	return errors.Is(err, syscall.EBADMSG) || errors.Is(err, syscall.EIO)
}

// KnownNotes scans a journal (dir "" = the local one) for the analyzer's
// own root-cause notes (SYSLOG_IDENTIFIER=analyzer) and returns the set of
// "attempt\x00finding" keys they carry (notes.Key), so that a note sent just
// before a crash is not sent again after it.
func KnownNotes(dir string) (map[string]bool, error) {
	r, err := Open(dir)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	if err := r.j.AddMatch("SYSLOG_IDENTIFIER=analyzer"); err != nil {
		return nil, err
	}
	if err := r.SeekHead(); err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for {
		rec, _, ok, err := r.Next()
		if err != nil {
			return out, err
		}
		if !ok {
			return out, nil
		}
		if a, f := string(rec["ANALYZER_ATTEMPT"]), string(rec["ANALYZER_FINDING"]); a != "" && f != "" {
			out[a+"\x00"+f] = true
		}
	}
}

// Match restricts the reader to entries with FIELD=value (sd_journal_add_match);
// several matches of different fields must all hold.
func (r *Reader) Match(fieldValue string) error { return r.j.AddMatch(fieldValue) }

// Reader is a Journal for FollowReader.
var _ Journal = (*Reader)(nil)
