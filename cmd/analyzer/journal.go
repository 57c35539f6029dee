package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/coreos/go-systemd/v22/journal"

	"github.com/spf13/pflag"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/ingest/journald"
	"github.com/llmfleet/analyzer/internal/when"
	"github.com/llmfleet/analyzer/metrics"
	"github.com/llmfleet/analyzer/notes"
	"github.com/llmfleet/analyzer/pipeline"
	"github.com/llmfleet/analyzer/rules"
	"github.com/llmfleet/analyzer/store"
)

// journalFlags are serve's flags of the live journal follower.
type journalFlags struct {
	dir     string
	off     bool
	since   string
	units   string
	noNotes bool
	reader  string
	// stallQuiet and stallFloor are serve --stall-quiet and --stall-floor
	// (set by serve, not flags of their own).
	stallQuiet, stallFloor time.Duration
}

func addJournalFlags(fs *pflag.FlagSet) *journalFlags {
	jf := &journalFlags{}
	fs.StringVar(&jf.dir, "journal-dir", "", "follow the journal files of this directory instead of the local journal")
	fs.BoolVar(&jf.off, "no-journal", false, "do not follow a journal")
	fs.StringVar(&jf.since, "since", "", "first run only: start at this time instead of the journal's tail (RFC 3339, 2026-01-01[ 10:00], yesterday, today, -1h)")
	fs.StringVar(&jf.units, "units", "", "comma-separated unit globs to follow (default: every unit; engines are detected from their lines)")
	fs.BoolVar(&jf.noNotes, "no-notes", false, "do not write root-cause notes into the journal")
	fs.StringVar(&jf.reader, "journal-reader", "journalctl",
		"how to read the journal: journalctl (a child process; a truncated or corrupt file costs a restart of the child) or sd-journal (in this process; no child, but a file truncated under it kills the analyzer with SIGBUS)")
	return jf
}

// localJournalDirs are where journald keeps the local journal.
var localJournalDirs = journald.LocalDirs

// openJournal, when set, opens the journal startJournal follows instead of
// the reader --journal-reader and --journal-dir choose: tests follow an
// in-memory journal (journaldfake) through serve's own wiring.
var openJournal func() (journald.Journal, error)

// wanted reports whether serve should follow a journal: a directory was
// given, or a local journal is readable.
func (jf *journalFlags) wanted() bool {
	if jf.off {
		return false
	}
	if jf.dir != "" {
		return true
	}
	for _, d := range localJournalDirs {
		if f, err := os.Open(d); err == nil {
			f.Close()
			return true
		}
	}
	return false
}

// followOnly are the flags that only matter to the journal follower (notes
// are written by the follower alone).
var followOnly = []string{"journal-dir", "since", "units", "journal-reader", "no-notes"}

// warnUnused warns about journal flags that change nothing because no
// journal will be followed.
func (jf *journalFlags) warnUnused(fs *pflag.FlagSet) {
	switch {
	case jf.off:
		noEffect(fs, "--no-journal is set", followOnly...)
	case !jf.wanted():
		noEffect(fs, "no journal is followed: the local journal ("+strings.Join(localJournalDirs, ", ")+") is not readable", followOnly...)
	}
}

// follower is the running journal follower of serve and the pipeline it
// feeds.
type follower struct {
	pipeline *pipeline.Live
	run      *journald.Follower
}

// The live pipeline is what the follower feeds.
var _ journald.Sink = (*pipeline.Live)(nil)

// health reports whether the follower still reads the journal.
func (f *follower) health() (bool, string) { return f.run.Health() }

