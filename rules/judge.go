package rules

import (
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/llmfleet/analyzer/domain"
)

// JudgeOptions tune a Judge. Zero values take the defaults.
type JudgeOptions struct {
	// SurvivableWindow is how long after ready a death still counts as
	// boot_not_survivable (default 30 min).
	SurvivableWindow time.Duration
	// ContextBefore and ContextAfter are how many lines before and after
	// the decisive line are kept for the UI (default 8 and 6).
	ContextBefore, ContextAfter int
	// Only, when set, is the one rule that judges (rule tests, like
	// `promtool test rules`); the engine profiles still apply.
	Only *Rule
}

func (o JudgeOptions) withDefaults() JudgeOptions {
	if o.SurvivableWindow == 0 {
		o.SurvivableWindow = 30 * time.Minute
	}
	if o.ContextBefore == 0 {
		o.ContextBefore = 8
	}
	if o.ContextAfter == 0 {
		o.ContextAfter = 6
	}
	return o
}

// Judge judges one boot attempt from its lines: it detects the engine,
// strips per-process prefixes, follows the phase, readiness and shape,
// reads tracebacks and death lines, runs the line rules, and finally names
// the verdict with the end rules. It is the one per-line protocol that the
// tracker, rule tests and resumed attempts share. A Judge is not safe for
// concurrent use.
type Judge struct {
	set *Set
	opt JudgeOptions

	a   domain.Attempt // the judged fields: engine, phase, timeline, ready, shape, lines, context
	eng *Engine
	seq SeqState

	best       *pending            // the root cause so far
	side       map[string]*pending // side findings by id
	sideOrder  []string
	ring       []domain.Evidence
	ctxAfter   int
	lastErrors []domain.Evidence
	early      []earlyLine       // lines kept to judge again when the engine changes
	readyEv    []domain.Evidence // readiness lines and the boot-shape lines around them
	also       []domain.Evidence // lines of root causes that lost to the verdict
	version    uint64

	scan Line    // the line being judged (reused)
	env  LineEnv // its rule environment (reused)
	// OnHit, when set, sees every rule hit with the phase it fired in.
	OnHit func(h Hit, phase domain.Phase)
}

// pending is a finding before the attempt ends (its note is rendered at
// the end, with the final shape).
type pending struct {
	rule     *Rule
	phase    domain.Phase
	time     time.Time
	captures map[string]string
	line     string
	evidence []domain.Evidence
	text     string // the decisive line as the rules saw it
	lineNo   int    // the attempt's line count at the decisive line
	event    int    // the line count where the decisive line's event (its traceback) began
}

type earlyLine struct {
	ev   domain.Evidence
	line string
}

// NewJudge returns a judge for a new attempt of engine ("" when not known
// yet: the lines will tell).
func (s *Set) NewJudge(engine string, opt JudgeOptions) *Judge {
	j := &Judge{set: s, opt: opt.withDefaults(), seq: SeqState{}, side: map[string]*pending{}}
	j.a.Phase = domain.PhaseStart
	j.a.Shape = domain.Shape{}
	if engine != "" {
		j.setEngine(engine, "")
	}
	return j
}

// SetRules swaps the rule set; findings so far stay.
func (j *Judge) SetRules(s *Set) {
	j.set = s
	if j.a.Engine != "" {
		j.eng = s.Engine(j.a.Engine)
	}
}

// Version changes whenever the judge's state does (a line was judged or a
// fact given), so a caller can skip re-judging an attempt that did not.
func (j *Judge) Version() uint64 { return j.version }

// Engine is the engine detected so far ("" when none).
func (j *Judge) Engine() string { return j.a.Engine }

// Phase is the phase the attempt is in now.
func (j *Judge) Phase() domain.Phase { return j.a.Phase }

// HasRootCause reports whether a rule has named a root cause.
func (j *Judge) HasRootCause() bool { return j.best != nil }

// ReachedReady reports whether the engine reported readiness.
func (j *Judge) ReachedReady() bool { return !j.a.ReadyAt.IsZero() }

// Start records the attempt's start time (its first phase mark).
func (j *Judge) Start(at time.Time) {
	j.a.StartedAt = at
	j.a.Timeline = []domain.PhaseMark{{Phase: domain.PhaseStart, Time: at}}
}

// SetPhase puts the attempt in phase p (rule tests; resumed attempts).
func (j *Judge) SetPhase(p domain.Phase) {
	j.a.Phase = p
	if p.Rank() >= domain.PhaseReady.Rank() && p.Rank() <= domain.PhaseServing.Rank() && j.a.ReadyAt.IsZero() {
		j.a.ReadyAt = time.Unix(0, 1)
	}
	j.version++
}

