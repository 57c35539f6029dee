package judge

import (
	"strings"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/rules"
)

// lineJudged counts and judges one line, prepared as l (stripped: without
// the engine's process prefix already).
func (j *Judge) lineJudged(ev domain.Evidence, l *rules.Line, stripped bool) {
	a := &j.a
	a.Lines++
	if ev.Time.After(a.LastLineAt) {
		a.LastLineAt = ev.Time
	}
	for _, p := range j.ctxFill {
		if p.ctxLeft > 0 {
			p.context = append(p.context, ev)
			p.ctxLeft--
		}
	}
	if n := len(j.ctxFill); n > 0 && j.ctxFill[n-1].ctxLeft == 0 {
		j.ctxFill = j.ctxFill[:0]
	}
	j.ring.push(ev, j.opt.ContextBefore)
	j.judgeLine(ev, l, stripped)
}

// judgeLine moves the phase, updates the shape and runs the rules on one
// line (phase markers first: a line can be both the phase's marker and the
// decisive line). It strips l in place unless it is stripped already.
func (j *Judge) judgeLine(ev domain.Evidence, l *rules.Line, stripped bool) {
	if !stripped {
		j.eng.StripLine(l)
	}
	if inside, first := j.usage.step(l.Text); inside {
		j.usageLine(ev, l, first)
		return
	}
	errorLike := l.LooksLikeError()
	if errorLike {
		j.lastErrors = append(j.lastErrors, ev)
		if len(j.lastErrors) > 5 {
			j.lastErrors = j.lastErrors[1:]
		}
	}
	j.phaseLine(ev, l)
	if j.eng.IsReadyEvidenceLine(l) {
		j.addReadyEvidence(ev)
	}
	j.eng.UpdateShapeLine(l, j.a.Shape)
	info := j.fatalLine(ev, l)
	j.ruleLine(ev, l, errorLike, info)
}

// phaseLine moves the phase when l is one of the engine's phase markers.
func (j *Judge) phaseLine(ev domain.Evidence, l *rules.Line) {
	a := &j.a
	current := a.Phase
	if current == domain.PhaseReady {
		current = "" // a ready marker line is readiness evidence too
	}
	p, fwd, ok := j.eng.PhaseLineIn(l, !a.ReadyAt.IsZero(), current)
	if !ok {
		return
	}
	if p == domain.PhaseReady {
		j.addReadyEvidence(ev)
	}
	if !fwd {
		m := ev
		j.lastMarker = &m
	}
	before := a.Phase.Rank()
	if j.setPhase(p, fwd, ev) {
		if fwd {
			j.reconsider()
		} else if p.Rank() > before && p.Rank() <= domain.PhaseReady.Rank() {
			j.addStep(a.Lines, p)
		}
	}
}

// fatalLine reads l into the traceback reader and the death lines, and
// returns what the traceback reader made of it.
func (j *Judge) fatalLine(ev domain.Evidence, l *rules.Line) lineInfo {
	a := &j.a
	reached := !a.ReadyAt.IsZero()
	info := j.exc.line(l.Text, l.MayMatter(), a.Lines, ev, a.Phase, reached)
	// Frames printed after an exception (vLLM logs the message first, a
	// chained traceback follows) tell where it happened.
	for i := range j.exc.fatals {
		if f := &j.exc.fatals[i]; f.Start == info.event && f.Line < a.Lines && a.Phase.Rank() > f.Phase.Rank() &&
			a.Phase.Rank() < domain.PhaseReady.Rank() {
			f.Phase = a.Phase
		}
	}
	if exit, ok := j.set.FatalLine(l); ok {
		info.death = true
		j.exc.addDeath(a.Lines, ev, a.Phase, reached, exit)
		if exit >= 0 {
			j.exit = exit
		}
	}
	return info
}

// ruleLine runs the line rules on l (errorLike: l.LooksLikeError; info:
// what the traceback reader made of it), and, when l is a frame's source
// line that raises, the root-cause rules on the exception it raises.
func (j *Judge) ruleLine(ev domain.Evidence, l *rules.Line, errorLike bool, info lineInfo) {
	a := &j.a
	text := l.Text
	env := &j.env
	*env = rules.LineEnv{Line: text, Phase: string(a.Phase), Engine: a.Engine, Unit: a.Unit,
		ReachedReady: !a.ReadyAt.IsZero(), Shape: a.Shape, Time: ev.Time, Error: isErrorLine(text, errorLike, info)}
	if info.fatal != nil && len(info.fatal.Frames) > 0 {
		env.Frames = strings.Join(info.fatal.Frames, "\n")
	}
	for _, h := range j.match(l, env, j.seq) {
		j.hit(h, ev, text, info)
	}
	if info.raising == "" {
		return
	}
	// "raise X(" in the innermost frame: should the paste end before the
	// exception line, X is the exception. Judged now as the line "X:",
	// withdrawn if the traceback goes on to its exception line.
	cut := *env
	cut.Line = info.raising + ": (the exception line is cut)"
	cut.Error = true
	for _, h := range j.match(nil, &cut, rules.SeqState{}) {
		if h.Rule.IsRootCause() && !weakVerdict(h.Rule.Verdict) {
			j.hit(h, ev, text, info)
			if n := len(j.roots); n > 0 && j.roots[n-1].lineNo == a.Lines {
				j.roots[n-1].block = info.block
			}
		}
	}
}

