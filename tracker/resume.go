package tracker

import (
	"time"

	"github.com/llmfleet/analyzer/domain"
)

// Resume continues a journal attempt that an earlier run stored while it
// was still open, because that run's input stopped in the middle of it
// (yesterday's export replayed, then today's). Later entries of the same
// unit invocation then extend it, with its engine, phase, shape, timeline,
// findings and evidence, instead of starting an attempt without its
// beginning, which no engine rule would recognise. What the earlier run
// held only in memory starts empty: sequence and count progress, the
// context ring, lines before the engine was known.
//
// The stored attempt is taken up when an entry of it arrives: an entry
// after its start continues it (when that entry is older than the last
// time the attempt recorded, the input overlaps the earlier one and entries
// up to that time are skipped as read before); one at or before its start means
// the input holds the whole attempt, which is then judged afresh. A new
// invocation of the unit ends it as replaced, as in one run. Ended
// attempts, attempts without an ID, unit or invocation, and ones the
// tracker already has are ignored.
func (t *Tracker) Resume(a *domain.Attempt) {
	if a == nil || a.ID == "" || !a.EndedAt.IsZero() || a.Unit == "" || a.InvocationID == "" {
		return
	}
	key := a.Host + "|" + a.Unit + "|" + a.InvocationID
	if _, ok := t.byKey[key]; ok {
		return
	}
	t.resumable[key] = a
	if a.ContainerID != "" {
		t.resumableCID[a.ContainerID] = key
	}
}

// continueResumed takes up the stored attempt of key when an entry at time
// at (cursor: its __CURSOR) continues it; nil when there is none or the
// entry re-reads it.
func (t *Tracker) continueResumed(key string, at time.Time, cursor string) *state {
	a := t.resumable[key]
	if a == nil {
		return nil
	}
	t.forgetResumed(key)
	if !at.IsZero() && !a.StartedAt.IsZero() && !at.After(a.StartedAt) && !(at.Equal(a.StartedAt) && heldEarlier(a, cursor)) {
		// The input holds it from its start. An entry stamped with the
		// start time itself (journald gives a burst of lines one
		// timestamp) continues it when the attempt holds an entry that
		// came before it in the same journal.
		return nil
	}
	st := t.resumeState(a)
	if last := lastKnown(a); at.IsZero() || !at.Before(last) {
		// The input starts after what was read: take every entry, even
		// one stamped a little earlier (journal streams interleave).
		st.skipUntil = time.Time{}
	}
	return st
}

// takeUpResumed continues the latest stored open attempt of unit uk
// ("host|unit") for a record at time at (cursor: its __CURSOR) about the
// unit, not of an invocation (journald's suppression notice); nil when
// there is none or the record re-reads it from its start.
func (t *Tracker) takeUpResumed(uk string, at time.Time, cursor string) *state {
	var key string
	var latest *domain.Attempt
	for k, a := range t.resumable {
		if a.Host+"|"+a.Unit == uk && (latest == nil || a.StartedAt.After(latest.StartedAt)) {
			key, latest = k, a
		}
	}
	if latest == nil {
		return nil
	}
	return t.continueResumed(key, at, cursor)
}

// heldEarlier reports whether stored attempt a holds a line of the
// journal that cursor is a position in, written before it: journald
// numbers the entries of a journal (the cursor's s=) in the order it writes
// them (i=).
func heldEarlier(a *domain.Attempt, cursor string) bool {
	id, n, ok := domain.CursorSeqnum(cursor)
	if !ok {
		return false
	}
	first, ok := firstSeqnums(a)[id]
	return ok && first < n
}

// storedCursors calls f with the cursor of every line stored attempt a
// holds: phase marks, evidence, context and findings' evidence.
func storedCursors(a *domain.Attempt, f func(cursor string)) {
	for _, m := range a.Timeline {
		f(m.Cursor)
	}
	for _, list := range [][]domain.Evidence{a.Evidence, a.Context} {
		for _, e := range list {
			f(e.Cursor)
		}
	}
	for _, fd := range a.Findings {
		for _, e := range fd.Evidence {
			f(e.Cursor)
		}
	}
}

// firstSeqnums and lastSeqnums map each journal stored attempt a has lines
// of (cursor s=) to the first and last of those lines (i=).
func firstSeqnums(a *domain.Attempt) map[string]uint64 { return seqnums(a, false) }
func lastSeqnums(a *domain.Attempt) map[string]uint64  { return seqnums(a, true) }