// SetShape sets a shape key as if a line had reported it (rule tests).
func (j *Judge) SetShape(key string, v any) { j.a.Shape.Set(key, normalizeValue(key, v)); j.version++ }

// earlyLines caps the lines kept to be judged again once the engine is
// known (lines before the first identifying one).
const earlyLines = 300

// Line judges one line of the attempt's output: text is the line with
// colour remnants and container prefixes removed, ev the line's time,
// cursor and trimmed text for evidence.
func (j *Judge) Line(text string, ev domain.Evidence) {
	j.version++
	a := &j.a
	a.Lines++
	if j.ctxAfter > 0 {
		a.Context = append(a.Context, ev)
		j.ctxAfter--
	}
	j.ring = append(j.ring, ev)
	if len(j.ring) > j.opt.ContextBefore {
		j.ring = j.ring[1:]
	}
	// Detect until the engine and its version are known (and, for an engine
	// a wrapper may embed, for as long as the wrapper may still show).
	detect := a.Engine == "" || a.EngineVersion == "" || j.eng.HasChildren()
	l := &j.scan
	j.set.Prepare(l, text)
	if detect {
		if name, version, ok := j.set.DetectLine(l); ok {
			switch {
			case a.Engine == "":
				j.setEngine(name, version)
				// Judge the lines seen before the engine was known again, now
				// with its phases and shape.
				early := j.early
				j.early = nil
				j.best, j.also = nil, nil
				j.seq = SeqState{} // the early lines are counted again below
				for _, el := range early {
					j.judgeLine(el.ev, j.set.NewLine(el.line))
				}
			case name != a.Engine && j.eng.Parent() == "" && j.set.Engine(name).Parent() == a.Engine:
				// A wrapper shows itself after the engine it embeds (Ollama
				// after llama-server's first lines).
				j.setEngine(name, version)
			case a.EngineVersion == "" && name == a.Engine:
				a.EngineVersion = version
			}
		}
	}
	if a.Engine == "" && len(j.early) < earlyLines {
		j.early = append(j.early, earlyLine{ev, text})
	}
	j.judgeLine(ev, l)
}

func (j *Judge) setEngine(name, version string) {
	j.a.Engine = name
	if version != "" {
		j.a.EngineVersion = version
	}
	j.eng = j.set.Engine(name)
}

// judgeLine moves the phase, updates the shape and runs the rules on one
// line (phase markers first: a line can be both the phase's marker and the
// decisive line). It strips l in place.
func (j *Judge) judgeLine(ev domain.Evidence, l *Line) {
	a := &j.a
	j.eng.StripLine(l)
	text := l.Text
	if looksLikeError(text) {
		j.lastErrors = append(j.lastErrors, ev)
		if len(j.lastErrors) > 5 {
			j.lastErrors = j.lastErrors[1:]
		}
	}
	if p, fwd, ok := j.eng.PhaseLine(l, !a.ReadyAt.IsZero()); ok {
		if p == domain.PhaseReady {
			j.addReadyEvidence(ev)
		}
		if j.setPhase(p, fwd, ev) && fwd {
			j.reconsider()
		}
	}
	if j.eng.IsReadyEvidenceLine(l) {
		j.addReadyEvidence(ev)
	}
	j.eng.UpdateShapeLine(l, a.Shape)
	env := &j.env
	*env = LineEnv{Line: text, Phase: string(a.Phase), Engine: a.Engine, Unit: a.Unit,
		ReachedReady: !a.ReadyAt.IsZero(), Shape: a.Shape, Time: ev.Time}
	for _, h := range j.match(l, env, j.seq) {
		j.hit(h, ev, text)
	}
}

// match runs the line rules (or, in a rule test, the one rule) on env.Line
// prepared as l (nil: not prepared) with sequence state seq.
func (j *Judge) match(l *Line, env *LineEnv, seq SeqState) []Hit {
	if r := j.opt.Only; r != nil {
		if h, ok := r.step(nil, env, seq, &matchCache{}); ok {
			return []Hit{h}
		}
		return nil
	}
	if l == nil {
		return j.set.MatchLine(env, seq)
	}
	return j.set.MatchPrepared(l, env, seq)
}

