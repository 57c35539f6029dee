package judge

import (
	"github.com/llmfleet/analyzer/domain"
)

// withdrawn reports whether root r no longer stands: a provisional verdict
// the engine moved past, or a failure the boot went on after (a later
// forward step of the boot phases shows the engine survived it).
func (j *Judge) withdrawn(r *pending) bool {
	if r.block != nil && (!r.block.open || r.block.raising == "") {
		return true
	}
	return r.gone || (!r.ready && j.movedOn(r.lineNo, r.phase))
}

// weakVerdict: a verdict that says a process died or failed without naming
// why; any named cause, and any exception no rule knows, explains more.
func weakVerdict(v domain.Verdict) bool {
	return v == domain.VerdictEngineDied || v == domain.VerdictUnknownFailure
}

// choose picks the attempt's root cause (spec: the first root exception in
// time, not the wrappers and cascades after it): the earliest event with a
// named cause (ties: priority); else the first fatal exception no rule
// names (unknown); else the strongest death or wrapper rule. It returns the
// other standing roots too, as supporting evidence.
func (j *Judge) choose() (best *pending, unknown *Fatal, others []*pending) {
	var weak *pending
	for _, r := range j.roots {
		if j.withdrawn(r) {
			continue
		}
		if weakVerdict(r.rule.Verdict) {
			if weak == nil || r.rule.Priority > weak.rule.Priority {
				weak = r
			}
			continue
		}
		if best == nil || r.event < best.event || (r.event == best.event && r.rule.Priority > best.rule.Priority) {
			best = r
		}
	}
	if best == nil {
		// An exception no rule names explains a failed boot better than a
		// wrapper; not a death the rules place after readiness (serving),
		// where exceptions are often per-request errors the server survives.
		if weak == nil || (weak.phase.Rank() < domain.PhaseServing.Rank() && !weak.ready) {
			unknown = j.unnamedException()
		}
		if unknown == nil {
			best = weak
		}
	}
	for _, r := range j.roots {
		if r != best && !j.withdrawn(r) {
			others = append(others, r)
		}
	}
	return best, unknown, others
}

// unnamedException is the first fatal exception before readiness that no
// root-cause rule fired on and the boot did not go on after.
func (j *Judge) unnamedException() *Fatal {
	for i := range j.exc.fatals {
		f := &j.exc.fatals[i]
		if f.Kind != FatalException || f.AfterReady || j.movedOn(f.Line, f.Phase) {
			continue
		}
		named := false
		for _, r := range j.roots {
			if r.hitIn(f.Start, f.Line) {
				named = true
				break
			}
		}
		if !named {
			return f
		}
	}
	return nil
}

// maxMergedHits bounds pending.hits.
const maxMergedHits = 16

// hitIn reports whether root r's rule fired on a line in [from, to]: its
// decisive line or a later hit merged into it. A rule that fires on an
// exception's own lines names it even when an earlier line of the same
// finding (gufo's event=terminated before terminate's own lines) holds the
// root.
func (r *pending) hitIn(from, to int) bool {
	if r.lineNo >= from && r.lineNo <= to {
		return true
	}
	for _, n := range r.hits {
		if n >= from && n <= to {
			return true
		}
	}
	return false
}

// verdictPhase is the phase of a failure judged in phase p: after the
// engine reported readiness, anything is serving (spec).
func (j *Judge) verdictPhase(p domain.Phase, afterReady bool) domain.Phase {
	if afterReady && p.Rank() < domain.PhaseServing.Rank() {
		return domain.PhaseServing
	}
	return p
}

// fatalEnd is the fatal end of an attempt whose lines show one (spec:
// plain text that ends in a fatal exception, a death line, an assertion or
// panic, or a stated exit, with no readiness after it): the first fatal
// event the boot did not go on after. Lines logged at error level count
// only at the end of pasted text (a running engine often logs errors it
// survives; a journal has the exit record), and a stated exit status 0 is
// no failure.
func (j *Judge) fatalEnd(end End) *Fatal {
	kinds := []FatalKind{FatalException, FatalDeath}
	if end.Ended && end.Text {
		// Pasted text has no exit record: its last error lines are its end.
		kinds = append(kinds, FatalErrorLog)
	}
	for i := range j.exc.fatals {
		f := &j.exc.fatals[i]
		if f.AfterReady || f.ExitStatus == 0 || j.movedOn(f.Line, f.Phase) {
			continue
		}
		for _, k := range kinds {
			if f.Kind == k {
				return f
			}
		}
	}
	return nil
}
