package judge

import (
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/rules"
)

// Options tune a Judge. Zero values take the defaults.
type Options struct {
	// SurvivableWindow is how long after ready a death still counts as
	// boot_not_survivable (default 30 min).
	SurvivableWindow time.Duration
	// ContextBefore and ContextAfter are how many lines before and after
	// the decisive line are kept for the UI (default 8 and 6).
	ContextBefore, ContextAfter int
	// Only, when set, is the one rule that judges (rule tests, like
	// `promtool test rules`); the engine profiles still apply.
	Only *rules.Rule
	// KeepLog makes the tracker keep each attempt's own lines (its first
	// domain.LogHead and last domain.LogTail) in Attempt.Log for the
	// store; explain, which stores nothing, leaves it off.
	KeepLog bool
	// Preset, when set, is the state every new attempt starts in (rule
	// tests: the test's engine, phase and shape), as if its lines had
	// said so.
	Preset *Preset
}

// Preset is the state a judge starts in before the attempt's first line
// (Options.Preset): a rule test's engine, phase and shape.
type Preset struct {
	// Engine, when set, is the engine (given, not detected; the lines
	// cannot change it but to a wrapper of it).
	Engine string
	// Phase, when set, is the phase (SetPhase).
	Phase domain.Phase
	// Shape keys are set as if a line had reported them (SetShape).
	Shape map[string]any
}

func (o Options) withDefaults() Options {
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
	set *rules.Set
	opt Options

	a   domain.Attempt // the judged fields: engine, phase, timeline, ready, shape, lines, context
	eng *rules.Engine
	seq rules.SeqState

	roots      []*pending          // root causes the rules named, in firing order
	side       map[string]*pending // side findings by id
	sideOrder  []string
	external   []domain.Evidence // findings given by Finding, by id in externalID
	externalID []string
	ring       evidenceRing // the lines before this one, for a finding's context
	ctxFill    []*pending   // roots whose context still takes the lines after them
	lastErrors []domain.Evidence
	early      []earlyLine       // lines kept to judge again when the engine changes
	earlyBytes int               // their size
	locked     bool              // the early lines overflowed: the engine no longer changes
	votes      map[string]vote   // evidence per engine
	readyEv    []domain.Evidence // readiness lines and the boot-shape lines around them
	exc        excReader         // tracebacks and death lines
	also       []domain.Evidence // restored: lines of root causes that lost to the verdict
	steps      []step            // forward boot-phase steps, in order
	exit       int               // exit status a line stated (-1: none)
	usage      usageText         // inside an argument parser's usage text
	lastMarker *domain.Evidence  // the last phase-marker line: where a boot in progress got to
	version    uint64

	scan rules.Line    // the line being judged (reused)
	env  rules.LineEnv // its rule environment (reused)
	// visit is set's line rules of visitEngine: looked up once per engine
	// rather than per line.
	visit       *rules.LineRules
	visitEngine string
	visitSet    *rules.Set
}

// pending is a finding before the attempt ends (its note is rendered at
// the end, with the final shape).
type pending struct {
	rule     *rules.Rule
	phase    domain.Phase
	time     time.Time
	captures map[string]string
	line     string
	match    string // the rule's match in the decisive line (Finding.Match)
	evidence []domain.Evidence
	text     string // the decisive line as the rules saw it
	lineNo   int    // the attempt's line count at the decisive line
	event    int    // the line count where the decisive line's event (its traceback) began
	ready    bool   // the engine had reported readiness
	context  []domain.Evidence
	ctxLeft  int  // lines after it still to add to context
	gone     bool // withdrawn: the engine made progress after it
	// block, for a cause read from a "raise X(" source line, is its
	// traceback: the cause stands only while that traceback stays cut.
	block *excState
}

type earlyLine struct {
	ev   domain.Evidence
	line string
}

