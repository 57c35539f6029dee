package journald

import (
	"context"
	"errors"
	"fmt"
	"path"
	"time"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/ingest"
)

// Resume is where a follower starts: the position saved with the last
// attempts it stored.
type Resume struct {
	// Cursor is the last entry whose effects are stored.
	Cursor string
	// ReplayCursor is the first entry of the oldest attempt open at Cursor:
	// entries from there up to Cursor are read again to rebuild those
	// attempts, and handed over with CatchUp set (nothing to save).
	ReplayCursor string
}

// Batch is a run of entries handed to the handler.
type Batch struct {
	Entries []domain.Entry
	// Cursor is the cursor of the last record read (the position to save
	// with the batch's effects).
	Cursor string
	// CatchUp is set while re-reading entries whose effects are already
	// stored (between Resume.ReplayCursor and Resume.Cursor).
	CatchUp bool
	// Gap, when set, says that the saved cursor was gone (vacuumed or from
	// another journal) and reading went on from the oldest entry.
	Gap string
}

// FieldGap marks the synthetic entry that stands for lost journal entries
// (Batch.WithGap); its value says what was lost. It is the tracker's
// GapField, which turns it into a log_loss finding on every attempt open at
// that point and on the next one to start.
const FieldGap = "ANALYZER_JOURNAL_GAP"

// WithGap is the batch's entries for the tracker: when Gap is set they are
// preceded by a gap entry (FieldGap = Gap) at the batch's cursor, stamped
// now; otherwise Entries itself.
func (b Batch) WithGap(now time.Time) []domain.Entry {
	if b.Gap == "" {
		return b.Entries
	}
	gap := domain.Entry{Cursor: b.Cursor, Time: now, Fields: map[string]string{FieldGap: b.Gap}}
	return append([]domain.Entry{gap}, b.Entries...)
}

// ErrCursorGone means a saved cursor no longer exists (vacuumed, rotated
// away, another machine's journal): reading went on from the closest entry.
var ErrCursorGone = errors.New("journald: saved cursor not found")

// Journal is the reader a follower reads the journal through: sd-journal in
// this process (*Reader), journalctl in a child process (*ProcReader), or a
// fake in tests (package journaldfake). One goroutine uses it from the
// first Seek to Close.
type Journal interface {
	// SeekAt positions so that Next returns the entry of cursor itself; it
	// returns ErrCursorGone when that entry no longer exists.
	SeekAt(cursor string) error
	// SeekAfter positions so that Next returns the entry after cursor; when
	// the cursor no longer exists it positions at the oldest entry (or the
	// closest one) and returns ErrCursorGone.
	SeekAfter(cursor string) error
	// SeekSince positions before the first entry at or after t.
	SeekSince(t time.Time) error
	// SeekTail positions after the newest entry.
	SeekTail() error
	// Next returns the next record and its cursor, ok == false when there
	// is none yet. An entry that cannot be read is skipped and counted in
	// Bad; an error ends the follower.
	Next() (rec ingest.Record, cursor string, ok bool, err error)
	// Wait returns when an entry may have arrived, when ctx is done, or
	// after at most about one second, whichever comes first.
	Wait(ctx context.Context)
	// Close releases the reader.
	Close() error
	// Bad counts entries that could not be read and were skipped.
	Bad() int64
	// TakeGap returns, and forgets, what could not be read since the last
	// call ("" when nothing was lost).
	TakeGap() string
}

// FollowOptions configure Follow. Zero values take the defaults.
type FollowOptions struct {
	// InProcess reads the journal with sd-journal in this process instead
	// of journalctl in a child (ProcReader): no child, but a journal file
	// truncated under the reader kills the process with SIGBUS. Follow
	// only; FollowReader is given its reader.
	InProcess bool
	// Dir is a journal directory; "" reads the local journal.
	Dir string
	// Since starts a first run (no saved cursor) at this time; zero starts
	// at the tail (only new entries).
	Since time.Time
	// Units are unit globs (path.Match syntax) to keep; empty keeps every
	// unit, and the tracker keeps those that turn out to run an engine.
	// PID 1's records about a unit, podman events and container output are
	// kept whenever their unit matches.
	Units []string
	// BatchEntries and BatchDelay bound a batch (default 2000 entries, 200 ms).
	BatchEntries int
	BatchDelay   time.Duration
	// Ingest options for reassembly (line cap, orphan timeout).
	Ingest ingest.Options
	// Stats, when set, receives counters before each batch is handed over.
	Stats func(FollowStats)
	// Open, when set, opens the reader Follow uses instead of the one
	// InProcess and Dir choose (tests pass a fake).
	Open func() (Journal, error)
	// Logf, when set, receives Start's status lines (a journal gap, why
	// the follower stopped), without a trailing newline.
	Logf func(format string, args ...any)
	// StallAfter: a Follower whose sink has not taken a batch for this
	// long is unhealthy (Health); default DefaultStallAfter.
	StallAfter time.Duration
}

