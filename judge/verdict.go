package judge

import (
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/rules"
)

// Judge returns the attempt base (identity and lifecycle fields, from the
// tracker) with the verdict, phase, findings, notes, evidence, engine,
// shape and timeline as judged from its lines so far. It does not change
// the judge, so it can run repeatedly.
func (j *Judge) Judge(base *domain.Attempt, end End) *domain.Attempt {
	v := &verdict{j: j, a: j.attempt(base), end: end}
	a := v.a
	v.reached = !a.ReadyAt.IsZero()
	if a.ExitStatus == nil && j.exit >= 0 {
		a.ExitStatus = intp(j.exit) // the text states it ("exited with code 1")
	}
	best, unknown, others := j.choose()
	v.end.fatal = j.fatalEnd(end)
	v.name(best, unknown)
	if a.Rule == ruleKilledBySignal {
		v.killedBySignal()
	}
	if a.Verdict == domain.VerdictUnknownFailure {
		v.unknownFailure(unknown)
	}
	if a.Rule == ruleStartTimeout {
		v.startTimedOut()
	}
	if best != nil {
		v.rootCause(best, others)
	}
	v.sideFindings()
	v.endRules()
	a.Evidence = dedupeEvidence(a.Evidence, v.roles)
	if !a.ReadyAt.IsZero() && a.ReadyAt.Equal(time.Unix(0, 1)) {
		a.ReadyAt = time.Time{}
	}
	return a
}

// verdict is an attempt being judged (Judge.Judge): base with the judge's
// state, to which the verdict, its note, findings and evidence are added.
type verdict struct {
	j   *Judge
	a   *domain.Attempt
	end End
	// roles[i] is what a.Evidence[i] stands for in the judge's state
	// (domain.Evidence.Role), so that Restore can put it back there.
	roles []domain.EvidenceRole
	// reached: the engine reported readiness.
	reached bool
	// failedAt is when the failure the verdict names happened (zero: not
	// known, or no failure).
	failedAt time.Time
}

// attempt returns a copy of base with the judge's engine, phase,
// readiness, lines (their count and the newest one's time), timeline,
// context and shape (with the engine's defaults), and no verdict,
// findings, evidence or note yet.
func (j *Judge) attempt(base *domain.Attempt) *domain.Attempt {
	a := new(domain.Attempt)
	*a = *base
	a.Engine, a.EngineVersion = j.a.Engine, j.a.EngineVersion
	a.Phase, a.ReadyAt, a.Lines, a.LastLineAt = j.a.Phase, j.a.ReadyAt, j.a.Lines, j.a.LastLineAt
	a.Timeline = append([]domain.PhaseMark(nil), j.a.Timeline...)
	a.Context = append([]domain.Evidence(nil), j.a.Context...)
	a.Shape = domain.Shape{}
	for k, v := range j.a.Shape {
		a.Shape[k] = v
	}
	j.eng.ApplyDefaults(a.Shape)
	a.Findings = nil
	a.Evidence = nil
	a.Note, a.Rule, a.Fingerprint = "", "", ""
	return a
}

// add appends evidence lines that stand for role r.
func (v *verdict) add(r domain.EvidenceRole, evs ...domain.Evidence) {
	v.a.Evidence = append(v.a.Evidence, evs...)
	for range evs {
		v.roles = append(v.roles, r)
	}
}

// lifecycle adds the tracker's exit record and the record that ended the
// attempt.
func (v *verdict) lifecycle() {
	if v.end.Exit != nil {
		v.add(domain.RoleExit, *v.end.Exit)
	}
	if v.end.Line != nil {
		v.add(domain.RoleEnd, *v.end.Line)
	}
}

