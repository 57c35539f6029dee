package judge

import (
	"strings"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/rules"
)

// Restore takes up stored attempt a, which an earlier run left open: its
// engine, phase (the one it last entered), timeline, readiness, shape,
// context, findings and evidence. Each evidence line goes back where its
// role (domain.Evidence.Role) says it was: readiness and boot-shape lines,
// last error lines, the fatal event an unknown failure stands on, lines of
// root causes that lost to the verdict; lines stored without a role
// (by an earlier version) are placed by the stored verdict. The findings
// the judge makes itself are restored too: those raised outside the rules
// (log loss) as they were, the unknown failure and the death by a signal
// from their lines, to be named again. What that run held only in memory
// starts empty: sequence and count progress, the context ring, lines
// before the engine was known, error lines it did not show. End rules'
// findings are judged again at the end.
func (j *Judge) Restore(a *domain.Attempt) {
	j.version++
	j.restoreState(a)
	cited := map[string]bool{}
	for _, f := range a.Findings {
		j.restoreFinding(a, f, cited)
	}
	for _, e := range a.Evidence {
		if e.Role != 0 {
			j.restoreByRole(a)
			return
		}
	}
	// Lines stored without roles: the readiness and boot-shape lines of a
	// ready or running attempt, the error-looking lines of an unexplained
	// one, or lines of root causes that lost to the verdict.
	for _, e := range a.Evidence {
		switch {
		case cited[e.Cursor+"\x00"+e.Message]:
		case a.Verdict == domain.VerdictReady || a.Verdict == domain.VerdictRunning:
			j.addReadyEvidence(e)
		case a.Verdict == domain.VerdictUnknownFailure:
			j.lastErrors = append(j.lastErrors, e)
		default:
			j.also = append(j.also, e)
		}
	}
}

// restoreState takes up stored attempt a's engine, times, lines, shape,
// timeline, context and phase; the engine no longer changes.
func (j *Judge) restoreState(a *domain.Attempt) {
	j.setEngine(a.Engine, a.EngineVersion)
	j.locked = true
	j.a.StartedAt, j.a.ReadyAt, j.a.Lines, j.a.LastLineAt = a.StartedAt, a.ReadyAt, a.Lines, a.LastLineAt
	j.a.Shape = domain.Shape{}
	for k, v := range a.Shape {
		j.a.Shape[k] = v
	}
	j.a.Timeline = append([]domain.PhaseMark(nil), a.Timeline...)
	j.a.Context = append([]domain.Evidence(nil), a.Context...)
	// The stored phase is the verdict's; the attempt goes on from the
	// phase it last entered.
	j.a.Phase = a.Phase
	if n := len(j.a.Timeline); n > 0 {
		j.a.Phase = j.a.Timeline[n-1].Phase
	}
}

// restoreFinding takes up finding f of stored attempt a as a root cause or
// side finding, and marks its lines in cited (cursor NUL message). The
// findings the judge names itself at the end, findings of end rules and
// of rules the set no longer has are left out.
func (j *Judge) restoreFinding(a *domain.Attempt, f domain.Finding, cited map[string]bool) {
	if f.Rule == ruleUnknownFailure || f.Rule == ruleKilledBySignal {
		return // named again at the end from the restored lines
	}
	r := ruleByID(j.set, f.Rule)
	external := false
	if r == nil {
		// A finding raised outside the rules (Finding) has the bare rule
		// of its id when the set has none.
		if b := findingRule(j.set, f.ID); b.ID == f.Rule {
			r, external = b, true
		}
	}
	if r == nil || r.End {
		return // unknown now, or an end rule: judged again at the end
	}
	p := &pending{rule: r, phase: f.Phase, time: f.Time, captures: f.Captures,
		evidence: withoutRoles(f.Evidence), lineNo: -reconsiderWindow - 1}
	switch {
	case external && len(f.Evidence) > 0:
		p.line = f.Evidence[0].Message // as Finding gives it
		if len(j.external) < maxRoots {
			j.external, j.externalID = append(j.external, p.evidence[0]), append(j.externalID, f.ID)
		}
	case len(f.Evidence) > 0:
		p.text = j.eng.Strip(decisiveLine(f))
		p.line = snippet(p.text, max(r.MatchAt(p.text), 0))
		p.match = f.Match
	}
	for _, e := range f.Evidence {
		cited[e.Cursor+"\x00"+e.Message] = true
	}
	if r.IsRootCause() {
		p.event = p.lineNo
		p.ready = !a.ReadyAt.IsZero() && !f.Time.Before(a.ReadyAt)
		if len(j.roots) < maxRoots {
			j.roots = append(j.roots, p)
		}
		return
	}
	if _, ok := j.side[r.FindingID()]; !ok {
		j.side[r.FindingID()] = p
		j.sideOrder = append(j.sideOrder, r.FindingID())
	}
}

