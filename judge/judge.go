package judge

import (
	"slices"
	"time"

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
	votes      []engineVote      // evidence per engine, in the order it first came
	readyEv    []domain.Evidence // readiness lines and the boot-shape lines around them
	exc        excReader         // tracebacks and death lines
	also       []domain.Evidence // restored: lines of root causes that lost to the verdict
	steps      []step            // forward boot-phase steps, in order
	exit       int               // exit status a line stated (-1: none)
	usage      usageText         // inside an argument parser's usage text
	lastMarker *domain.Evidence  // the last phase-marker line: where a boot in progress got to
	version    uint64

	scan *rules.Line   // the line being judged (reused; ShareScratch)
	env  rules.LineEnv // its rule environment (reused)
	// visit is set's line rules of visitEngine: looked up once per engine
	// rather than per line.
	visit       rules.LineRules
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
	// hits are the line counts of the later hits merged into this root
	// (same finding), the latest maxMergedHits.
	hits []int
}

// New returns a judge for a new attempt of engine ("" when not known yet:
// the lines will tell), judged by rule set s.
func New(s *rules.Set, engine string, opt Options) *Judge {
	j := &Judge{set: s, opt: opt.withDefaults(), seq: rules.SeqState{}, side: map[string]*pending{}, exit: -1,
		eng: s.Fallback(), scan: new(rules.Line)}
	j.a.Phase = domain.PhaseStart
	j.a.Shape = domain.Shape{}
	p := j.opt.Preset
	if engine == "" && p != nil {
		engine = p.Engine
	}
	if engine != "" {
		j.setEngine(engine, "")
		j.votes = append(j.votes, engineVote{engine, vote{max: 1 << 20}}) // given, not detected
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

// ShareScratch makes j scan each line into l, which judges that are never
// called concurrently (one tracker's) may share: a judge per attempt then
// grows no buffer of its own (on a night journal, a boot every ~54 lines,
// those buffers were 7 % of the bytes allocated). l holds nothing between
// calls.
func (j *Judge) ShareScratch(l *rules.Line) { j.scan = l }

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

const maxEvidencePerFinding = 4

// maxRoots bounds the root causes kept per attempt (one per finding id).
const maxRoots = 32

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
	if id == domain.FindingBootStalled {
		return &rules.Rule{ID: "analyzer." + id, Title: "the boot has stalled in its phase", Finding: id,
			Severity: domain.SeverityWarning, MessageID: MessageIDBootStalled}
	}
	return &rules.Rule{ID: "analyzer." + id, Finding: id, Severity: domain.SeverityWarning, MessageID: MessageIDLogLoss}
}

// lineNoted are the findings raised outside the rules whose note is their
// line: the tracker writes it whole ("graph_capture for 14m; it took ...").
var lineNoted = map[string]bool{domain.FindingBootStalled: true}

// Withdraw takes back a finding raised by Finding (a stalled boot that
// moved on); it reports whether there was one.
func (j *Judge) Withdraw(id string) bool {
	found := false
	ext, extID := j.external[:0], j.externalID[:0]
	for i, e := range j.external {
		if j.externalID[i] == id {
			found = true
			continue
		}
		ext, extID = append(ext, e), append(extID, j.externalID[i])
	}
	j.external, j.externalID = ext, extID
	if _, ok := j.side[id]; ok {
		delete(j.side, id)
		j.sideOrder = slices.DeleteFunc(j.sideOrder, func(s string) bool { return s == id })
		found = true
	}
	if found {
		j.version++
	}
	return found
}

// The rules of the verdicts the judge names itself, without a rule of the
// set: a failure no rule explains, and a main process killed by a signal
// with no line saying why.
const (
	ruleUnknownFailure = "analyzer.unknown_failure"
	ruleKilledBySignal = "analyzer.killed_by_signal"
	ruleStartTimeout   = "analyzer.start_timeout"
)

// MESSAGE_IDs of the findings the judge raises itself (README, "Stable
// MESSAGE_IDs").
const (
	MessageIDUnknownFailure = "c4deb1c694538b4d8d75dce263d1534e"
	MessageIDLogLoss        = "d7bd97a9522bf7b670303457da23dd0c"
	MessageIDEngineDied     = "5dea6626c591aab3f8877d14c919ebd1"
	MessageIDBootStalled    = "02218e03f2064f09bd662bcff3a1cd17"
	MessageIDTimeout        = "d3e394f6bb6c31320d5691bd13b7a4f4"
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