func seqnums(a *domain.Attempt, last bool) map[string]uint64 {
	var m map[string]uint64
	storedCursors(a, func(c string) {
		id, n, ok := domain.CursorSeqnum(c)
		if !ok {
			return
		}
		if m == nil {
			m = map[string]uint64{}
		}
		if cur, seen := m[id]; !seen || (last && n > cur) || (!last && n < cur) {
			m[id] = n
		}
	})
	return m
}

// replaceResumed ends the unit's stored open attempts that started before
// at as replaced: a new invocation of the unit is starting.
func (t *Tracker) replaceResumed(uk string, at time.Time) {
	for key, a := range t.resumable {
		if a.Host+"|"+a.Unit == uk && a.StartedAt.Before(at) {
			t.forgetResumed(key)
			t.end(t.resumeState(a), at, domain.EndedByReplaced)
		}
	}
}

func (t *Tracker) forgetResumed(key string) {
	if a := t.resumable[key]; a != nil && a.ContainerID != "" {
		delete(t.resumableCID, a.ContainerID)
	}
	delete(t.resumable, key)
}

// reread reports whether e was read by the run that stored st's attempt.
func (st *state) reread(e domain.Entry) bool {
	if !st.skipUntil.IsZero() && !e.Time.IsZero() && !e.Time.After(st.skipUntil) {
		return true
	}
	// An entry a stored line comes after in its journal was read before,
	// whatever its time (a burst of lines shares one).
	if len(st.skipSeq) > 0 {
		if id, n, ok := domain.CursorSeqnum(e.Cursor); ok {
			if last, ok := st.skipSeq[id]; ok && n <= last {
				return true
			}
		}
	}
	return false
}

// resumeState rebuilds the working state of stored attempt a and registers
// it as the tracker's attempt of its unit invocation.
func (t *Tracker) resumeState(a *domain.Attempt) *state {
	c := *a
	c.Shape, c.Timeline, c.Context = nil, nil, nil
	c.Findings, c.Evidence, c.Note, c.Rule, c.Fingerprint = nil, nil, "", "", ""
	st := &state{a: &c, j: t.newJudge(), seq0: t.created, skipUntil: lastKnown(a), skipSeq: lastSeqnums(a), stopReq: a.StopRequested}
	// The stored log goes on: number the new lines after the stored ones
	// (the store adds only lines after the last it has).
	st.log.total, st.log.headFull = a.Lines, a.Lines >= domain.LogHead
	t.created++
	st.j.Restore(a)
	// The unit's lifecycle so far: its main process's exit record, when
	// one came before the attempt ended (a death by a signal is judged
	// from it), and whether that exit was a failure.
	for _, e := range a.Evidence {
		ev := e
		ev.Role = 0
		if e.Role.Has(domain.RoleExit) {
			st.exitLine = &ev
		}
		if e.Role.Has(domain.RoleEnd) {
			st.endLine = &ev
		}
	}
	st.failed = a.ExitCode != "" && a.ExitStatus != nil && *a.ExitStatus != 0 && !a.StopRequested
	t.changed(st)
	t.attempts = append(t.attempts, st)
	t.byKey[a.Host+"|"+a.Unit+"|"+a.InvocationID] = st
	uk := a.Host + "|" + a.Unit
	if prev := t.lastByUnit[uk]; prev == nil || prev.a.StartedAt.Before(a.StartedAt) {
		t.lastByUnit[uk] = st
	}
	if a.ContainerID != "" {
		t.byContainer[a.ContainerID] = st
	}
	if a.Container != "" {
		t.byName[a.Host+"|"+a.Container] = st
	}
	if a.Engine != "" {
		t.engineUnits[uk] = true
	}
	if _, ok := t.knownZones[a.Host]; !ok && !a.StartedAt.IsZero() {
		t.knownZones[a.Host] = a.StartedAt.Location()
	}
	return st
}

// KnowZone gives the UTC offset an earlier run learned for host (from its
// stored attempts), for input that holds no line stating it; an offset
// learned from this input's lines takes precedence.
func (t *Tracker) KnowZone(host string, loc *time.Location) {
	if host != "" && loc != nil {
		t.knownZones[host] = loc
	}
}

// lastKnown is the latest time stored attempt a records: its start, phase
// marks, evidence, context and findings.
func lastKnown(a *domain.Attempt) time.Time {
	last := a.StartedAt
	later := func(t time.Time) {
		if t.After(last) {
			last = t
		}
	}
	later(a.ReadyAt)
	for _, m := range a.Timeline {
		later(m.Time)
	}
	for _, e := range a.Evidence {
		later(e.Time)
	}
	for _, e := range a.Context {
		later(e.Time)
	}
	for _, f := range a.Findings {
		later(f.Time)
	}
	return last
}