// setPhase moves the attempt into p; it reports whether the phase changed.
func (j *Judge) setPhase(p domain.Phase, forwardOnly bool, ev domain.Evidence) bool {
	a := &j.a
	at := ev.Time
	if p == a.Phase || (forwardOnly && p.Rank() <= a.Phase.Rank()) {
		return false
	}
	a.Phase = p
	a.Timeline = append(a.Timeline, domain.PhaseMark{Phase: p, Time: at, Cursor: ev.Cursor, Message: ev.Message})
	if b := j.best; b != nil && b.rule.Provisional && p.Rank() > b.phase.Rank() {
		// The engine moved on: the stall the verdict named is over.
		j.best, a.Context = nil, nil
	}
	if p == domain.PhaseReady && a.ReadyAt.IsZero() {
		a.ReadyAt = at
		if at.IsZero() {
			a.ReadyAt = time.Unix(0, 1) // plain text without times: still "reached"
		}
	}
	return true
}

// reconsiderWindow is how many lines after the decisive line a traceback
// frame may still tell where the engine was (vLLM logs the exception first
// and its traceback after it).
const reconsiderWindow = 400

// reconsider re-judges the decisive line when a traceback frame arriving
// shortly after it moved the phase forward (e.g. "in capture_model" below a
// bare OOM line): the phase-dependent rules then pick the right verdict. The
// rule that fired keeps the verdict if it still holds in the new phase.
func (j *Judge) reconsider() {
	b := j.best
	a := &j.a
	if b == nil || a.Lines-b.lineNo > reconsiderWindow || a.Phase.Rank() <= b.phase.Rank() {
		return
	}
	env := &LineEnv{Line: b.text, Phase: string(a.Phase), Engine: a.Engine, Unit: a.Unit,
		ReachedReady: !a.ReadyAt.IsZero(), Shape: a.Shape}
	var pick *Hit
	for _, h := range j.match(nil, env, SeqState{}) {
		h := h
		if !h.Rule.IsRootCause() {
			continue
		}
		if h.Rule == b.rule {
			pick = &h
			break
		}
		if pick == nil || h.Rule.Priority > pick.Rule.Priority {
			pick = &h
		}
	}
	if pick == nil {
		return
	}
	b.rule, b.captures = pick.Rule, pick.Captures
	b.phase = phaseFor(pick.Rule, a.Phase)
}

// phaseFor is the phase a rule's finding is in when it fires in phase cur.
func phaseFor(r *Rule, cur domain.Phase) domain.Phase {
	switch {
	case r.Phase != "":
		return r.Phase
	case r.Floor != "" && r.Floor.Rank() > cur.Rank():
		return r.Floor
	}
	return cur
}

const maxEvidencePerFinding = 4

// hit records a rule firing.
func (j *Judge) hit(h Hit, ev domain.Evidence, text string) {
	r := h.Rule
	phase := phaseFor(r, j.a.Phase)
	if j.OnHit != nil {
		j.OnHit(h, phase)
	}
	if !r.IsRootCause() {
		j.addSide(r, phase, h.Captures, ev)
		return
	}
	if b := j.best; b != nil {
		if b.rule.FindingID() == r.FindingID() {
			if len(b.evidence) < maxEvidencePerFinding {
				b.evidence = append(b.evidence, ev)
			}
			return
		}
		if r.Priority <= b.rule.Priority {
			j.addAlso(ev)
			return
		}
		j.addAlso(b.evidence...)
	}
	j.best = &pending{rule: r, phase: phase, time: ev.Time, captures: h.Captures, line: snippet(text, h.At),
		evidence: []domain.Evidence{ev}, text: text, lineNo: j.a.Lines}
	j.a.Context = append([]domain.Evidence{}, j.ring...)
	j.ctxAfter = j.opt.ContextAfter
}

// addReadyEvidence keeps the latest readiness and boot-shape lines.
func (j *Judge) addReadyEvidence(ev domain.Evidence) {
	j.readyEv = append(j.readyEv, ev)
	if len(j.readyEv) > 6 {
		j.readyEv = j.readyEv[1:]
	}
}

// addAlso keeps lines of root causes that did not win: they support the
// verdict (llama.cpp prints its allocation error, then "error loading model").
func (j *Judge) addAlso(evs ...domain.Evidence) {
	for _, ev := range evs {
		if len(j.also) < 2*maxEvidencePerFinding {
			j.also = append(j.also, ev)
		}
	}
}

func (j *Judge) addSide(r *Rule, phase domain.Phase, caps map[string]string, ev domain.Evidence) {
	id := r.FindingID()
	if p, ok := j.side[id]; ok {
		if len(p.evidence) < maxEvidencePerFinding {
			p.evidence = append(p.evidence, ev)
		}
		return
	}
	j.side[id] = &pending{rule: r, phase: phase, time: ev.Time, captures: caps, line: ev.Message,
		evidence: []domain.Evidence{ev}}
	j.sideOrder = append(j.sideOrder, id)
}

