// Package journaldfake is an in-memory journal that implements
// journald.Journal, so that follow logic is tested without journald or
// root: tests append records, vacuum old ones (their cursors are then
// gone), inject losses (TakeGap), unreadable entries (Bad) and errors from
// Next, and make Wait slow.
package journaldfake

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/llmfleet/analyzer/ingest"
	"github.com/llmfleet/analyzer/ingest/journald"
)

// Journal is an in-memory journal. Its methods are safe for concurrent use:
// a test appends while a follower reads.
type Journal struct {
	mu sync.Mutex
	// entries are the records still in the journal, oldest first; seq is
	// the sequence number of the next record appended.
	entries []entry
	seq     int
	// pos is the sequence number of the next record Next returns.
	pos     int
	gaps    []string
	bad     int64
	errs    []error
	slow    time.Duration
	maxWait time.Duration
	waits   int
	closed  bool
	// changed is closed and replaced whenever records are appended.
	changed chan struct{}
	// waiting receives a value each time Wait starts blocking.
	waiting chan struct{}
}

type entry struct {
	seq int
	rec ingest.Record
}

// New returns an empty journal.
func New() *Journal {
	return &Journal{seq: 1, pos: 1, maxWait: time.Second, changed: make(chan struct{}), waiting: make(chan struct{}, 64)}
}

var _ journald.Journal = (*Journal)(nil)

// Cursor is the cursor of the record with sequence number seq (the first
// record appended is 1).
func Cursor(seq int) string { return "s=fake;i=" + strconv.Itoa(seq) }

// Append adds records at the end, each with a __CURSOR (Cursor of its
// sequence number) and, when it has none, a __REALTIME_TIMESTAMP of now. It
// returns the cursor of the last one and wakes a waiting reader.
func (j *Journal) Append(recs ...ingest.Record) string {
	j.mu.Lock()
	defer j.mu.Unlock()
	last := ""
	for _, r := range recs {
		c := make(ingest.Record, len(r)+2)
		for k, v := range r {
			c[k] = v
		}
		last = Cursor(j.seq)
		c["__CURSOR"] = []byte(last)
		if len(c["__REALTIME_TIMESTAMP"]) == 0 {
			c["__REALTIME_TIMESTAMP"] = []byte(strconv.FormatInt(time.Now().UnixMicro(), 10))
		}
		j.entries = append(j.entries, entry{seq: j.seq, rec: c})
		j.seq++
	}
	close(j.changed)
	j.changed = make(chan struct{})
	return last
}

// Vacuum removes the n oldest records, as journald's vacuuming or a
// rotation away does: their cursors no longer exist.
func (j *Journal) Vacuum(n int) {
	j.mu.Lock()
	defer j.mu.Unlock()
	n = min(n, len(j.entries))
	j.entries = j.entries[n:]
}

// Gap makes the next TakeGap return what (several gaps are joined with
// "; "), as journalctl's reader reports entries it could not read.
func (j *Journal) Gap(what string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.gaps = append(j.gaps, what)
}

// AddBad counts n more entries that could not be read (Bad).
func (j *Journal) AddBad(n int64) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.bad += n
}

// FailNext makes the next call of Next return err (several calls queue).
func (j *Journal) FailNext(err error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.errs = append(j.errs, err)
}

// SetSlowWait makes every Wait last d (or until its ctx is done), even when
// records are waiting: a journal that is slow to report changes. Zero
// restores the default (Wait returns as soon as a record is there, else
// after MaxWait).
func (j *Journal) SetSlowWait(d time.Duration) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.slow = d
}

// SetMaxWait sets how long Wait blocks without a change (default one
// second, as the real readers).
func (j *Journal) SetMaxWait(d time.Duration) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.maxWait = d
}

// Waiting receives a value each time Wait starts to block (buffered; a
// value is dropped when 64 are pending).
func (j *Journal) Waiting() <-chan struct{} { return j.waiting }

// Waits is the number of Wait calls so far.
func (j *Journal) Waits() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.waits
}

