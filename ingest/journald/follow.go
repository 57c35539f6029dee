//go:build linux && cgo

package journald

import (
	"context"
	"errors"
	"fmt"
	"path"
	"runtime"
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

// journalReader is what Follow reads: sd-journal in this process (Reader)
// or journalctl in a child process (ProcReader).
type journalReader interface {
	SeekAt(cursor string) error
	SeekAfter(cursor string) error
	SeekSince(t time.Time) error
	SeekTail() error
	Next() (rec ingest.Record, cursor string, ok bool, err error)
	Wait(d time.Duration)
	Close() error
	// Bad counts entries that could not be read and were skipped.
	Bad() int64
	// TakeGap returns what could not be read since the last call ("" none).
	TakeGap() string
}

// FollowOptions configure Follow. Zero values take the defaults.
type FollowOptions struct {
	// InProcess reads the journal with sd-journal in this process instead
	// of journalctl in a child (ProcReader): no child, but a journal file
	// truncated under the reader kills the process with SIGBUS.
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
	// Stats, when set, receives counters after each batch.
	Stats func(FollowStats)
}

// FollowStats are the follower's counters since it started.
type FollowStats struct {
	Records, Entries, Skipped, BadEntries int64
	// Newest is the time of the newest entry read (journal lag = now - Newest).
	Newest time.Time
}

// Follow reads the journal from resume (or per opt on a first run) and
// hands batches of normalized entries to handle until ctx is done; it
// returns within about a second of that. The reader is owned by one
// goroutine locked to its OS thread. A handler error stops Follow and is
// returned; the caller restarts from the last position it saved.
func Follow(ctx context.Context, opt FollowOptions, resume Resume, handle func(Batch) error) error {
	if opt.BatchEntries <= 0 {
		opt.BatchEntries = 2000
	}
	if opt.BatchDelay <= 0 {
		opt.BatchDelay = 200 * time.Millisecond
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		errc <- follow(ctx, opt, resume, handle)
	}()
	return <-errc
}

func follow(ctx context.Context, opt FollowOptions, resume Resume, handle func(Batch) error) error {
	var r journalReader
	var err error
	if opt.InProcess {
		r, err = Open(opt.Dir)
	} else {
		r, err = OpenProc(opt.Dir)
	}
	if err != nil {
		return err
	}
	defer r.Close()

	catchUpUntil := ""
	gap := ""
	switch {
	case resume.ReplayCursor != "" && resume.Cursor != "":
		if err := r.SeekAt(resume.ReplayCursor); err == nil {
			catchUpUntil = resume.Cursor
			break
		}
		// The replay start was vacuumed: resume after the saved cursor.
		gap = fmt.Sprintf("journal entries from %s were vacuumed before the analyzer re-read them", resume.ReplayCursor)
		if err := r.SeekAfter(resume.Cursor); errors.Is(err, ErrCursorGone) {
			gap = fmt.Sprintf("saved journal cursor %s is gone (vacuumed or rotated away); reading from the oldest entry", resume.Cursor)
		} else if err != nil {
			return err
		}
	case resume.Cursor != "":
		if err := r.SeekAfter(resume.Cursor); errors.Is(err, ErrCursorGone) {
			gap = fmt.Sprintf("saved journal cursor %s is gone (vacuumed or rotated away); reading from the oldest entry", resume.Cursor)
		} else if err != nil {
			return err
		}
	case !opt.Since.IsZero():
		if err := r.SeekSince(opt.Since); err != nil {
			return err
		}
	default:
		if err := r.SeekTail(); err != nil {
			return err
		}
	}

	asm := ingest.NewAssembler(sourceName(opt.Dir), opt.Ingest)
	var stats FollowStats
	batch := Batch{Gap: gap, CatchUp: catchUpUntil != ""}
	deadline := time.Now().Add(opt.BatchDelay)
	flush := func() error {
		if len(batch.Entries) == 0 && batch.Cursor == "" && batch.Gap == "" {
			return nil
		}
		stats.BadEntries = r.Bad()
		if opt.Stats != nil {
			opt.Stats(stats)
		}
		err := handle(batch)
		batch = Batch{CatchUp: catchUpUntil != ""}
		deadline = time.Now().Add(opt.BatchDelay)
		return err
	}
	for {
		if ctx.Err() != nil {
			// Entries read but not handed over are read again after a
			// restart: their cursor was never saved.
			return nil
		}
		rec, cursor, ok, err := r.Next()
		if err != nil {
			return err
		}
		if g := r.TakeGap(); g != "" {
			// Hand over what was read before the loss first: the gap
			// belongs between it and what comes next.
			if err := flush(); err != nil {
				return err
			}
			batch.Gap = g
			if err := flush(); err != nil {
				return err
			}
		}
		if !ok {
			// Pieces of a split line stay with the assembler until their
			// last piece or the orphan timeout: the writer may be mid-line.
			if err := flush(); err != nil {
				return err
			}
			r.Wait(time.Second)
			continue
		}
		stats.Records++
		batch.Cursor = cursor
		if keep(rec, opt.Units) {
			for _, e := range asm.Push(rec) {
				stats.Entries++
				if e.Time.After(stats.Newest) {
					stats.Newest = e.Time
				}
				batch.Entries = append(batch.Entries, e)
			}
		} else {
			stats.Skipped++
		}
		if catchUpUntil != "" && cursor == catchUpUntil {
			// Everything up to the saved cursor is rebuilt: hand the
			// catch-up batch over and go on normally.
			if err := flush(); err != nil {
				return err
			}
			catchUpUntil = ""
			batch.CatchUp = false
			continue
		}
		if len(batch.Entries) >= opt.BatchEntries || time.Now().After(deadline) {
			if err := flush(); err != nil {
				return err
			}
		}
	}
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