// Finding records a finding raised outside the rules (log loss noticed by
// ingest or the journal follower), with the set's rule of that id when it
// has one.
func (j *Judge) Finding(id string, ev domain.Evidence) {
	j.version++
	j.addSide(j.set.findingRule(id), j.a.Phase, nil, ev)
}

// findingRule returns the first rule that sets finding id, or a bare rule.
func (s *Set) findingRule(id string) *Rule {
	for _, r := range s.all {
		if r.FindingID() == id {
			return r
		}
	}
	return &Rule{ID: "analyzer." + id, Finding: id, Severity: domain.SeverityWarning, MessageID: MessageIDLogLoss}
}

// MESSAGE_IDs of the findings the judge raises itself (README, "Stable
// MESSAGE_IDs").
const (
	MessageIDUnknownFailure = "c4deb1c694538b4d8d75dce263d1534e"
	MessageIDLogLoss        = "d7bd97a9522bf7b670303457da23dd0c"
)

// End is what the tracker knows of how an attempt ended, besides the
// attempt's own fields (exit status, ended_by, restart counter).
type End struct {
	// Ended: the attempt is over (its unit exited or was stopped, or the
	// text ended).
	Ended bool
	// Text: a plain-text attempt (no journald metadata).
	Text bool
	// Failed: the unit failed (non-zero exit, failed result).
	Failed bool
	// Result is systemd's UNIT_RESULT ("timeout", "exit-code", ...).
	Result string
	// Line is the lifecycle record that ended the attempt.
	Line *domain.Evidence
}

// Judge returns the attempt base (identity and lifecycle fields, from the
// tracker) with the verdict, phase, findings, notes, evidence, engine,
// shape and timeline as judged from its lines so far. It does not change
// the judge, so it can run repeatedly.
func (j *Judge) Judge(base *domain.Attempt, end End) *domain.Attempt {
	a := *base
	a.Engine, a.EngineVersion = j.a.Engine, j.a.EngineVersion
	a.Phase, a.ReadyAt, a.Lines = j.a.Phase, j.a.ReadyAt, j.a.Lines
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
	reached := !a.ReadyAt.IsZero()
	var failedAt time.Time
	switch {
	case j.best != nil:
		a.Verdict = j.best.rule.Verdict
		a.Phase = j.best.phase
		a.Rule = j.best.rule.ID
		failedAt = j.best.time
	case end.Result == "timeout":
		a.Verdict = domain.VerdictTimeout
	case end.Failed || (end.Ended && a.EndedBy == domain.EndedByExit && !reached):
		a.Verdict = domain.VerdictUnknownFailure
		if end.Line != nil {
			failedAt = end.Line.Time
		}
	case reached || (end.Text && a.Phase == domain.PhaseWarmup):
		// A plain-text excerpt that ends after the engine's last boot step
		// (warmup) with no failure booted; its readiness line is often cut.
		a.Verdict = domain.VerdictReady
		a.Phase = domain.PhaseReady
		a.Evidence = append(a.Evidence, milestones(j.a.Timeline, domain.PhaseWarmup, domain.PhaseReady)...)
		a.Evidence = append(a.Evidence, j.readyEv...)
	case end.Ended && a.EndedBy == domain.EndedByStop:
		a.Verdict = domain.VerdictStopped
	default:
		a.Verdict = domain.VerdictRunning
		// Where the boot has got to: its boot-shape lines so far (KV cache
		// size, concurrency). Stored, they also let a later replay that
		// continues the attempt quote them once it is ready.
		a.Evidence = append(a.Evidence, j.readyEv...)
	}
	if a.Verdict == domain.VerdictUnknownFailure {
		a.Evidence = append(a.Evidence, j.lastErrors...)
		if end.Line != nil {
			a.Evidence = append(a.Evidence, *end.Line)
		}
		a.Fingerprint = fingerprint(j.lastErrors)
		a.Note = unknownNote(&a, end.Result, j.lastErrors)
		a.Rule = "analyzer.unknown_failure"
		a.Findings = append(a.Findings, domain.Finding{ID: string(domain.VerdictUnknownFailure), Rule: a.Rule,
			Severity: domain.SeverityError, MessageID: MessageIDUnknownFailure, Phase: a.Phase, Time: failedAt,
			Note: a.Note, Evidence: a.Evidence})
	}
	data := func(p *pending) NoteData {
		return NoteData{Rule: p.rule.ID, Verdict: string(a.Verdict), Phase: string(p.phase), Engine: a.Engine,
			Unit: a.Unit, Captures: p.captures, Shape: a.Shape, Line: p.line}
	}
	if b := j.best; b != nil {
		note := b.rule.RenderNote(data(b))
		if !strings.Contains(note, b.line) {
			note += " Decisive line: \"" + b.line + "\""
		}
		a.Note = note
		a.Findings = append(a.Findings, finding(b, note))
		a.Evidence = append(a.Evidence, b.evidence...)
		a.Evidence = append(a.Evidence, j.also...)
	}
	for _, id := range j.sideOrder {
		p := j.side[id]
		f := finding(p, p.rule.RenderNote(data(p)))
		a.Findings = append(a.Findings, f)
		a.Evidence = append(a.Evidence, p.evidence...)
	}
	// End rules see the attempt as it ended (or stands, while running).
	env := &EndEnv{Verdict: string(a.Verdict), Phase: string(a.Phase), Failed: a.Verdict.IsFailure(),
		Engine: a.Engine, Unit: a.Unit, EndedBy: a.EndedBy, ExitCode: a.ExitCode, ReachedReady: reached,
		SecondsReadyToFailure: -1, SurvivableSeconds: j.opt.SurvivableWindow.Seconds(), Findings: a.FindingIDs(), Shape: a.Shape}
	if a.ExitStatus != nil {
		env.ExitStatus, env.HasExit = *a.ExitStatus, true
	}
	if a.RestartCounterAfter != nil {
		env.RestartCounterAfter = *a.RestartCounterAfter
	}
	if reached && !failedAt.IsZero() && a.Verdict.IsFailure() {
		env.SecondsReadyToFailure = failedAt.Sub(a.ReadyAt).Seconds()
	}
	for _, r := range j.set.MatchEnd(env) {
		if a.HasFinding(r.FindingID()) {
			continue
		}
		p := &pending{rule: r, phase: a.Phase, time: a.EndedAt, captures: EndCaptures(env)}
		if end.Line != nil {
			p.evidence = []domain.Evidence{*end.Line}
			p.line = end.Line.Message
			p.time = end.Line.Time
		}
		a.Findings = append(a.Findings, finding(p, r.RenderNote(data(p))))
		a.Evidence = append(a.Evidence, p.evidence...)
		env.Findings = append(env.Findings, r.FindingID())
	}
	a.Evidence = dedupeEvidence(a.Evidence)
	if !a.ReadyAt.IsZero() && a.ReadyAt.Equal(time.Unix(0, 1)) {
		a.ReadyAt = time.Time{}
	}
	return &a
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
		Evidence: p.evidence}
}