// Closed reports whether Close was called.
func (j *Journal) Closed() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.closed
}

// index is the position in entries of the record with cursor, -1 when it
// is gone or was never there. The caller holds mu.
func (j *Journal) index(cursor string) int {
	for i, e := range j.entries {
		if Cursor(e.seq) == cursor {
			return i
		}
	}
	return -1
}

// head is the sequence number of the oldest record (or of the next one to
// come, when the journal is empty). The caller holds mu.
func (j *Journal) head() int {
	if len(j.entries) == 0 {
		return j.seq
	}
	return j.entries[0].seq
}

// SeekAt positions at cursor itself; a cursor that is gone is
// journald.ErrCursorGone, and reading then starts at the oldest record.
func (j *Journal) SeekAt(cursor string) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	i := j.index(cursor)
	if i < 0 {
		j.pos = j.head()
		return journald.ErrCursorGone
	}
	j.pos = j.entries[i].seq
	return nil
}

// SeekAfter positions after cursor; a cursor that is gone is
// journald.ErrCursorGone, and reading then starts at the oldest record.
func (j *Journal) SeekAfter(cursor string) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	i := j.index(cursor)
	if i < 0 {
		j.pos = j.head()
		return journald.ErrCursorGone
	}
	j.pos = j.entries[i].seq + 1
	return nil
}

// SeekSince positions at the first record whose __REALTIME_TIMESTAMP is at
// or after t.
func (j *Journal) SeekSince(t time.Time) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.pos = j.seq
	for _, e := range j.entries {
		us, _ := strconv.ParseInt(string(e.rec["__REALTIME_TIMESTAMP"]), 10, 64)
		if !time.UnixMicro(us).Before(t) {
			j.pos = e.seq
			break
		}
	}
	return nil
}

// SeekTail positions after the newest record.
func (j *Journal) SeekTail() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.pos = j.seq
	return nil
}

// Next returns the next record (a copy), or ok == false when there is none;
// an error queued by FailNext comes first. After Close it returns an error.
func (j *Journal) Next() (ingest.Record, string, bool, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if len(j.errs) > 0 {
		err := j.errs[0]
		j.errs = j.errs[1:]
		return nil, "", false, err
	}
	if j.closed {
		return nil, "", false, errors.New("journaldfake: closed")
	}
	for _, e := range j.entries {
		if e.seq < j.pos {
			continue
		}
		j.pos = e.seq + 1
		rec := make(ingest.Record, len(e.rec))
		for k, v := range e.rec {
			rec[k] = v
		}
		return rec, Cursor(e.seq), true, nil
	}
	return nil, "", false, nil
}

// Wait returns when a record is there to read, after MaxWait, or when ctx
// is done; with SetSlowWait it lasts that long whatever arrives.
func (j *Journal) Wait(ctx context.Context) {
	j.mu.Lock()
	j.waits++
	slow, maxWait, changed := j.slow, j.maxWait, j.changed
	ready := len(j.entries) > 0 && j.entries[len(j.entries)-1].seq >= j.pos
	j.mu.Unlock()
	select {
	case j.waiting <- struct{}{}:
	default:
	}
	if slow > 0 {
		changed, maxWait = nil, slow
	} else if ready {
		return
	}
	t := time.NewTimer(maxWait)
	defer t.Stop()
	select {
	case <-changed:
	case <-t.C:
	case <-ctx.Done():
	}
}

// Close marks the journal closed; Next then fails.
func (j *Journal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.closed = true
	return nil
}

// Bad is the number of unreadable entries AddBad counted.
func (j *Journal) Bad() int64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.bad
}

// TakeGap returns and forgets the gaps Gap injected, joined with "; ".
func (j *Journal) TakeGap() string {
	j.mu.Lock()
	defer j.mu.Unlock()
	g := ""
	for i, s := range j.gaps {
		if i > 0 {
			g += "; "
		}
		g += s
	}
	j.gaps = nil
	return g
}
