package domain

import "time"

// Types exchanged at the store's boundary: what ingest positions and the
// metrics collector read and write, so that pipeline and metrics need not
// import the store.

// Position is how far ingest has read a source. Resuming from it after a
// crash neither skips nor repeats a record, because SaveAttempts commits it
// together with the attempts those records produced.
type Position struct {
	// Source names the input: a file path, "-" or "journal".
	Source string
	// Cursor is the journald __CURSOR of the last record consumed ("" for
	// plain-text files).
	Cursor string
	// Offset is the number of bytes of a file source consumed (0 for the
	// live journal).
	Offset int64
	// ReplayCursor is, for the live journal, the first cursor of the oldest
	// attempt still open at Cursor ("" when none was): after a restart the
	// follower re-reads from there without saving, to rebuild those
	// attempts, until it passes Cursor.
	ReplayCursor string
}

// AttemptCount is the number of stored attempts of one host, unit, engine
// and verdict, and how many of them have ended.
type AttemptCount struct {
	Host, Unit, Engine, Verdict string
	N, Ended                    int64
	// LastEnded is the latest end time of those attempts (zero when none
	// ended): when the unit last ended an attempt with this verdict, as
	// the journal dates it, whatever replay or re-save stored it.
	LastEnded time.Time
	// LastEndedID is the id of that attempt ("" when none ended).
	LastEndedID string
}

// FindingCount is the number of stored findings of one host, unit and
// finding id (a finding counts once per attempt).
type FindingCount struct {
	Host, Unit, Finding string
	N                   int64
}

// UnitStatus is the state of one (host, unit) as its stored attempts tell it.
type UnitStatus struct {
	Host, Unit string
	// Engine, Verdict, Phase and EndedBy are those of the unit's latest
	// attempt (latest start).
	Engine, Verdict, Phase, EndedBy string
	// LastReady is the latest ready_at of any attempt of the unit (zero if
	// none ever reached ready).
	LastReady time.Time
	// Restarts counts the attempts after which systemd scheduled a restart
	// (restart_counter_after set): it only grows as the database grows.
	Restarts int64
	// RestartCounter is systemd's N_RESTARTS as the latest attempt knows it
	// (the restart scheduled after it, else the one that started it), or
	// nil when neither is known.
	RestartCounter *int
}

// MetricsSnapshot is what the /metrics collector reads from the database at
// scrape time.
type MetricsSnapshot struct {
	Attempts []AttemptCount
	Findings []FindingCount
	Units    []UnitStatus
}