// startJournal follows the journal into its own pipeline, resuming exactly
// after the position saved with the last attempts, and writes root-cause
// notes back into the local journal.
func startJournal(ctx context.Context, db *store.DB, set *rules.Set, jf *journalFlags, m *metrics.Metrics,
	pusher pipeline.FindingSink) (*follower, error) {
	opt := journald.FollowOptions{Dir: jf.dir, Logf: func(format string, args ...any) {
		slog.Warn(fmt.Sprintf(format, args...))
	}}
	switch jf.reader {
	case "journalctl":
	case "sd-journal":
		opt.InProcess = true
	default:
		return nil, usageError{msg: fmt.Sprintf("--journal-reader %q: want journalctl or sd-journal", jf.reader)}
	}
	if jf.units != "" {
		opt.Units = strings.Split(jf.units, ",")
	}
	if jf.since != "" {
		t, err := when.Parser{Loc: time.Local, Now: time.Now}.Parse(jf.since)
		if err != nil {
			return nil, usageError{msg: "--since " + err.Error()}
		}
		opt.Since = t
	}
	source := journald.SourceName(jf.dir)
	pos, ok, err := db.Position(ctx, source)
	if err != nil {
		return nil, err
	}
	resume := journald.Resume{}
	if ok && jf.since != "" {
		slog.Warn("--since has no effect", "why", source+" resumes after the position saved in the database (--since applies to a first run)")
	}
	if ok {
		resume = journald.Resume{Cursor: pos.Cursor, ReplayCursor: pos.ReplayCursor}
	}
	sink := pusher
	if !jf.noNotes {
		w, err := notesWriter(db, m)
		if err != nil {
			return nil, err
		}
		sink = pipeline.Fanout(pusher, w)
	}
	// The journal keeps what a stop leaves unsaved: the next start resumes
	// at the saved position.
	p := pipeline.New(db, set, pipeline.Options{Metrics: m, Findings: sink, Context: ctx, History: db, StallQuiet: jf.stallQuiet, StallFloor: jf.stallFloor})
	p.Start()
	opt.Stats = followMetrics(m, source)
	opt.Open = openJournal
	f := &follower{pipeline: p, run: journald.Start(ctx, opt, resume, p)}
	where := "the local journal"
	if jf.dir != "" {
		where = jf.dir
	}
	if jf.noNotes {
		slog.Info("following "+where, "notes", "off (--no-notes)")
	} else {
		// Writing into the host's journal is a side effect an operator
		// should hear of at start, with the way to turn it off.
		slog.Info("following "+where+"; a root-cause note is written into the local journal for each failed boot (MESSAGE_ID per verdict; --no-notes turns this off)", "notes", "on")
	}
	if jf.dir == "" {
		if n, readable := journald.FilesReadable(localJournalDirs); n > 0 && readable == 0 {
			slog.Warn("no local journal file or directory is readable: nothing will be read; run with SupplementaryGroups=systemd-journal (the shipped unit does)",
				"files", n, "uid", os.Geteuid(), "groups", groups())
		}
	}
	return f, nil
}

// followMetrics turns the follower's counters into metrics of source:
// entries ingested, records skipped by the unit filter, unreadable entries
// and journal gaps.
func followMetrics(m *metrics.Metrics, source string) func(journald.FollowStats) {
	var last journald.FollowStats
	return func(s journald.FollowStats) {
		m.IngestEntries(source, int(s.Entries-last.Entries))
		if n := s.Skipped - last.Skipped; n > 0 {
			m.LinesSkipped(source, "unit_filter", int(n))
		}
		for i := last.BadEntries; i < s.BadEntries; i++ {
			m.IngestError(source, "bad_entry")
		}
		for i := last.Gaps; i < s.Gaps; i++ {
			m.IngestError(source, "journal_gap")
		}
		last = s
	}
}

// stop ends the follower within about a second, then saves what its
// pipeline holds.
func (f *follower) stop() error {
	return errors.Join(f.run.Stop(), f.pipeline.Close())
}

// notesWriter returns the writer of root-cause notes: the database is its
// ledger, and notes already in the local journal (sent just before a crash)
// are not sent again.
func notesWriter(db *store.DB, m *metrics.Metrics) (pipeline.FindingSink, error) {
	// Ask journald to write what it has received, so that a note sent just
	// before a crash is found by the scan (best effort).
	_ = exec.Command("journalctl", "--sync").Run()
	known, err := journald.KnownNotes("")
	if err != nil {
		slog.Warn("cannot scan the journal for notes already written", "err", err)
	}
	send := func(message string, priority int, fields map[string]string) error {
		return journal.Send(message, journal.Priority(priority), fields)
	}
	return countingSink{notes.NewWriter(send, db, known), m}, nil
}

// countingSink counts the notes a writer sends.
type countingSink struct {
	w *notes.Writer
	m *metrics.Metrics
}

func (s countingSink) Offer(a *domain.Attempt, f domain.Finding) bool {
	if s.w.Offer(a, f) {
		s.m.NoteWritten()
		return true
	}
	return false
}

// groups is this process's supplementary group ids (nil on error).
func groups() []int {
	g, _ := os.Getgroups()
	return g
}