// New returns a judge for a new attempt of engine ("" when not known yet:
// the lines will tell), judged by rule set s.
func New(s *rules.Set, engine string, opt Options) *Judge {
	j := &Judge{set: s, opt: opt.withDefaults(), seq: rules.SeqState{}, side: map[string]*pending{}, exit: -1,
		eng: s.Fallback(), votes: map[string]vote{}}
	j.a.Phase = domain.PhaseStart
	j.a.Shape = domain.Shape{}
	p := j.opt.Preset
	if engine == "" && p != nil {
		engine = p.Engine
	}
	if engine != "" {
		j.setEngine(engine, "")
		j.votes[engine] = vote{max: 1 << 20} // given, not detected
		j.locked = true
	}
	if p != nil {
		if p.Phase != "" {
			j.SetPhase(p.Phase)
		}
		for k, v := range p.Shape {
			j.SetShape(k, v)
		}
	}
	return j
}

// SetRules swaps the rule set; findings so far stay. It counts as a change
// (Version): notes, end rules and shape defaults come from the set.
func (j *Judge) SetRules(s *rules.Set) {
	j.version++
	j.set = s
	j.eng = s.Fallback()
	if j.a.Engine != "" {
		j.eng = s.Engine(j.a.Engine)
	}
}

// Version changes whenever the judge's state does (a line was judged, a
// fact or finding given, the rule set swapped), so a caller can skip
// re-judging or re-saving an attempt that did not: Judge with the same end
// gives the same attempt while Version stands. It only increases.
func (j *Judge) Version() uint64 { return j.version }

// Engine is the engine detected so far ("" when none).
func (j *Judge) Engine() string { return j.a.Engine }

// Phase is the phase the attempt is in now.
func (j *Judge) Phase() domain.Phase { return j.a.Phase }

// HasRootCause reports whether a rule has named a root cause that still
// stands.
func (j *Judge) HasRootCause() bool {
	for _, r := range j.roots {
		if !j.withdrawn(r) {
			return true
		}
	}
	return false
}

// ReachedReady reports whether the engine reported readiness.
func (j *Judge) ReachedReady() bool { return !j.a.ReadyAt.IsZero() }

