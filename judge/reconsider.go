package judge

import (
	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/rules"
)

// DecisiveLines are the lines a stored unknown failure stands on: its last
// error lines, then its unnamed exception or death line, the order the
// judge made its fingerprint from; for lines stored without roles, every
// evidence line.
func DecisiveLines(a *domain.Attempt) []domain.Evidence {
	var errs, fatal, all []domain.Evidence
	for _, e := range a.Evidence {
		switch {
		case e.Role&(domain.RoleException|domain.RoleDeath) != 0:
			fatal = append(fatal, e)
		case e.Role.Has(domain.RoleLastError):
			errs = append(errs, e)
		case e.Role == 0:
			all = append(all, e)
		}
	}
	if len(errs)+len(fatal) == 0 {
		return all
	}
	return append(errs, fatal...)
}

// DecisiveLine is the line an unknown failure's fingerprint is made from:
// the last exception-looking line of lines, else the last line; false
// when there are none.
func DecisiveLine(lines []domain.Evidence) (domain.Evidence, bool) {
	if len(lines) == 0 {
		return domain.Evidence{}, false
	}
	for i := len(lines) - 1; i >= 0; i-- {
		if lastExceptionLine.MatchString(lines[i].Message) {
			return lines[i], true
		}
	}
	return lines[len(lines)-1], true
}

// DecisiveLineOf is the line a stored unknown failure's fingerprint was
// made from (the evidence line with that fingerprint), else DecisiveLine
// of its DecisiveLines.
func DecisiveLineOf(a *domain.Attempt) (domain.Evidence, bool) {
	if a.Fingerprint != "" {
		for _, e := range DecisiveLines(a) {
			if fingerprint([]domain.Evidence{e}) == a.Fingerprint {
				return e, true
			}
		}
	}
	return DecisiveLine(DecisiveLines(a))
}

// Reconsider names the cause of a stored unknown failure with set's rules:
// the line rules of the attempt's engine are run on the lines the failure
// stands on (DecisiveLines), as error lines in the phase the attempt
// failed in, and the highest-priority rule that gives a verdict (ties: the
// earliest line) becomes the attempt's verdict, rule, note and finding,
// as if the rule had been there when the boot was judged. It is how a rule
// written for an unknown failure group (rules suggest) reaches the
// attempts already stored, without the journal they came from. Only rules
// use accepts are tried (nil: all): the rules that are new since the
// attempt was judged, as the others already had their say. It reports
// whether a changed; attempts of other verdicts are left alone.
func Reconsider(set *rules.Set, a *domain.Attempt, use func(*rules.Rule) bool) bool {
	if a.Verdict != domain.VerdictUnknownFailure {
		return false
	}
	lines := DecisiveLines(a)
	var best *rules.Hit
	var bestLine domain.Evidence
	seq := rules.SeqState{}
	eng := set.Engine(a.Engine)
	for _, e := range lines {
		text := e.Message
		if eng != nil {
			text = eng.Strip(text)
		}
		env := &rules.LineEnv{Line: text, Phase: string(a.Phase), Engine: a.Engine, Unit: a.Unit,
			Shape: a.Shape, ReachedReady: !a.ReadyAt.IsZero(), Error: true, Time: e.Time}
		for _, h := range set.MatchLine(env, seq) {
			if h.Rule.Verdict == "" || !h.Rule.Verdict.IsFailure() || use != nil && !use(h.Rule) {
				continue
			}
			if best == nil || h.Rule.Priority > best.Rule.Priority {
				h := h
				best, bestLine = &h, e
			}
		}
	}
	if best == nil {
		return false
	}
	r := best.Rule
	a.Verdict, a.Rule = r.Verdict, r.ID
	if r.Phase.Valid() {
		a.Phase = r.Phase
	} else if r.Floor.Valid() && a.Phase.Rank() < r.Floor.Rank() {
		a.Phase = r.Floor
	}
	a.Note = r.RenderNote(rules.NoteData{Rule: r.ID, Verdict: string(r.Verdict), Phase: string(a.Phase),
		Engine: a.Engine, Unit: a.Unit, Captures: best.Captures, Shape: a.Shape, Line: bestLine.Message})
	for i := range a.Evidence {
		if a.Evidence[i].Message == bestLine.Message && a.Evidence[i].Time.Equal(bestLine.Time) {
			a.Evidence[i].Role |= domain.RoleFinding
		}
	}
	f := domain.Finding{ID: string(r.Verdict), Rule: r.ID, Severity: r.Severity, MessageID: r.MessageID,
		Phase: a.Phase, Time: bestLine.Time, Note: a.Note, Evidence: []domain.Evidence{bestLine}}
	kept := a.Findings[:0]
	for _, old := range a.Findings {
		if old.ID != string(domain.VerdictUnknownFailure) {
			kept = append(kept, old)
		}
	}
	a.Findings = append(kept, f)
	return true
}