// usageLine judges a line of usage text: its words are option help, not
// events, so no phase marker, shape pattern or readiness applies. The
// block's first line puts a boot that had not got past its arguments in
// `args` and is given to the rules as usage_text (the engine prints its
// usage when it rejects its command line).
func (j *Judge) usageLine(ev domain.Evidence, l *rules.Line, first bool) {
	a := &j.a
	if !first || !a.ReadyAt.IsZero() {
		return
	}
	if a.Phase.Rank() < domain.PhaseArgs.Rank() {
		j.setPhase(domain.PhaseArgs, false, ev)
	}
	env := &j.env
	*env = rules.LineEnv{Line: l.Text, Phase: string(a.Phase), Engine: a.Engine, Unit: a.Unit, Shape: a.Shape,
		Time: ev.Time, Usage: true}
	for _, h := range j.match(l, env, j.seq) {
		if h.Rule.OnUsage() {
			j.hit(h, ev, l.Text, lineInfo{})
		}
	}
}

// isErrorLine reports whether a line reports an error: an exception or
// death line, or error words (errorLike: Line.LooksLikeError) in a line
// not logged below error level (a WARNING that something failed is not
// one). Without the exception and death lines it is rules.IsErrorText,
// the log viewer's "next error": one list of error words, one of levels.
func isErrorLine(text string, errorLike bool, info lineInfo) bool {
	if info.fatal != nil || info.death {
		return true
	}
	if !errorLike {
		return false
	}
	level := info.level
	if !info.parsed {
		_, _, level = rules.Envelope(text)
	}
	return rules.ErrorLevel(level)
}

// match runs the line rules (or, in a rule test, the one rule) on env.Line
// prepared as l (nil: not prepared) with sequence state seq.
func (j *Judge) match(l *rules.Line, env *rules.LineEnv, seq rules.SeqState) []rules.Hit {
	if r := j.opt.Only; r != nil {
		if h, ok := r.Step(env, seq); ok {
			return []rules.Hit{h}
		}
		return nil
	}
	if l == nil {
		return j.set.MatchLine(env, seq)
	}
	if j.visitSet != j.set || j.visitEngine != env.Engine {
		j.visit, j.visitEngine, j.visitSet = j.set.LineRules(env.Engine), env.Engine, j.set
	}
	return j.visit.Match(l, env, seq)
}

// hit records a rule firing on a line of the event info tells.
func (j *Judge) hit(h rules.Hit, ev domain.Evidence, text string, info lineInfo) {
	event := info.event
	r := h.Rule
	phase := phaseFor(r, j.a.Phase)
	if !r.IsRootCause() {
		j.addSide(r, phase, h.Captures, matchText(text, h.At, h.End), ev)
		return
	}
	for _, b := range j.roots {
		if b.rule.FindingID() == r.FindingID() && !b.gone && b.block == nil {
			if len(b.evidence) < maxEvidencePerFinding {
				b.evidence = append(b.evidence, ev)
			}
			// The merged hit still names the exception it fired in
			// (unnamedException), though the root stands on an earlier line.
			if len(b.hits) == maxMergedHits {
				b.hits = b.hits[1:]
			}
			b.hits = append(b.hits, j.a.Lines)
			return
		}
	}
	if len(j.roots) >= maxRoots {
		return
	}
	evidence := []domain.Evidence{ev}
	if info.intro != nil {
		// The line that announced the traceback says what failed.
		evidence = []domain.Evidence{*info.intro, ev}
	}
	p := &pending{rule: r, phase: phase, time: ev.Time, captures: h.Captures, line: snippet(text, h.At),
		match:    matchText(text, h.At, h.End),
		evidence: evidence, text: text, lineNo: j.a.Lines, event: event, ready: !j.a.ReadyAt.IsZero(),
		context: j.ring.appendTo([]domain.Evidence{}), ctxLeft: j.opt.ContextAfter}
	j.roots = append(j.roots, p)
	j.ctxFill = append(j.ctxFill, p)
}

// addReadyEvidence keeps the latest readiness and boot-shape lines.
func (j *Judge) addReadyEvidence(ev domain.Evidence) {
	j.readyEv = append(j.readyEv, ev)
	if len(j.readyEv) > 6 {
		j.readyEv = j.readyEv[1:]
	}
}

// addSide records a side finding's line; it reports whether the finding
// changed (false: it has its maximum of evidence lines already).
func (j *Judge) addSide(r *rules.Rule, phase domain.Phase, caps map[string]string, match string, ev domain.Evidence) bool {
	id := r.FindingID()
	if p, ok := j.side[id]; ok {
		if len(p.evidence) < maxEvidencePerFinding {
			p.evidence = append(p.evidence, ev)
			return true
		}
		return false
	}
	j.side[id] = &pending{rule: r, phase: phase, time: ev.Time, captures: caps, line: ev.Message,
		match: match, evidence: []domain.Evidence{ev}}
	j.sideOrder = append(j.sideOrder, id)
	return true
}