// Start records the attempt's start time (its first phase mark).
func (j *Judge) Start(at time.Time) {
	j.version++
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
func (j *Judge) SetShape(key string, v any) {
	j.a.Shape.Set(key, rules.ShapeValue(key, v))
	j.version++
}

// earlyLines and earlyBytes cap the lines kept to be judged again when the
// engine detection changes its mind; past them the engine is fixed.
const (
	earlyLines    = 400
	earlyMaxBytes = 256 << 10
)

// Line judges one line of the attempt's output: text is the line with
// colour remnants and container prefixes removed, ev the line's time,
// cursor and trimmed text for evidence.
func (j *Judge) Line(text string, ev domain.Evidence) {
	j.version++
	l := &j.scan
	if j.locked && j.eng != nil && j.a.EngineVersion != "" && !j.eng.HasChildren() {
		// The engine is settled (detect reads no more lines): cut the
		// process prefix before the literal scan, not after it, so the
		// scan skips it (a fifth of a short vLLM line).
		k := j.eng.StripLen(text)
		j.set.Prepare(l, text[k:])
		j.lineJudged(ev, l, true)
		return
	}
	j.set.Prepare(l, text)
	if !j.locked {
		if j.early == nil {
			j.early = make([]earlyLine, 0, 64) // most attempts of a night ladder have fewer lines
		}
		j.early = append(j.early, earlyLine{ev, text})
		j.earlyBytes += len(text)
		if len(j.early) > earlyLines || j.earlyBytes > earlyMaxBytes {
			j.locked, j.early = true, nil
		}
	}
	if j.detect(l) {
		// The engine changed: judge every line kept so far again with its
		// profile (this one included).
		early := j.early
		j.reset()
		for _, el := range early {
			j.lineJudged(el.ev, j.set.NewLine(el.line), false)
		}
		return
	}
	j.lineJudged(ev, l, false)
}

// vote is an engine's evidence so far: its strongest signal, and how many
// lines gave one. A strong signal (a banner, a module path) outweighs any
// number of weak ones (a logger format several engines share).
type vote struct{ max, n int }

func (v vote) beats(w vote) bool { return v.max > w.max || (v.max == w.max && v.n > w.n) }

// detect weighs the engine evidence of l; it reports whether the engine
// changed family (vLLM to SGLang, not llama.cpp to the Ollama that embeds
// it): the lines so far must then be judged again with its profile.
func (j *Judge) detect(l *rules.Line) bool {
	a := &j.a
	if j.locked && a.EngineVersion != "" && !j.eng.HasChildren() {
		return false
	}
	name, version, weight, ok := j.set.DetectWeighted(l)
	if !ok {
		return false
	}
	if a.EngineVersion == "" && name == a.Engine && version != "" {
		a.EngineVersion = version
	}
	if j.locked {
		// Only a wrapper may still show itself (Ollama after llama-server's
		// first lines).
		if a.Engine != "" && name != a.Engine && j.set.Engine(name).Parent() == a.Engine {
			j.setEngine(name, version)
		}
		return false
	}
	v := j.votes[name]
	v.n++
	v.max = max(v.max, weight)
	j.votes[name] = v
	// The strongest family wins; within it, the wrapper once it showed.
	family := func(e string) string {
		if p := j.set.Engine(e).Parent(); p != "" {
			return p
		}
		return e
	}
	totals := map[string]vote{}
	for e, v := range j.votes {
		f := family(e)
		t := totals[f]
		t.n += v.n
		t.max = max(t.max, v.max)
		totals[f] = t
	}
	cur := family(a.Engine)
	best := cur
	for f, t := range totals {
		if best == "" || t.beats(totals[best]) {
			best = f
		}
	}
	pick := best
	for e := range j.votes {
		if e != best && family(e) == best {
			pick = e // the wrapper showed itself
		}
	}
	if pick == a.Engine {
		return false
	}
	changed := a.Engine != "" && best != cur
	first := a.Engine == ""
	j.setEngine(pick, "")
	if pick == name {
		a.EngineVersion = version
	}
	return changed || first
}

// reset forgets what the lines said (before they are judged again with
// another engine's profile); findings given by Finding stay.
func (j *Judge) reset() {
	a := &j.a
	eng, version := a.Engine, a.EngineVersion
	start := a.StartedAt
	*a = domain.Attempt{Engine: eng, EngineVersion: version, Phase: domain.PhaseStart, Shape: domain.Shape{}}
	a.StartedAt = start
	a.Timeline = []domain.PhaseMark{{Phase: domain.PhaseStart, Time: start}}
	j.seq = rules.SeqState{}
	j.roots, j.ctxFill, j.lastErrors, j.readyEv = nil, nil, nil, nil
	j.ring.reset()
	j.side, j.sideOrder = map[string]*pending{}, nil
	j.exc = excReader{}
	j.steps, j.exit = nil, -1
	j.usage, j.lastMarker = usageText{}, nil
	for i, ev := range j.external {
		j.addSide(findingRule(j.set, j.externalID[i]), a.Phase, nil, "", ev)
	}
}

// lineJudged counts and judges one line, prepared as l (stripped: without
// the engine's process prefix already).
func (j *Judge) lineJudged(ev domain.Evidence, l *rules.Line, stripped bool) {
	a := &j.a
	a.Lines++
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

func (j *Judge) setEngine(name, version string) {
	j.a.Engine = name
	if version != "" {
		j.a.EngineVersion = version
	}
	j.eng = j.set.Engine(name)
	if j.eng == nil {
		j.eng = j.set.Fallback()
	}
}

// judgeLine moves the phase, updates the shape and runs the rules on one
// line (phase markers first: a line can be both the phase's marker and the
// decisive line). It strips l in place unless it is stripped already.
func (j *Judge) judgeLine(ev domain.Evidence, l *rules.Line, stripped bool) {
	a := &j.a
	if !stripped {
		j.eng.StripLine(l)
	}
	text := l.Text
	if inside, first := j.usage.step(text); inside {
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
	current := a.Phase
	if current == domain.PhaseReady {
		current = "" // a ready marker line is readiness evidence too
	}
	if p, fwd, ok := j.eng.PhaseLineIn(l, !a.ReadyAt.IsZero(), current); ok {
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
	if j.eng.IsReadyEvidenceLine(l) {
		j.addReadyEvidence(ev)
	}
	j.eng.UpdateShapeLine(l, a.Shape)
	reached := !a.ReadyAt.IsZero()
	info := j.exc.line(text, l.MayMatter(), a.Lines, ev, a.Phase, reached)
	// Frames printed after an exception (vLLM logs the message first, a
	// chained traceback follows) tell where it happened.
	for i := range j.exc.fatals {
		if f := &j.exc.fatals[i]; f.Start == info.event && f.Line < a.Lines && a.Phase.Rank() > f.Phase.Rank() &&
			a.Phase.Rank() < domain.PhaseReady.Rank() {
			f.Phase = a.Phase
		}
	}
	if exit, ok := j.set.FatalLine(l); ok {
		j.exc.addDeath(a.Lines, ev, a.Phase, reached, exit)
		if exit >= 0 {
			j.exit = exit
		}
	}
	env := &j.env
	*env = rules.LineEnv{Line: text, Phase: string(a.Phase), Engine: a.Engine, Unit: a.Unit,
		ReachedReady: reached, Shape: a.Shape, Time: ev.Time, Error: isErrorLine(text, errorLike, info)}
	if info.fatal != nil && len(info.fatal.Frames) > 0 {
		env.Frames = strings.Join(info.fatal.Frames, "\n")
	}
	for _, h := range j.match(l, env, j.seq) {
		j.hit(h, ev, text, info)
	}
	if info.raising != "" {
		// "raise X(" in the innermost frame: should the paste end before
		// the exception line, X is the exception. Judged now as the line
		// "X:", withdrawn if the traceback goes on to its exception line.
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
	if info.fatal != nil {
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
	if j.visit == nil || j.visitEngine != env.Engine || j.visitSet != j.set {
		j.visit, j.visitEngine, j.visitSet = j.set.LineRules(env.Engine), env.Engine, j.set
	}
	return j.visit.Match(l, env, seq)
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
	for _, r := range j.roots {
		if r.rule.Provisional && p.Rank() > r.phase.Rank() {
			r.gone = true // the engine moved on: the stall the verdict named is over
		}
	}
	if (p == domain.PhaseReady || p == domain.PhaseServing) && a.ReadyAt.IsZero() {
		// Serving a request means the engine was ready, whether or not the
		// paste kept its readiness line.
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
	a := &j.a
	for _, b := range j.roots {
		if b.gone || a.Lines-b.lineNo > reconsiderWindow || a.Phase.Rank() <= b.phase.Rank() {
			continue
		}
		env := &rules.LineEnv{Line: b.text, Phase: string(a.Phase), Engine: a.Engine, Unit: a.Unit,
			ReachedReady: b.ready, Shape: a.Shape}
		var pick *rules.Hit
		for _, h := range j.match(nil, env, rules.SeqState{}) {
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
			continue
		}
		b.rule, b.captures = pick.Rule, pick.Captures
		b.phase = phaseFor(pick.Rule, a.Phase)
	}
}

// phaseFor is the phase a rule's finding is in when it fires in phase cur:
// the rule's own phase where it names one (it knows where the failure
// was, e.g. an allocation the size of the KV pool); else its floor or its
// verdict's lifts the phase, and nothing moves it backwards.
func phaseFor(r *rules.Rule, cur domain.Phase) domain.Phase {
	if r.Phase != "" {
		return r.Phase
	}
	p := cur
	if p == domain.PhaseStart && verdictNatural[r.Verdict] != "" {
		// No phase marker seen: the verdict's own phase (spec: "phase from
		// evidence").
		p = verdictNatural[r.Verdict]
	}
	for _, q := range []domain.Phase{r.Floor, verdictFloor[r.Verdict]} {
		if q != "" && q.Rank() > p.Rank() {
			p = q
		}
	}
	return p
}

// verdictNatural is the phase a verdict names when nothing else tells:
// model files are read while loading the weights.
var verdictNatural = map[domain.Verdict]domain.Phase{
	domain.VerdictMissingPayload: domain.PhaseWeights,
}

// verdictFloor is the earliest phase a verdict can happen in (spec: a
// weights OOM happened in weights).
var verdictFloor = map[domain.Verdict]domain.Phase{
	domain.VerdictOOMWeights:          domain.PhaseWeights,
	domain.VerdictOOMProfile:          domain.PhaseProfile,
	domain.VerdictOOMKVAlloc:          domain.PhaseKVAlloc,
	domain.VerdictOOMGraphCapture:     domain.PhaseGraphCapture,
	domain.VerdictOOMRuntime:          domain.PhaseServing,
	domain.VerdictKVCacheInsufficient: domain.PhaseKVAlloc,
	domain.VerdictCompileError:        domain.PhaseCompile,
	domain.VerdictDynamoConstraint:    domain.PhaseCompile,
	domain.VerdictDistributedError:    domain.PhaseInit,
	domain.VerdictConfigError:         domain.PhaseArgs,
	domain.VerdictMissingPayload:      domain.PhaseArgs,
}

const maxEvidencePerFinding = 4

// maxRoots bounds the root causes kept per attempt (one per finding id).
const maxRoots = 32

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

// step is a forward step of the boot phases by one of the engine's own
// progress lines (not a traceback frame): at line line, into phase.
type step struct {
	line  int
	phase domain.Phase
}

// maxSteps bounds the steps kept; the phases are few, so only an engine
// that keeps going back and forth reaches it (the latest steps count).
const maxSteps = 64

func (j *Judge) addStep(line int, p domain.Phase) {
	if len(j.steps) == maxSteps {
		j.steps = append(j.steps[:0], j.steps[1:]...)
	}
	j.steps = append(j.steps, step{line, p})
}

// movedOn reports whether the boot went on past phase p after line n: a
// later step into a later boot phase shows the engine survived what line
// n said. (A step into the same phase does not: progress bars flushed
// after the error, other ranks still at it.)
func (j *Judge) movedOn(n int, p domain.Phase) bool {
	for i := len(j.steps) - 1; i >= 0 && j.steps[i].line > n; i-- {
		if j.steps[i].phase.Rank() > p.Rank() {
			return true
		}
	}
	return false
}

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
			if r.lineNo >= f.Start && r.lineNo <= f.Line {
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

// Finding records a finding raised outside the rules (log loss noticed by
// ingest or the journal follower), with the set's rule of that id when it
// has one. Version moves only when the finding changed (a repeat past its
// maximum of evidence lines changes nothing the attempt shows).
func (j *Judge) Finding(id string, ev domain.Evidence) {
	if len(j.external) < maxRoots {
		j.external, j.externalID = append(j.external, ev), append(j.externalID, id)
	}
	if j.addSide(findingRule(j.set, id), j.a.Phase, nil, "", ev) {
		j.version++
	}
}

// findingRule returns the first rule of s that sets finding id, or a bare
// rule.
func findingRule(s *rules.Set, id string) *rules.Rule {
	for _, r := range s.Rules() {
		if r.FindingID() == id {
			return r
		}
	}
	return &rules.Rule{ID: "analyzer." + id, Finding: id, Severity: domain.SeverityWarning, MessageID: MessageIDLogLoss}
}

// The rules of the verdicts the judge names itself, without a rule of the
// set: a failure no rule explains, and a main process killed by a signal
// with no line saying why.
const (
	ruleUnknownFailure = "analyzer.unknown_failure"
	ruleKilledBySignal = "analyzer.killed_by_signal"
)

// MESSAGE_IDs of the findings the judge raises itself (README, "Stable
// MESSAGE_IDs").
const (
	MessageIDUnknownFailure = "c4deb1c694538b4d8d75dce263d1534e"
	MessageIDLogLoss        = "d7bd97a9522bf7b670303457da23dd0c"
	MessageIDEngineDied     = "5dea6626c591aab3f8877d14c919ebd1"
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
	// Line is the lifecycle record that ended the attempt; Exit the main
	// process's exit record (with its status), when there was one.
	Line, Exit *domain.Evidence

	fatal *Fatal // the fatal end the lines show (set by Judge)
}

func intp(n int) *int { return &n }

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
	// roles[i] is what a.Evidence[i] stands for in the judge's state
	// (domain.Evidence.Role), so that Restore can put it back there.
	var roles []domain.EvidenceRole
	add := func(r domain.EvidenceRole, evs ...domain.Evidence) {
		a.Evidence = append(a.Evidence, evs...)
		for range evs {
			roles = append(roles, r)
		}
	}
	// lifecycle adds the tracker's exit record and the record that ended
	// the attempt.
	lifecycle := func() {
		if end.Exit != nil {
			add(domain.RoleExit, *end.Exit)
		}
		if end.Line != nil {
			add(domain.RoleEnd, *end.Line)
		}
	}
	reached := !a.ReadyAt.IsZero()
	if a.ExitStatus == nil && j.exit >= 0 {
		a.ExitStatus = intp(j.exit) // the text states it ("exited with code 1")
	}
	best, unknown, others := j.choose()
	end.fatal = j.fatalEnd(end)
	var failedAt time.Time
	switch {
	case best != nil:
		a.Verdict = best.rule.Verdict
		a.Phase = j.verdictPhase(best.phase, best.ready)
		a.Rule = best.rule.ID
		failedAt = best.time
		a.Context = append(best.context[:len(best.context):len(best.context)], nil...)
	case unknown != nil:
		a.Verdict = domain.VerdictUnknownFailure
		a.Phase = j.verdictPhase(unknown.Phase, unknown.AfterReady)
		failedAt = unknown.Evidence.Time
	case end.Result == "timeout":
		a.Verdict = domain.VerdictTimeout
	case end.Failed && (a.ExitCode == "killed" || a.ExitCode == "dumped") && end.fatal == nil && !a.StopRequested:
		// The main process died by a signal and no line says why.
		a.Verdict = domain.VerdictEngineDied
		a.Rule = ruleKilledBySignal
		if end.Exit != nil {
			failedAt = end.Exit.Time
		}
	case end.Failed || (end.Ended && a.EndedBy == domain.EndedByExit && !reached) || end.fatal != nil:
		a.Verdict = domain.VerdictUnknownFailure
		if end.fatal != nil {
			a.Phase = j.verdictPhase(end.fatal.Phase, end.fatal.AfterReady)
			failedAt = end.fatal.Evidence.Time
		}
		if end.Line != nil {
			failedAt = end.Line.Time
		}
	case reached:
		// Only the engine's readiness line or a served request proves it:
		// an excerpt that stops at a milestone (warmup, graph capture) is
		// still running in the phase it reached.
		a.Verdict = domain.VerdictReady
		a.Phase = domain.PhaseReady
		add(domain.RoleMilestone, milestones(j.a.Timeline, domain.PhaseWarmup, domain.PhaseReady)...)
		add(domain.RoleReady, j.readyEv...)
	case end.Ended && a.EndedBy == domain.EndedByStop:
		a.Verdict = domain.VerdictStopped
	default:
		a.Verdict = domain.VerdictRunning
		// Where the boot has got to: its boot-shape lines so far (KV cache
		// size, concurrency). Stored, they also let a later replay that
		// continues the attempt quote them once it is ready.
		add(domain.RoleReady, j.readyEv...)
		if m := j.lastMarker; m != nil && a.Phase != domain.PhaseStart {
			add(domain.RoleMilestone, *m)
		}
	}
	if a.Rule == ruleKilledBySignal {
		status := "?"
		if a.ExitStatus != nil {
			status = strconv.Itoa(*a.ExitStatus)
		}
		a.Note = "The engine's main process was killed by signal " + status + " (" + a.ExitCode + ") in phase " + string(a.Phase) +
			" and no line names a cause: 11 (SEGV) and 6 (ABRT) are crashes in native code, 9 (KILL) usually the OOM killer, 4 (ILL) a build for other CPU instructions."
		lifecycle()
		a.Findings = append(a.Findings, domain.Finding{ID: string(domain.VerdictEngineDied), Rule: a.Rule,
			Severity: domain.SeverityError, MessageID: MessageIDEngineDied, Phase: a.Phase, Time: failedAt,
			Note: a.Note, Evidence: a.Evidence})
	}
	if a.Verdict == domain.VerdictUnknownFailure {
		var decisive []domain.Evidence
		for _, f := range []*Fatal{unknown, end.fatal} {
			if f != nil {
				decisive = append(decisive, f.Evidence)
				add(fatalRole(f.Kind), f.Evidence)
				break
			}
		}
		add(domain.RoleLastError, j.lastErrors...)
		lifecycle()
		a.Fingerprint = fingerprint(append(append([]domain.Evidence(nil), j.lastErrors...), decisive...))
		a.Note = unknownNote(&a, end.Result, append(append([]domain.Evidence(nil), j.lastErrors...), decisive...))
		a.Rule = ruleUnknownFailure
		a.Findings = append(a.Findings, domain.Finding{ID: string(domain.VerdictUnknownFailure), Rule: a.Rule,
			Severity: domain.SeverityError, MessageID: MessageIDUnknownFailure, Phase: a.Phase, Time: failedAt,
			Note: a.Note, Evidence: a.Evidence})
	}
	var flags map[string]string
	if j.eng != nil {
		flags = j.eng.Flags
	}
	data := func(p *pending) rules.NoteData {
		return rules.NoteData{Rule: p.rule.ID, Verdict: string(a.Verdict), Phase: string(p.phase), Engine: a.Engine,
			Unit: a.Unit, Captures: p.captures, Shape: a.Shape, Line: p.line, Flags: flags}
	}
	if b := best; b != nil {
		note := b.rule.RenderNote(data(b))
		if !strings.Contains(note, b.line) {
			note += " Decisive line: \"" + b.line + "\""
		}
		a.Note = note
		f := finding(b, note)
		f.Phase = a.Phase
		a.Findings = append(a.Findings, f)
		add(domain.RoleFinding, b.evidence...)
		// Root causes that lost support the verdict (llama.cpp prints its
		// allocation error, then "error loading model").
		add(domain.RoleCandidate, j.also...)
		n := 0
		for _, o := range others {
			for _, ev := range o.evidence {
				if n < 2*maxEvidencePerFinding {
					add(domain.RoleCandidate, ev)
					n++
				}
			}
		}
	}
	for _, id := range j.sideOrder {
		p := j.side[id]
		f := finding(p, p.rule.RenderNote(data(p)))
		a.Findings = append(a.Findings, f)
		add(domain.RoleFinding, p.evidence...)
	}
	// End rules see the attempt as it ended (or stands, while running).
	env := &rules.EndEnv{Verdict: string(a.Verdict), Phase: string(a.Phase), Failed: a.Verdict.IsFailure(),
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
		p := &pending{rule: r, phase: a.Phase, time: a.EndedAt, captures: rules.EndCaptures(env)}
		if end.Line != nil {
			p.evidence = []domain.Evidence{*end.Line}
			p.line = end.Line.Message
			p.time = end.Line.Time
		}
		a.Findings = append(a.Findings, finding(p, r.RenderNote(data(p))))
		add(domain.RoleFinding|domain.RoleEnd, p.evidence...)
		env.Findings = append(env.Findings, r.FindingID())
	}
	a.Evidence = dedupeEvidence(a.Evidence, roles)
	if !a.ReadyAt.IsZero() && a.ReadyAt.Equal(time.Unix(0, 1)) {
		a.ReadyAt = time.Time{}
	}
	return &a
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
	j.setEngine(a.Engine, a.EngineVersion)
	j.locked = true
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
		if f.Rule == ruleUnknownFailure || f.Rule == ruleKilledBySignal {
			continue // named again at the end from the restored lines
		}
		r := ruleByID(j.set, f.Rule)
		external := false
		if r == nil {
			// A finding raised outside the rules (Finding) has the bare
			// rule of its id when the set has none.
			if b := findingRule(j.set, f.ID); b.ID == f.Rule {
				r, external = b, true
			}
		}
		if r == nil || r.End {
			continue // unknown now, or an end rule: judged again at the end
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
			// The decisive line as the rules saw it, cut around the match:
			// the line holding the match (a traceback's announcing line
			// comes before it), else the first.
			decisive := f.Evidence[0].Message
			for _, e := range f.Evidence {
				if f.Match != "" && strings.Contains(e.Message, f.Match) {
					decisive = e.Message
					break
				}
			}
			p.text = j.eng.Strip(decisive)
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
			continue
		}
		if _, ok := j.side[r.FindingID()]; !ok {
			j.side[r.FindingID()] = p
			j.sideOrder = append(j.sideOrder, r.FindingID())
		}
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

// restoreByRole puts each evidence line of stored attempt a back where its
// role says it was. Lines of rule findings came back with their findings,
// milestones come back from the timeline, and the lifecycle records are
// the tracker's.
func (j *Judge) restoreByRole(a *domain.Attempt) {
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
			// The fatal event the unknown failure stands on, before every
			// line still to come (a later step of the boot withdraws it).
			kind := FatalException
			if r.Has(domain.RoleDeath) {
				kind = FatalDeath
			}
			if len(j.exc.fatals) < maxFatals {
				j.exc.fatals = append(j.exc.fatals, Fatal{Kind: kind, Message: e.Message, Start: -1, Line: -1,
					Evidence: e, Phase: a.Phase, ExitStatus: -1})
			}
		}
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

// evidenceRing holds the last lines of an attempt in a circular buffer:
// a slice that drops its head reallocates every few lines, a tenth of the
// judge's allocation on a night ladder.
type evidenceRing struct {
	buf        []domain.Evidence
	start, len int
}

// push adds ev, keeping at most limit lines.
func (r *evidenceRing) push(ev domain.Evidence, limit int) {
	if limit <= 0 {
		return
	}
	if len(r.buf) != limit {
		r.buf, r.start, r.len = make([]domain.Evidence, limit), 0, 0
	}
	i := r.start + r.len
	if i >= limit {
		i -= limit
	}
	r.buf[i] = ev
	if r.len < limit {
		r.len++
	} else if r.start++; r.start == limit {
		r.start = 0
	}
}

// appendTo appends the lines held, oldest first, to dst.
func (r *evidenceRing) appendTo(dst []domain.Evidence) []domain.Evidence {
	dst = slices.Grow(dst, r.len)
	for k := range r.len {
		i := r.start + k
		if i >= len(r.buf) {
			i -= len(r.buf)
		}
		dst = append(dst, r.buf[i])
	}
	return dst
}

func (r *evidenceRing) reset() { r.start, r.len = 0, 0 }