// name sets the verdict and its phase: the root cause the rules named
// (best), else a fatal exception no rule names (unknown), else what the
// attempt's end and readiness say.
func (v *verdict) name(best *pending, unknown *Fatal) {
	a, j, end := v.a, v.j, &v.end
	switch {
	case best != nil:
		a.Verdict = best.rule.Verdict
		a.Phase = j.verdictPhase(best.phase, best.ready)
		a.Rule = best.rule.ID
		v.failedAt = best.time
		a.Context = append(best.context[:len(best.context):len(best.context)], nil...)
	case unknown != nil:
		a.Verdict = domain.VerdictUnknownFailure
		a.Phase = j.verdictPhase(unknown.Phase, unknown.AfterReady)
		v.failedAt = unknown.Evidence.Time
	case end.Result == "timeout":
		a.Verdict = domain.VerdictTimeout
		a.Rule = ruleStartTimeout
		if end.Line != nil {
			v.failedAt = end.Line.Time
		}
	case v.diedBySignal():
		a.Verdict = domain.VerdictEngineDied
		a.Rule = ruleKilledBySignal
		if end.Exit != nil {
			v.failedAt = end.Exit.Time
		}
	case v.failedUnexplained():
		a.Verdict = domain.VerdictUnknownFailure
		if end.fatal != nil {
			a.Phase = j.verdictPhase(end.fatal.Phase, end.fatal.AfterReady)
			v.failedAt = end.fatal.Evidence.Time
		}
		if end.Line != nil {
			v.failedAt = end.Line.Time
		}
	case v.reached:
		// Only the engine's readiness line or a served request proves it:
		// an excerpt that stops at a milestone (warmup, graph capture) is
		// still running in the phase it reached.
		a.Verdict = domain.VerdictReady
		a.Phase = domain.PhaseReady
		v.add(domain.RoleMilestone, milestones(j.a.Timeline, domain.PhaseWarmup, domain.PhaseReady)...)
		v.add(domain.RoleReady, j.readyEv...)
	case end.Ended && a.EndedBy == domain.EndedByStop:
		a.Verdict = domain.VerdictStopped
	default:
		a.Verdict = domain.VerdictRunning
		// Where the boot has got to: its boot-shape lines so far (KV cache
		// size, concurrency). Stored, they also let a later replay that
		// continues the attempt quote them once it is ready.
		v.add(domain.RoleReady, j.readyEv...)
		if m := j.lastMarker; m != nil && a.Phase != domain.PhaseStart {
			v.add(domain.RoleMilestone, *m)
		}
	}
}

// diedBySignal reports whether the main process died by a signal (unasked)
// and no line says why.
func (v *verdict) diedBySignal() bool {
	a := v.a
	return v.end.Failed && (a.ExitCode == "killed" || a.ExitCode == "dumped") && v.end.fatal == nil && !a.StopRequested
}

// failedUnexplained reports whether the attempt failed with no root cause
// named: the unit failed, the engine exited before readiness, or the lines
// end in a fatal event.
func (v *verdict) failedUnexplained() bool {
	end := &v.end
	return end.Failed || (end.Ended && v.a.EndedBy == domain.EndedByExit && !v.reached) || end.fatal != nil
}

// killedBySignal notes a main process killed by a signal that no line
// explains, with its finding.
func (v *verdict) killedBySignal() {
	a := v.a
	status := "?"
	if a.ExitStatus != nil {
		status = strconv.Itoa(*a.ExitStatus)
	}
	a.Note = "The engine's main process was killed by signal " + status + " (" + a.ExitCode + ") in phase " + string(a.Phase) +
		" and no line names a cause: 11 (SEGV) and 6 (ABRT) are crashes in native code, 9 (KILL) usually the OOM killer, 4 (ILL) a build for other CPU instructions."
	v.lifecycle()
	a.Findings = append(a.Findings, domain.Finding{ID: string(domain.VerdictEngineDied), Rule: a.Rule,
		Severity: domain.SeverityError, MessageID: MessageIDEngineDied, Phase: a.Phase, Time: v.failedAt,
		Note: a.Note, Evidence: a.Evidence})
}

// startTimedOut notes a unit whose start systemd timed out
// (TimeoutStartSec) with no rule naming a cause: the spec counts the
// verdict among the findings, and the note says the phase it reached.
func (v *verdict) startTimedOut() {
	a := v.a
	took := ""
	if !v.failedAt.IsZero() && !a.StartedAt.IsZero() {
		took = " after " + v.failedAt.Sub(a.StartedAt).Round(time.Second).String()
	}
	a.Note = "systemd ended the unit because its start timed out (TimeoutStartSec)" + took + ", in phase " + string(a.Phase) +
		", before the engine reported ready: compare with the phase times of the unit's earlier boots, and raise TimeoutStartSec if the boot is only slow (cold compile cache, large weights)."
	v.lifecycle()
	a.Findings = append(a.Findings, domain.Finding{ID: string(domain.VerdictTimeout), Rule: a.Rule,
		Severity: domain.SeverityError, MessageID: MessageIDTimeout, Phase: a.Phase, Time: v.failedAt,
		Note: a.Note, Evidence: a.Evidence})
}