// decisiveLine is the decisive line of stored finding f, which has
// evidence, as the rules saw it: the line holding the match (a
// traceback's announcing line comes before it), else the first.
func decisiveLine(f domain.Finding) string {
	for _, e := range f.Evidence {
		if f.Match != "" && strings.Contains(e.Message, f.Match) {
			return e.Message
		}
	}
	return f.Evidence[0].Message
}

// restoreByRole puts each evidence line of stored attempt a back where its
// role says it was. Lines of rule findings came back with their findings,
// milestones come back from the timeline, and the lifecycle records are
// the tracker's.
func (j *Judge) restoreByRole(a *domain.Attempt) {
	j.restoreLastErrors(a)
	for _, e := range a.Evidence {
		r := e.Role
		e.Role = 0
		if r.Has(domain.RoleReady) {
			j.addReadyEvidence(e)
		}
		if r.Has(domain.RoleCandidate) {
			j.also = append(j.also, e)
		}
		if r.Has(domain.RoleMilestone) && a.Verdict == domain.VerdictRunning {
			m := e // where the boot got to, until a later marker
			j.lastMarker = &m
		}
		if a.Verdict == domain.VerdictUnknownFailure && (r.Has(domain.RoleException) || r.Has(domain.RoleDeath)) {
			j.restoreFatal(a, e, r)
		}
	}
}

// restoreLastErrors takes up the last error lines of stored attempt a in
// the order the judge kept them.
func (j *Judge) restoreLastErrors(a *domain.Attempt) {
	// The attempt's lines are in time order, a line with two roles where
	// it first came; the unknown failure's own finding lists its lines in
	// the judge's order (the decisive line, the last errors, the
	// lifecycle), which the last errors keep.
	role := make(map[string]domain.EvidenceRole, len(a.Evidence))
	for _, e := range a.Evidence {
		role[e.Cursor+"\x00"+e.Message] |= e.Role
	}
	errs := a.Evidence
	for _, f := range a.Findings {
		if f.Rule == ruleUnknownFailure && len(f.Evidence) > 0 {
			errs = f.Evidence
			if r := role[errs[0].Cursor+"\x00"+errs[0].Message]; r.Has(domain.RoleException) || r.Has(domain.RoleDeath) {
				errs = errs[1:] // the decisive line, which may come again as a last error
			}
		}
	}
	for _, e := range errs {
		if role[e.Cursor+"\x00"+e.Message].Has(domain.RoleLastError) {
			e.Role = 0
			j.lastErrors = append(j.lastErrors, e)
		}
	}
}

// restoreFatal takes up line e (its roles r) as the fatal event the
// unknown failure of stored attempt a stands on, before every line still
// to come (a later step of the boot withdraws it).
func (j *Judge) restoreFatal(a *domain.Attempt, e domain.Evidence, r domain.EvidenceRole) {
	kind := FatalException
	if r.Has(domain.RoleDeath) {
		kind = FatalDeath
	}
	if len(j.exc.fatals) < maxFatals {
		j.exc.fatals = append(j.exc.fatals, Fatal{Kind: kind, Message: e.Message, Start: -1, Line: -1,
			Evidence: e, Phase: a.Phase, ExitStatus: -1})
	}
}

// withoutRoles returns a copy of evs with no roles (a finding's lines).
func withoutRoles(evs []domain.Evidence) []domain.Evidence {
	out := append([]domain.Evidence(nil), evs...)
	for i := range out {
		out[i].Role = 0
	}
	return out
}

// ruleByID returns the rule of s with that id, or nil.
func ruleByID(s *rules.Set, id string) *rules.Rule {
	for _, r := range s.Rules() {
		if r.ID == id {
			return r
		}
	}
	return nil
}