// DefaultStallAfter is how long a sink may hold a batch before the
// Follower counts as stalled: the live pipeline takes a batch in well under
// a second unless it is wedged.
const DefaultStallAfter = 2 * time.Minute

// FollowStats are the follower's counters since it started.
type FollowStats struct {
	// Records read, Entries assembled from them and handed over, records
	// Skipped by the unit filter, and BadEntries the reader could not read.
	Records, Entries, Skipped, BadEntries int64
	// Gaps counts the batches handed over with Gap set.
	Gaps int64
	// Newest is the time of the newest entry read (journal lag = now - Newest).
	Newest time.Time
}

// FollowReader reads the journal through r from resume (or per opt on a
// first run: opt.Since, else the tail) and hands batches of normalized
// entries to handle until ctx is done, then returns nil; it notices ctx
// within one Wait of r. Entries read but not handed over are not lost: their
// cursor was never saved, so a restart reads them again.
//
// A saved cursor that no longer exists (vacuumed, rotated away) is handed
// over as a batch with Gap set, and reading goes on from the oldest entry;
// so is whatever r reports lost (TakeGap), between what was read before the
// loss and what comes after. An error from a Seek (other than
// ErrCursorGone), from r.Next or from handle stops FollowReader and is
// returned: the caller restarts from the last position it saved. The caller
// keeps r and closes it.
func FollowReader(ctx context.Context, r Journal, opt FollowOptions, resume Resume, handle func(Batch) error) error {
	if opt.BatchEntries <= 0 {
		opt.BatchEntries = 2000
	}
	if opt.BatchDelay <= 0 {
		opt.BatchDelay = 200 * time.Millisecond
	}
	catchUpUntil, gap, err := seek(r, opt.Since, resume)
	if err != nil {
		return err
	}
	f := &loop{r: r, opt: opt, handle: handle, catchUpUntil: catchUpUntil,
		asm: ingest.NewAssembler(sourceName(opt.Dir), opt.Ingest)}
	f.batch = Batch{Gap: gap, CatchUp: catchUpUntil != ""}
	f.deadline = time.Now().Add(opt.BatchDelay)
	return f.run(ctx)
}

// seek positions r where a follower starts: at the replay cursor (then
// entries up to catchUpUntil are a catch-up), after the saved cursor, at
// since, or at the tail. gap says what was lost when a saved cursor is gone.
func seek(r Journal, since time.Time, resume Resume) (catchUpUntil, gap string, err error) {
	switch {
	case resume.ReplayCursor != "" && resume.Cursor != "":
		if err := r.SeekAt(resume.ReplayCursor); err == nil {
			return resume.Cursor, "", nil
		}
		// The replay start was vacuumed: resume after the saved cursor.
		gap = fmt.Sprintf("journal entries from %s were vacuumed before the analyzer re-read them", resume.ReplayCursor)
		gap, err := seekAfter(r, resume.Cursor, gap)
		return "", gap, err
	case resume.Cursor != "":
		gap, err := seekAfter(r, resume.Cursor, "")
		return "", gap, err
	case !since.IsZero():
		return "", "", r.SeekSince(since)
	default:
		return "", "", r.SeekTail()
	}
}

// seekAfter positions r after cursor and returns the gap to report: gap,
// or that the cursor itself is gone.
func seekAfter(r Journal, cursor, gap string) (string, error) {
	if err := r.SeekAfter(cursor); errors.Is(err, ErrCursorGone) {
		return fmt.Sprintf("saved journal cursor %s is gone (vacuumed or rotated away); reading from the oldest entry", cursor), nil
	} else if err != nil {
		return "", err
	}
	return gap, nil
}