// unknownFailure notes a failure no rule explains: its decisive fatal
// event (unknown, else the fatal end), the last error lines, the
// lifecycle records, a fingerprint and the finding.
func (v *verdict) unknownFailure(unknown *Fatal) {
	a, j := v.a, v.j
	var decisive []domain.Evidence
	for _, f := range []*Fatal{unknown, v.end.fatal} {
		if f != nil {
			decisive = append(decisive, f.Evidence)
			v.add(fatalRole(f.Kind), f.Evidence)
			break
		}
	}
	v.add(domain.RoleLastError, j.lastErrors...)
	v.lifecycle()
	a.Fingerprint = fingerprint(append(append([]domain.Evidence(nil), j.lastErrors...), decisive...))
	a.Note = unknownNote(a, v.end.Result, append(append([]domain.Evidence(nil), j.lastErrors...), decisive...))
	a.Rule = ruleUnknownFailure
	a.Findings = append(a.Findings, domain.Finding{ID: string(domain.VerdictUnknownFailure), Rule: a.Rule,
		Severity: domain.SeverityError, MessageID: MessageIDUnknownFailure, Phase: a.Phase, Time: v.failedAt,
		Note: a.Note, Evidence: a.Evidence})
}

// noteData is what the note of p's rule is rendered from.
func (v *verdict) noteData(p *pending) rules.NoteData {
	var flags map[string]string
	if v.j.eng != nil {
		flags = v.j.eng.Flags
	}
	a := v.a
	return rules.NoteData{Rule: p.rule.ID, Verdict: string(a.Verdict), Phase: string(p.phase), Engine: a.Engine,
		Unit: a.Unit, Captures: p.captures, Shape: a.Shape, Line: p.line, Flags: flags}
}

// rootCause notes the root cause the verdict stands on (best), with its
// finding and evidence, and the other standing roots as candidates.
func (v *verdict) rootCause(best *pending, others []*pending) {
	a := v.a
	note := best.rule.RenderNote(v.noteData(best))
	if !strings.Contains(note, best.line) {
		note += " Decisive line: \"" + best.line + "\""
	}
	a.Note = note
	f := finding(best, note)
	f.Phase = a.Phase
	a.Findings = append(a.Findings, f)
	v.add(domain.RoleFinding, best.evidence...)
	// Root causes that lost support the verdict (llama.cpp prints its
	// allocation error, then "error loading model").
	v.add(domain.RoleCandidate, v.j.also...)
	n := 0
	for _, o := range others {
		for _, ev := range o.evidence {
			if n < 2*maxEvidencePerFinding {
				v.add(domain.RoleCandidate, ev)
				n++
			}
		}
	}
}

// sideFindings adds the side findings, in the order they were first seen.
func (v *verdict) sideFindings() {
	for _, id := range v.j.sideOrder {
		p := v.j.side[id]
		note := p.rule.RenderNote(v.noteData(p))
		if lineNoted[id] {
			note = p.line
		}
		f := finding(p, note)
		v.a.Findings = append(v.a.Findings, f)
		v.add(domain.RoleFinding, p.evidence...)
	}
}