func dedupeEvidence(in []domain.Evidence) []domain.Evidence {
	seen := map[string]bool{}
	out := in[:0:0]
	for _, e := range in {
		k := e.Cursor + "\x00" + e.Message
		if seen[k] {
			continue
		}
		seen[k] = true
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

// Restore takes up stored attempt a, which an earlier run left open: its
// engine, phase (the one it last entered), timeline, readiness, shape,
// context, findings and evidence. What that run held only in memory starts
// empty: sequence and count progress, the context ring, lines before the
// engine was known. End rules' findings are judged again at the end.
func (j *Judge) Restore(a *domain.Attempt) {
	j.version++
	j.setEngine(a.Engine, a.EngineVersion)
	if a.Engine == "" {
		j.eng = nil
	}
	j.a.StartedAt, j.a.ReadyAt, j.a.Lines = a.StartedAt, a.ReadyAt, a.Lines
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
	cited := map[string]bool{}
	for _, f := range a.Findings {
		r := j.set.ruleByID(f.Rule)
		if r == nil || r.End {
			continue // unknown now, or an end rule: judged again at the end
		}
		p := &pending{rule: r, phase: f.Phase, time: f.Time, captures: f.Captures,
			evidence: append([]domain.Evidence(nil), f.Evidence...), lineNo: -reconsiderWindow - 1}
		if len(f.Evidence) > 0 {
			// The decisive line as the rules saw it, cut around the match.
			p.text = j.eng.Strip(f.Evidence[0].Message)
			p.line = snippet(p.text, max(r.MatchAt(p.text), 0))
		}
		for _, e := range f.Evidence {
			cited[e.Cursor+"\x00"+e.Message] = true
		}
		if r.IsRootCause() {
			if j.best == nil {
				j.best = p
			}
			continue
		}
		if _, ok := j.side[r.FindingID()]; !ok {
			j.side[r.FindingID()] = p
			j.sideOrder = append(j.sideOrder, r.FindingID())
		}
	}
	// The other evidence lines: the readiness and boot-shape lines of a
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

// ruleByID returns the rule with that id, or nil.
func (s *Set) ruleByID(id string) *Rule {
	for _, r := range s.all {
		if r.ID == id {
			return r
		}
	}
	return nil
}