// loop is the state of one FollowReader run.
type loop struct {
	r      Journal
	opt    FollowOptions
	handle func(Batch) error
	asm    *ingest.Assembler
	stats  FollowStats
	batch  Batch
	// catchUpUntil is the saved cursor while entries before it are re-read.
	catchUpUntil string
	// deadline is when the batch is handed over however small it is.
	deadline time.Time
}

func (f *loop) run(ctx context.Context) error {
	for {
		if ctx.Err() != nil {
			// Entries read but not handed over are read again after a
			// restart: their cursor was never saved.
			return nil
		}
		rec, cursor, ok, err := f.r.Next()
		if err != nil {
			return err
		}
		if g := f.r.TakeGap(); g != "" {
			// Hand over what was read before the loss first: the gap
			// belongs between it and what comes next.
			if err := f.flush(); err != nil {
				return err
			}
			f.batch.Gap = g
			if err := f.flush(); err != nil {
				return err
			}
		}
		if !ok {
			// Pieces of a split line stay with the assembler until their
			// last piece or the orphan timeout: the writer may be mid-line.
			if err := f.flush(); err != nil {
				return err
			}
			f.r.Wait(ctx)
			continue
		}
		f.add(rec, cursor)
		if f.catchUpUntil != "" && cursor == f.catchUpUntil {
			// Everything up to the saved cursor is rebuilt: hand the
			// catch-up batch over and go on normally.
			if err := f.flush(); err != nil {
				return err
			}
			f.catchUpUntil = ""
			f.batch.CatchUp = false
			continue
		}
		if len(f.batch.Entries) >= f.opt.BatchEntries || time.Now().After(f.deadline) {
			if err := f.flush(); err != nil {
				return err
			}
		}
	}
}

// add puts the entries of one record into the batch, unless the unit
// filter drops it.
func (f *loop) add(rec ingest.Record, cursor string) {
	f.stats.Records++
	f.batch.Cursor = cursor
	if !keep(rec, f.opt.Units) {
		f.stats.Skipped++
		return
	}
	for _, e := range f.asm.Push(rec) {
		f.stats.Entries++
		if e.Time.After(f.stats.Newest) {
			f.stats.Newest = e.Time
		}
		f.batch.Entries = append(f.batch.Entries, e)
	}
}

// flush hands the batch over (when it holds anything) and starts the next.
func (f *loop) flush() error {
	if len(f.batch.Entries) == 0 && f.batch.Cursor == "" && f.batch.Gap == "" {
		return nil
	}
	f.stats.BadEntries = f.r.Bad()
	if f.batch.Gap != "" {
		f.stats.Gaps++
	}
	if f.opt.Stats != nil {
		f.opt.Stats(f.stats)
	}
	err := f.handle(f.batch)
	f.batch = Batch{CatchUp: f.catchUpUntil != ""}
	f.deadline = time.Now().Add(f.opt.BatchDelay)
	return err
}

func sourceName(dir string) string {
	if dir == "" {
		return "journal"
	}
	return "journal:" + dir
}

// SourceName is the ingest position source of a journal directory ("" =
// the local journal).
func SourceName(dir string) string { return sourceName(dir) }

// keep applies the unit globs with the same disjunction `journalctl -u`
// uses: _SYSTEMD_UNIT, or UNIT on PID 1's records, or OBJECT_SYSTEMD_UNIT
// of root's records; container output always passes (its unit is a conmon
// scope, mapped to the service through podman events).
func keep(rec ingest.Record, globs []string) bool {
	if len(globs) == 0 {
		return true
	}
	if len(rec["CONTAINER_NAME"]) > 0 || len(rec["CONTAINER_ID_FULL"]) > 0 {
		return true
	}
	for _, f := range []string{"_SYSTEMD_UNIT", "UNIT", "OBJECT_SYSTEMD_UNIT"} {
		u := string(rec[f])
		if u == "" {
			continue
		}
		for _, g := range globs {
			if ok, _ := path.Match(g, u); ok {
				return true
			}
		}
	}
	return false
}