// endRules adds the findings of the end rules, which see the attempt as
// it ended (or stands, while running).
func (v *verdict) endRules() {
	a, j, end := v.a, v.j, &v.end
	env := &rules.EndEnv{Verdict: string(a.Verdict), Phase: string(a.Phase), Failed: a.Verdict.IsFailure(),
		Engine: a.Engine, Unit: a.Unit, EndedBy: a.EndedBy, ExitCode: a.ExitCode, ReachedReady: v.reached,
		SecondsReadyToFailure: -1, SurvivableSeconds: j.opt.SurvivableWindow.Seconds(), Findings: a.FindingIDs(), Shape: a.Shape}
	if a.ExitStatus != nil {
		env.ExitStatus, env.HasExit = *a.ExitStatus, true
	}
	if a.RestartCounterAfter != nil {
		env.RestartCounterAfter = *a.RestartCounterAfter
	}
	if v.reached && !v.failedAt.IsZero() && a.Verdict.IsFailure() {
		env.SecondsReadyToFailure = v.failedAt.Sub(a.ReadyAt).Seconds()
	}
	for _, r := range j.set.MatchEnd(env) {
		if a.HasFinding(r.FindingID()) {
			continue
		}
		p := &pending{rule: r, phase: a.Phase, time: a.EndedAt, captures: rules.EndCaptures(env)}
		if end.Line != nil {
			p.evidence = []domain.Evidence{*end.Line}
			p.line = end.Line.Message
			p.time = end.Line.Time
		}
		a.Findings = append(a.Findings, finding(p, r.RenderNote(v.noteData(p))))
		v.add(domain.RoleFinding|domain.RoleEnd, p.evidence...)
		env.Findings = append(env.Findings, r.FindingID())
	}
}

// fatalRole is the evidence role of the decisive line of an unknown
// failure that stands on a fatal event of kind k.
func fatalRole(k FatalKind) domain.EvidenceRole {
	switch k {
	case FatalException:
		return domain.RoleException
	case FatalDeath:
		return domain.RoleDeath
	}
	return domain.RoleLastError // an error line that ends pasted text
}

// milestones returns the lines that moved the attempt into the given phases.
func milestones(tl []domain.PhaseMark, phases ...domain.Phase) []domain.Evidence {
	var out []domain.Evidence
	for _, m := range tl {
		for _, p := range phases {
			if m.Phase == p && m.Message != "" {
				out = append(out, domain.Evidence{Time: m.Time, Cursor: m.Cursor, Message: m.Message})
			}
		}
	}
	return out
}

func finding(p *pending, note string) domain.Finding {
	return domain.Finding{ID: p.rule.FindingID(), Rule: p.rule.ID, Severity: p.rule.Severity,
		MessageID: p.rule.MessageID, Phase: p.phase, Time: p.time, Note: note, Captures: p.captures,
		Match: p.match, Evidence: p.evidence}
}

// maxMatchText caps Finding.Match: a pattern with .* can match most of a
// 16 KiB line, and the UI only needs enough to find and mark it.
const maxMatchText = 1024

// matchText is line[at:end], cut to maxMatchText on a rune boundary.
func matchText(line string, at, end int) string {
	if at < 0 || end > len(line) || at >= end {
		return ""
	}
	if end-at > maxMatchText {
		end = at + maxMatchText
		for end > at && !utf8.RuneStart(line[end]) {
			end--
		}
	}
	return line[at:end]
}

// dedupeEvidence returns the lines of in once each (by cursor and
// message), in time order, each with the union of the roles its
// occurrences have (roles[i] is in[i]'s). The result is a new slice: the
// findings' evidence, which may share in's, gets no role.
func dedupeEvidence(in []domain.Evidence, roles []domain.EvidenceRole) []domain.Evidence {
	type line struct{ cursor, message string }
	at := map[line]int{} // a pair, not their concatenation: messages run to 8 KiB
	out := in[:0:0]
	for i, e := range in {
		k := line{e.Cursor, e.Message}
		if n, ok := at[k]; ok {
			out[n].Role |= roles[i]
			continue
		}
		at[k] = len(out)
		e.Role = roles[i]
		out = append(out, e)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	return out
}

// snippet is the part of a long line around offset at (a reassembled
// 16 KiB traceback line holds its decisive words in the middle).
func snippet(line string, at int) string {
	const before, after = 60, 240
	if len(line) <= before+after {
		return line
	}
	start, end := at-before, at+after
	if start < 0 {
		start, end = 0, before+after
	}
	if end > len(line) {
		start, end = len(line)-before-after, len(line)
	}
	for start > 0 && !utf8.RuneStart(line[start]) {
		start--
	}
	for end < len(line) && !utf8.RuneStart(line[end]) {
		end++
	}
	out := line[start:end]
	if start > 0 {
		out = "…" + out
	}
	if end < len(line) {
		out += "…"
	}
	return out
}
