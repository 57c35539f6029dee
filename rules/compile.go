package rules

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"regexp"
	"regexp/syntax"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/llmfleet/analyzer/domain"
)

// Builtin holds the rule files shipped in the binary.
//
//go:embed *.yaml
var Builtin embed.FS

// Set is a compiled, immutable rule set: engine profiles plus rules.
type Set struct {
	Files   []string
	engines []*Engine
	byName  map[string]*Engine
	// lineRules[engine] holds the line rules scoped to that engine plus
	// the unscoped ones, in file order.
	lineRules map[string][]*Rule
	// ruleVisits[engine] is lineRules[engine] as matcher-id masks
	// (MatchPrepared); byMatchID finds a rule by its matchID.
	ruleVisits map[string]*ruleVisit
	byMatchID  []*Rule
	generic    []*Rule
	endRules   []*Rule
	all        []*Rule
	pre        *prefilter
	// fallback is the profile of attempts no engine profile claims.
	fallback *Engine
	// frames are the shared traceback-frame phase markers (File.Frames).
	frames []phaseMarker
	// fatal is the shared vocabulary of death lines (File.Fatal).
	fatal    []fatalLine
	fatalIDs idSet // the matchers of fatal
	// detectIDs holds the detection matchers of every engine.
	detectIDs idSet
}

// fatalLine is one compiled death line.
type fatalLine struct {
	re   *lazyRegexp
	alts []alt // re's alternatives when it captures nothing (see alt); nil: run re
	lits []string
	id   int // prefilter matcher id
	exit int // index of the exit_status capture, -1: none
}

// Engine is a compiled engine profile.
type Engine struct {
	Name        string
	Extends     string
	priority    int
	Defaults    map[string]any
	BlockTokens int
	Flags       map[string]string // shape key → the engine's flag (EngineSpec.Flags)
	detect      []*lazyRegexp
	detectW     []int      // weight of evidence per detect pattern
	detectDFA   []*lazyDFA // per detect pattern: its DFA when anchored at the start (startDFA)
	fallback    bool
	detectLits  [][]string
	detectIDs   []int // prefilter matcher ids, per detect pattern
	banner      []*lazyRegexp
	bannerLits  [][]string
	bannerIDs   []int
	strip       []*lazyRegexp
	stripPre    []string   // per strip regex: the text every match begins with ("" unknown)
	stripDFA    []*lazyDFA // per strip regex: its DFA (newPrefixDFA)
	localTime   []*lazyRegexp
	readyEv     []*lazyRegexp
	readyLits   [][]string
	readyIDs    []int
	readyAlts   [][]alt  // per ready pattern; nil: run the whole regex
	children    []string // engines that extend this one
	phases      []phaseMarker
	phaseIDs    idSet // the matchers of phases
	shape       []shapeLine
	shapeIDs    idSet // the matchers of shape
	pre         *prefilter
}

type phaseMarker struct {
	phase       domain.Phase
	re          *lazyRegexp
	lits        []string
	afterReady  bool
	forwardOnly bool
	id          int   // prefilter matcher id
	alts        []alt // re's alternatives; nil: run re
	// others holds the markers after this one into another phase
	// (otherPhaseAfter).
	others idSet
}

type shapeLine struct {
	re      *lazyRegexp
	lits    []string
	parse   string
	from    string
	keys    map[string]string
	set     map[string]string
	id      int // prefilter matcher id
	startID int // prefilter start set of re (-1: none)
}

// Rule is a compiled verdict or finding rule.
type Rule struct {
	ID      string
	Title   string
	Engines []string
	End     bool
	Verdict domain.Verdict
	Finding string
	Phase   domain.Phase
	Floor   domain.Phase
	// Provisional: the verdict is withdrawn when the phase moves on
	// (RuleSpec.Provisional).
	Provisional bool
	Priority    int
	Severity    domain.Severity
	MessageID   string
	Labels      map[string]string
	Tests       []TestSpec
	File        string
	Line        int

	match    *lazyRegexp
	literals []string
	after    *lazyRegexp
	until    *lazyRegexp
	// prefilter matcher ids of match, after and until
	matchID, afterID, untilID int
	// startID is the prefilter start set of match (-1: none): literals
	// one of which begins every match.
	startID int
	// alts: match split into its alternatives (see compileAlts); each
	// runs only when its own literal is in the line, and a small regex is
	// much faster than a large alternation.
	alts []alt
	// sets: literalSets of match, checked before its regex; setIDs:
	// their prefilter matcher ids (see prefilter.addSets).
	sets                 [][]string
	setIDs               []int
	afterLits, untilLits []string
	unless               []*lazyRegexp
	when                 *whenExpr // nil without a condition
	// whenFirst: when reads no captures, so it is evaluated before the
	// regex; a false condition (most lines) then costs no search.
	whenFirst bool
	// onUsage: when reads usage_text, so the rule is run on the first
	// line of a usage block (the only rules that are).
	onUsage bool
	note    *noteTemplate // nil without a note
	count   *counting     // nil: the rule fires on every matching line
}

// counting is a compiled count block (CountSpec).
type counting struct {
	gte int
	// within is the sliding window over the lines' timestamps; 0: the
	// whole attempt.
	within time.Duration
	// distinct is the capture whose distinct values are counted; "": lines.
	distinct string
}

// FindingID is the verdict or finding the rule sets.
func (r *Rule) FindingID() string {
	if r.Verdict != "" {
		return string(r.Verdict)
	}
	return r.Finding
}

// IsRootCause reports whether the rule names a verdict (not a side finding).
func (r *Rule) IsRootCause() bool { return r.Verdict != "" }

// LoadBuiltin compiles the embedded rule files.
func LoadBuiltin() (*Set, error) {
	files, names, errs, parsed := builtinFiles()
	return load(files, names, errs, parsed)
}

// LoadDir compiles the rule files of a directory (the --rules flag).
func LoadDir(dir string) (*Set, error) {
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("rules: %w", err)
	}
	return Load(os.DirFS(dir))
}

// Load compiles every *.yaml file of fsys. It returns Errors listing every
// problem (file:line) when any file is invalid; nothing is half-loaded.
func Load(fsys fs.FS) (*Set, error) {
	files, names, errs := readDir(fsys)
	return load(files, names, errs, false)
}

// load compiles parsed rule files (readDir's results, errs included);
// lazy: see whenExpr.
func load(files []*File, names []string, errs Errors, lazy bool) (*Set, error) {
	memo.begin()
	defer memo.end()
	s := &Set{Files: names, byName: map[string]*Engine{}, lineRules: map[string][]*Rule{}, ruleVisits: map[string]*ruleVisit{}, pre: &prefilter{}}
	ids := map[string]string{}
	var specs []EngineSpec
	for _, f := range files {
		specs = append(specs, f.Engines...)
	}
	engines, engineErrs := compileAll(specs, compileEngine)
	for i, es := range specs {
		e := engines[i]
		errs = append(errs, engineErrs[i]...)
		if e == nil {
			continue
		}
		if _, dup := s.byName[e.Name]; dup {
			errs = append(errs, LoadError{es.file, es.line, fmt.Sprintf("engine %q defined twice", e.Name)})
			continue
		}
		s.engines = append(s.engines, e)
		s.byName[e.Name] = e
	}
	for _, f := range files {
		for _, ps := range f.Frames {
			m, err := compilePhase(f, ps)
			if err != nil {
				errs = append(errs, *err)
				continue
			}
			m.forwardOnly = true
			s.frames = append(s.frames, m)
		}
		for _, fs := range f.Fatal {
			re, err := compileRE(fileOf(f), fs.line, "fatal", fs.Match)
			if err != nil {
				errs = append(errs, *err)
				continue
			}
			fl := fatalLine{re: re, lits: requiredLiterals(fs.Match), exit: re.SubexpIndex("exit_status")}
			if re.NumSubexp() == 0 {
				fl.alts = compileAlts(fs.Match, false)
			}
			s.fatal = append(s.fatal, fl)
		}
	}
	for _, e := range s.engines {
		if !e.fallback {
			continue
		}
		if s.fallback != nil {
			errs = append(errs, LoadError{File: "engines", Msg: fmt.Sprintf("two fallback profiles: %q and %q", s.fallback.Name, e.Name)})
		}
		s.fallback = e
	}
	var ruleSpecs []RuleSpec
	for _, f := range files {
		ruleSpecs = append(ruleSpecs, f.Rules...)
	}
	compiled, ruleErrs := compileAll(ruleSpecs, func(rs RuleSpec) (*Rule, Errors) { return compileRule(rs, lazy) })
	for i, rs := range ruleSpecs {
		r := compiled[i]
		errs = append(errs, ruleErrs[i]...)
		if r == nil {
			continue
		}
		if where, dup := ids[r.ID]; dup {
			errs = append(errs, LoadError{rs.file, rs.line, fmt.Sprintf("rule id %q already used at %s", r.ID, where)})
			continue
		}
		ids[r.ID] = fmt.Sprintf("%s:%d", rs.file, rs.line)
		for _, en := range r.Engines {
			if _, ok := s.byName[en]; !ok {
				errs = append(errs, LoadError{rs.file, rs.line, fmt.Sprintf("rule %q: unknown engine %q", r.ID, en)})
			}
		}
		s.all = append(s.all, r)
		switch {
		case r.End:
			s.endRules = append(s.endRules, r)
		case len(r.Engines) == 0:
			s.generic = append(s.generic, r)
		}
	}
	// Rules with the same pattern share one regexp, so a line runs it once.
	shared := map[string]*lazyRegexp{}
	for _, r := range s.all {
		if r.match == nil {
			continue
		}
		if re, ok := shared[r.match.String()]; ok {
			r.match = re
		} else {
			shared[r.match.String()] = r.match
		}
	}
	s.register()
	fatalIDs := make([]int, len(s.fatal))
	for i, f := range s.fatal {
		fatalIDs[i] = f.id
	}
	s.fatalIDs = newIDSet(fatalIDs)
	var detectIDs []int
	for _, e := range s.engines {
		detectIDs = append(detectIDs, e.detectIDs...)
	}
	s.detectIDs = newIDSet(detectIDs)
	for _, e := range s.engines {
		if e.Extends == "" {
			continue
		}
		parent := s.byName[e.Extends]
		if parent == nil || parent.Extends != "" {
			errs = append(errs, LoadError{File: "engines", Msg: fmt.Sprintf("engine %q extends unknown or nested engine %q", e.Name, e.Extends)})
			continue
		}
		parent.children = append(parent.children, e.Name)
		e.strip = append(e.strip, parent.strip...)
		e.readyEv = append(e.readyEv, parent.readyEv...)
		e.readyLits = append(e.readyLits, parent.readyLits...)
		e.readyIDs = append(e.readyIDs, parent.readyIDs...)
		e.readyAlts = append(e.readyAlts, parent.readyAlts...)
		e.phases = append(e.phases, parent.phases...)
		e.shape = append(e.shape, parent.shape...)
	}
	for _, e := range s.engines {
		// Shared frames after the engine's own markers: the first match wins.
		e.phases = append(e.phases, s.frames...)
		e.markIDs()
		e.stripPre, e.stripDFA = e.stripPre[:0], e.stripDFA[:0]
		for _, re := range e.strip {
			e.stripPre = append(e.stripPre, anchoredPrefix(re.String()))
			e.stripDFA = append(e.stripDFA, &lazyDFA{expr: re.String(), build: newPrefixDFA})
		}
	}
	s.pre.build()
	if len(errs) > 0 {
		return nil, errs
	}
	sort.SliceStable(s.engines, func(i, j int) bool { return s.engines[i].priority > s.engines[j].priority })
	// Index line rules by engine: scoped rules first (an extending engine
	// gets its parent's), then generic ones.
	s.byMatchID = make([]*Rule, s.pre.n)
	for _, r := range s.all {
		if !r.End {
			s.byMatchID[r.matchID] = r
		}
	}
	for _, e := range s.engines {
		var list []*Rule
		for _, r := range s.all {
			if !r.End && (slices.Contains(r.Engines, e.Name) || (e.Extends != "" && slices.Contains(r.Engines, e.Extends))) {
				list = append(list, r)
			}
		}
		s.lineRules[e.Name] = append(list, s.generic...)
		s.ruleVisits[e.Name] = s.newRuleVisit(list, s.generic)
	}
	s.lineRules[""] = s.generic
	s.ruleVisits[""] = s.newRuleVisit(nil, s.generic)
	return s, nil
}

// ruleVisit is one engine's line rules as two passes over matcher ids
// (the scoped rules, then the generic ones): in each, ids grow in file
// order, as the rules do in lineRules, so visiting a line's candidate
// bits in id order visits its rules in lineRules' order without asking
// every rule.
type ruleVisit struct {
	passes [2]rulePass
}

// rulePass is one pass: mask holds the matchIDs of its rules, always those
// of rules with a sequence or a count, which see every line.
type rulePass struct {
	mask, always []uint64
}

func (s *Set) newRuleVisit(lists ...[]*Rule) *ruleVisit {
	v := &ruleVisit{}
	for i, list := range lists {
		ps := &v.passes[i]
		for _, r := range list {
			w := r.matchID / 64
			for len(ps.mask) <= w {
				ps.mask = append(ps.mask, 0)
				ps.always = append(ps.always, 0)
			}
			ps.mask[w] |= 1 << (r.matchID % 64)
			if r.after != nil || r.count != nil {
				ps.always[w] |= 1 << (r.matchID % 64)
			}
		}
	}
	return v
}

// reAt is rs[i], nil past its end (a pattern that did not compile).
func reAt(rs []*lazyRegexp, i int) *lazyRegexp {
	if i < len(rs) {
		return rs[i]
	}
	return nil
}

// register gives every regex that runs per line a prefilter matcher id
// (before engines copy their parent's markers, ids included).
func (s *Set) register() {
	p := s.pre
	for i := range s.frames {
		s.frames[i].id = p.add(s.frames[i].lits, s.frames[i].re)
		p.addAlts(s.frames[i].alts)
	}
	for i := range s.fatal {
		s.fatal[i].id = p.add(s.fatal[i].lits, s.fatal[i].re)
		p.addAlts(s.fatal[i].alts)
	}
	for _, e := range s.engines {
		e.pre = p
		for i, l := range e.detectLits {
			e.detectIDs = append(e.detectIDs, p.add(l, reAt(e.detect, i)))
		}
		for i, l := range e.bannerLits {
			e.bannerIDs = append(e.bannerIDs, p.add(l, reAt(e.banner, i)))
		}
		for i, l := range e.readyLits {
			e.readyIDs = append(e.readyIDs, p.add(l, reAt(e.readyEv, i)))
			p.addAlts(e.readyAlts[i])
		}
		for i := range e.phases {
			e.phases[i].id = p.add(e.phases[i].lits, e.phases[i].re)
			p.addAlts(e.phases[i].alts)
		}
		for i := range e.shape {
			e.shape[i].id = p.add(e.shape[i].lits, e.shape[i].re)
			e.shape[i].startID = p.startSet(e.shape[i].re)
		}
	}
	for _, r := range s.all {
		if r.End {
			continue
		}
		r.matchID = p.add(r.literals, r.match)
		r.setIDs = p.addSets(r.sets)
		r.startID = p.startSet(r.match)
		p.addAlts(r.alts)
		if r.after != nil {
			r.afterID = p.add(r.afterLits, r.after)
		}
		if r.until != nil {
			r.untilID = p.add(r.untilLits, r.until)
		}
	}
}

// Bounds on one rule-file regex: it runs on every line of every attempt, so
// a pattern with a million alternatives slows every line it prefilters in
// (and its load) by seconds. RE2 keeps matching linear; these keep the
// linear factor small.
const (
	maxPatternBytes = 16 << 10
	maxPatternInsts = 20000
)

func compileRE(file string, line int, what, src string) (*lazyRegexp, *LoadError) {
	if len(src) > maxPatternBytes {
		return nil, &LoadError{file, line, fmt.Sprintf("%s: pattern of %d bytes, more than %d", what, len(src), maxPatternBytes)}
	}
	if n := patternInsts(src); n > maxPatternInsts {
		return nil, &LoadError{file, line, fmt.Sprintf("%s: pattern compiles to %d instructions, more than %d: split the rule or use literals", what, n, maxPatternInsts)}
	}
	re, err := compilePattern(src)
	if err != nil {
		return nil, &LoadError{file, line, fmt.Sprintf("%s: %v", what, err)}
	}
	return re, nil
}

// patternInsts is progSize of src's simplified tree, from builtinTrees'
// facts when it has src; -1 when src does not parse (compilePattern says
// why).
func patternInsts(src string) int {
	if f := builtinFacts(src); f != nil {
		return f.progSize
	}
	return derivePatternInsts(src)
}

// derivePatternInsts is patternInsts from the pattern's tree.
func derivePatternInsts(src string) int {
	syn, err := parsePattern(src)
	if err != nil {
		return -1
	}
	return progSize(syn.Simplify())
}

// progSize returns the instructions regexp/syntax compiles a simplified
// regex into, without compiling it a second time (regexp.Compile does,
// and keeps no count): the compiler's own arithmetic, per operator.
func progSize(re *syntax.Regexp) int {
	return 2 + treeSize(re) // and the fail and match instructions
}

func treeSize(re *syntax.Regexp) int {
	sum := func() int {
		n := 0
		for _, sub := range re.Sub {
			n += treeSize(sub)
		}
		return n
	}
	switch re.Op {
	case syntax.OpLiteral:
		return max(len(re.Rune), 1)
	case syntax.OpCapture:
		return 2 + sum()
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest:
		return 1 + sum()
	case syntax.OpConcat:
		return max(sum(), 1)
	case syntax.OpAlternate:
		return sum() + len(re.Sub) - 1
	case syntax.OpRepeat: // none after Simplify, which writes x{n,m} out as copies of x
		return (re.Max + 1) * sum()
	}
	return 1
}

func compileEngine(es EngineSpec) (*Engine, Errors) {
	var errs Errors
	if es.Engine == "" {
		return nil, Errors{{es.file, es.line, "engine: missing name"}}
	}
	e := &Engine{Name: es.Engine, Extends: es.Extends, priority: es.DetectPriority, Defaults: es.Defaults, BlockTokens: es.BlockTokens, Flags: es.Flags,
		fallback: es.Fallback}
	if e.BlockTokens == 0 {
		e.BlockTokens = 4096
	}
	add := func(dst *[]*lazyRegexp, what string, srcs []string) {
		for i, src := range srcs {
			re, err := compileRE(es.file, es.itemLine(what, i), what, src)
			if err != nil {
				errs = append(errs, *err)
				continue
			}
			*dst = append(*dst, re)
		}
	}
	for i, d := range es.Detect {
		re, err := compileRE(es.file, es.itemLine("detect", i), "detect", d.Match)
		if err != nil {
			errs = append(errs, *err)
			continue
		}
		e.detect = append(e.detect, re)
		e.detectDFA = append(e.detectDFA, &lazyDFA{expr: re.String(), build: startDFA})
		e.detectW = append(e.detectW, d.Weight)
		e.detectLits = append(e.detectLits, requiredLiterals(d.Match))
	}
	if es.Fallback && len(es.Detect) > 0 {
		errs = append(errs, LoadError{es.file, es.line, fmt.Sprintf("engine %q: a fallback profile is never detected: drop detect", es.Engine)})
	}
	add(&e.banner, "banner", es.Banner)
	for _, src := range es.Banner {
		e.bannerLits = append(e.bannerLits, requiredLiterals(src))
	}
	add(&e.strip, "strip", es.Strip)
	add(&e.localTime, "local_time", es.LocalTime)
	for i, re := range e.localTime {
		for _, g := range []string{"month", "day", "hour", "minute", "second"} {
			if re.SubexpIndex(g) < 0 {
				errs = append(errs, LoadError{es.file, es.line, fmt.Sprintf("engine %q: local_time %d lacks the named capture %q", es.Engine, i+1, g)})
			}
		}
	}
	add(&e.readyEv, "ready_evidence", es.ReadyEvidence)
	for _, src := range es.ReadyEvidence {
		e.readyLits = append(e.readyLits, requiredLiterals(src))
		e.readyAlts = append(e.readyAlts, compileAlts(src, false))
	}
	for _, p := range es.Phases {
		m, err := compilePhaseIn(es.file, p)
		if err != nil {
			errs = append(errs, *err)
			continue
		}
		e.phases = append(e.phases, m)
	}
	for _, sh := range es.Shape {
		re, err := compileRE(es.file, sh.line, "shape", sh.Match)
		if err != nil {
			errs = append(errs, *err)
			continue
		}
		switch sh.Parse {
		case "", "pydict", "pyargs", "kv":
		default:
			errs = append(errs, LoadError{es.file, sh.line, fmt.Sprintf("shape: unknown parse %q (pydict, pyargs, kv)", sh.Parse)})
			continue
		}
		if sh.Parse != "" && re.SubexpIndex(sh.From) < 0 {
			errs = append(errs, LoadError{es.file, sh.line, fmt.Sprintf("shape: from %q is not a named capture of match", sh.From)})
			continue
		}
		e.shape = append(e.shape, shapeLine{re, requiredLiterals(sh.Match), sh.Parse, sh.From, sh.Keys, sh.Set, 0, -1})
	}
	return e, errs
}

// compilePhaseIn compiles a phase marker of file.
func compilePhaseIn(file string, p PhaseSpec) (phaseMarker, *LoadError) {
	if !domain.Phase(p.Phase).Valid() {
		return phaseMarker{}, &LoadError{file, p.line, fmt.Sprintf("unknown phase %q", p.Phase)}
	}
	re, err := compileRE(file, p.line, "phase "+p.Phase, p.Match)
	if err != nil {
		return phaseMarker{}, err
	}
	return phaseMarker{phase: domain.Phase(p.Phase), re: re, lits: requiredLiterals(p.Match),
		afterReady: p.AfterReady, forwardOnly: p.ForwardOnly, alts: compileAlts(p.Match, false)}, nil
}

// compilePhase compiles a shared frame marker of f.
func compilePhase(f *File, p PhaseSpec) (phaseMarker, *LoadError) {
	return compilePhaseIn(fileOf(f), p)
}

// fileOf is the name of the file f was read from.
func fileOf(f *File) string { return f.name }

// messageID is the form of a rule's message_id: 128 bits in hex, as
// journald's MESSAGE_ID.
var messageID = regexp.MustCompile(`^[0-9a-f]{32}$`)

var knownFindings = map[string]bool{}

func init() {
	for _, f := range domain.NonRootFindings {
		knownFindings[f] = true
	}
}

func validVerdict(v string) bool {
	for _, x := range domain.Verdicts {
		if string(x) == v {
			return true
		}
	}
	return false
}

// compileRule compiles one rule; lazy leaves its condition and note to be
// compiled on first use (whenExpr, noteTemplate).
func compileRule(rs RuleSpec, lazy bool) (*Rule, Errors) {
	var errs Errors
	bad := func(format string, args ...any) {
		errs = append(errs, LoadError{rs.file, rs.line, fmt.Sprintf("rule %q: ", rs.ID) + fmt.Sprintf(format, args...)})
	}
	if rs.ID == "" {
		bad("missing id")
	}
	r := &Rule{ID: rs.ID, Title: rs.Title, Engines: rs.Engines, End: rs.On == "end",
		Verdict: domain.Verdict(rs.Verdict), Finding: rs.Finding, Phase: domain.Phase(rs.Phase), Floor: domain.Phase(rs.PhaseFloor),
		Provisional: rs.Provisional, Priority: rs.Priority, Severity: domain.Severity(rs.Severity), MessageID: rs.MessageID,
		Labels: rs.Labels, Tests: rs.Tests, File: rs.file, Line: rs.line}
	if rs.Provisional && (rs.Verdict == "" || rs.On == "end") {
		bad("provisional needs a line rule with a verdict (a finding or an end rule has nothing to withdraw)")
	}
	switch rs.On {
	case "", "line", "end":
	default:
		bad("on must be line or end, not %q", rs.On)
	}
	switch {
	case rs.Verdict != "" && rs.Finding != "":
		bad("set either verdict or finding, not both")
	case rs.Verdict != "" && !validVerdict(rs.Verdict):
		bad("unknown verdict %q", rs.Verdict)
	case rs.Finding != "" && !knownFindings[rs.Finding]:
		bad("unknown finding %q", rs.Finding)
	case rs.Verdict == "" && rs.Finding == "":
		bad("needs a verdict or a finding")
	}
	if rs.Phase != "" && !r.Phase.Valid() {
		bad("unknown phase %q", rs.Phase)
	}
	if rs.PhaseFloor != "" && !r.Floor.Valid() {
		bad("unknown phase_floor %q", rs.PhaseFloor)
	}
	switch r.Severity {
	case domain.SeverityCritical, domain.SeverityError, domain.SeverityWarning, domain.SeverityInfo:
	case "":
		r.Severity = domain.SeverityError
	default:
		bad("unknown severity %q", rs.Severity)
	}
	if rs.MessageID != "" && !messageID.MatchString(rs.MessageID) {
		bad("message_id must be 32 lowercase hex digits")
	}
	if r.End {
		if rs.Match != "" || rs.After != "" {
			bad("an end rule has no match/after")
		}
		if rs.When == "" {
			bad("an end rule needs when")
		}
	} else if rs.Match == "" {
		bad("needs match")
	}
	compile := func(what, src string) *lazyRegexp {
		if src == "" {
			return nil
		}
		re, err := compileRE(rs.file, rs.line, fmt.Sprintf("rule %q: %s", rs.ID, what), src)
		if err != nil {
			errs = append(errs, *err)
		}
		return re
	}
	r.match = compile("match", rs.Match)
	r.after = compile("after", rs.After)
	r.until = compile("until", rs.Until)
	for _, u := range rs.Unless {
		if re := compile("unless", u); re != nil {
			r.unless = append(r.unless, re)
		}
	}
	r.afterLits, r.untilLits = requiredLiterals(rs.After), requiredLiterals(rs.Until)
	if r.match != nil {
		r.alts = compileAlts(rs.Match, true)
	}
	if r.match != nil && r.alts == nil {
		r.sets = literalSets(rs.Match)
	}
	r.literals = rs.Literals
	if len(r.literals) == 0 && rs.Match != "" {
		r.literals = requiredLiterals(rs.Match)
	}
	r.count = compileCount(rs, r.match, r.End, &errs)
	if rs.When != "" {
		r.when = &whenExpr{src: rs.When, end: r.End}
		if !lazy {
			if err := r.when.compiled().err; err != nil {
				bad("when: %v", err)
			}
		}
		r.whenFirst = !strings.Contains(rs.When, "captures")
		r.onUsage = strings.Contains(rs.When, "usage_text")
	}
	if rs.Note != "" {
		r.note = &noteTemplate{name: rs.ID, src: rs.Note}
		if !lazy {
			if _, err := r.note.parsed(); err != nil {
				bad("note: %v", err)
			}
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return r, nil
}

// compileCount checks and compiles a rule's count block (nil when it has
// none), adding an error at the block's line for each problem.
func compileCount(rs RuleSpec, match *lazyRegexp, end bool, errs *Errors) *counting {
	c := rs.Count
	if c == nil {
		if rs.countNull {
			*errs = append(*errs, LoadError{rs.file, rs.line, fmt.Sprintf("rule %q: count: empty block; give at least gte, e.g. count: {gte: 3, within: 5m}", rs.ID)})
		}
		return nil
	}
	line := c.line
	if line == 0 {
		line = rs.line
	}
	n := len(*errs)
	bad := func(format string, args ...any) {
		*errs = append(*errs, LoadError{rs.file, line, fmt.Sprintf("rule %q: count: ", rs.ID) + fmt.Sprintf(format, args...)})
	}
	k := &counting{distinct: c.Distinct}
	if end {
		bad("an end rule cannot count (count is for line rules)")
	}
	switch {
	case c.Gte == nil:
		bad("gte is missing; it has no default (gte: 1 fires on the first matching line)")
	case *c.Gte < 1:
		bad("gte must be at least 1, not %d", *c.Gte)
	default:
		k.gte = *c.Gte
	}
	if c.Within != "" {
		d, err := time.ParseDuration(c.Within)
		switch {
		case err != nil:
			bad("within %q is not a duration (want e.g. 90s, 5m, 1h): %v", c.Within, err)
		case d <= 0:
			bad("within must be positive, not %q", c.Within)
		default:
			k.within = d
		}
	}
	if match != nil {
		if c.Distinct != "" && match.SubexpIndex(c.Distinct) < 0 {
			var names []string
			for _, nm := range match.SubexpNames() {
				if nm != "" {
					names = append(names, nm)
				}
			}
			have := "it has none"
			if len(names) > 0 {
				have = "it has " + strings.Join(names, ", ")
			}
			bad("distinct %q is not a named capture of match (%s)", c.Distinct, have)
		}
		// The hit's captures carry the count under this name.
		if match.SubexpIndex("count") >= 0 {
			bad(`match has a capture named "count", the name under which the hit's captures give the count; rename it`)
		}
	}
	if len(*errs) > n {
		return nil
	}
	return k
}

// requiredLiterals returns literal strings of which at least one must occur
// in any line the regex matches (case-sensitive), or nil when none can be
// derived (the rule then runs on every line). From builtinTrees' facts when
// it has src.
func requiredLiterals(src string) []string {
	if f := builtinFacts(src); f != nil {
		return f.lits
	}
	return deriveRequiredLiterals(src)
}

// deriveRequiredLiterals is requiredLiterals from the pattern's tree.
func deriveRequiredLiterals(src string) []string {
	re, err := parsePattern(src)
	if err != nil {
		return nil
	}
	return litsOf(re.Simplify())
}

func litsOf(re *syntax.Regexp) []string {
	if re.Flags&syntax.FoldCase != 0 {
		if re.Op == syntax.OpLiteral && !slices.Contains(re.Rune, utf8.RuneError) {
			return foldVariants(re.Rune)
		}
		return nil
	}
	switch re.Op {
	case syntax.OpLiteral:
		if len(re.Rune) >= 3 && !slices.Contains(re.Rune, utf8.RuneError) {
			return []string{string(re.Rune)}
		}
	case syntax.OpCapture:
		return litsOf(re.Sub[0])
	case syntax.OpConcat:
		// The longest literal of the concatenation (or the best branch
		// set): an element's own, or the spellings of a run of elements
		// that each match a few exact strings (`\.(?:cu|cpp):` is one of
		// ".cu:" and ".cpp:", though no element alone has three bytes).
		var best []string
		bestLen := 0
		consider := func(l []string) {
			if n := shortest(l); n >= 3 && n > bestLen {
				best, bestLen = l, n
			}
		}
		for _, sub := range re.Sub {
			consider(litsOf(sub))
		}
		for _, run := range exactRuns(re) {
			consider(run)
		}
		return best
	case syntax.OpAlternate:
		var out []string
		for _, sub := range re.Sub {
			l := litsOf(sub)
			if len(l) == 0 {
				return nil
			}
			out = append(out, l...)
		}
		return out
	case syntax.OpPlus:
		return litsOf(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return litsOf(re.Sub[0])
		}
	}
	return nil
}

// shortest returns the length of the shortest of l (0 for none).
func shortest(l []string) int {
	if len(l) == 0 {
		return 0
	}
	n := len(l[0])
	for _, x := range l {
		n = min(n, len(x))
	}
	return n
}

// exactRuns returns, for a concatenation, the spellings of each run of its
// elements that spell few exact strings (exactStrings), at least three
// bytes each: every match holds one spelling of every run. A run ends at an
// element that spells too much, or where its spellings would be too many.
func exactRuns(re *syntax.Regexp) [][]string {
	var out [][]string
	var run []string // spellings of the current run; nil: none open
	n := 0           // its elements (one alone is litsOf's already)
	closeRun := func() {
		if n > 1 && shortest(run) >= 3 {
			out = append(out, run)
		}
		run, n = nil, 0
	}
	for _, sub := range re.Sub {
		set, ok := exactStrings(sub)
		switch {
		case !ok:
			closeRun()
		case run == nil:
			run, n = set, 1
		default:
			if longer := crossStrings(run, set); longer != nil {
				run, n = longer, n+1
			} else {
				closeRun()
				run, n = set, 1
			}
		}
	}
	closeRun()
	return out
}

// leadingSpellings returns the spellings of the run of exact parts subs
// begins with (nil when the first part is not exact): every match of the
// concatenation begins with one of them.
func leadingSpellings(subs []*syntax.Regexp) []string {
	var lead []string
	for _, sub := range subs {
		set, ok := exactStrings(sub)
		if !ok {
			break
		}
		if lead == nil {
			lead = set
		} else if longer := crossStrings(lead, set); longer != nil {
			lead = longer
		} else {
			break
		}
	}
	return lead
}

// mostSpellings bounds the strings exactStrings and a run of them spell.
const mostSpellings = 32

// exactStrings returns every string re matches when they are few (at most
// mostSpellings): a literal, a small class, an alternation, an optional
// part or a concatenation of such. ok is false for anything else.
func exactStrings(re *syntax.Regexp) (set []string, ok bool) {
	switch re.Op {
	case syntax.OpEmptyMatch:
		return []string{""}, true
	case syntax.OpLiteral:
		if slices.Contains(re.Rune, utf8.RuneError) {
			return nil, false // U+FFFD also matches each invalid byte
		}
		if re.Flags&syntax.FoldCase == 0 {
			return []string{string(re.Rune)}, true
		}
		set = []string{""}
		for _, r := range re.Rune { // every spelling: each rune's fold orbit
			orbit := []string{string(r)}
			for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
				orbit = append(orbit, string(f))
			}
			if set = crossStrings(set, orbit); set == nil {
				return nil, false
			}
		}
		return set, true
	case syntax.OpCharClass:
		for i := 0; i+1 < len(re.Rune); i += 2 {
			for r := re.Rune[i]; r <= re.Rune[i+1]; r++ {
				if len(set) == mostSpellings || r == utf8.RuneError {
					return nil, false
				}
				set = append(set, string(r))
			}
		}
		return set, len(set) > 0
	case syntax.OpCapture:
		return exactStrings(re.Sub[0])
	case syntax.OpQuest:
		sub, ok := exactStrings(re.Sub[0])
		if !ok || len(sub) == mostSpellings {
			return nil, false
		}
		return append(sub, ""), true
	case syntax.OpAlternate:
		for _, sub := range re.Sub {
			l, ok := exactStrings(sub)
			if !ok || len(set)+len(l) > mostSpellings {
				return nil, false
			}
			set = append(set, l...)
		}
		return set, true
	case syntax.OpConcat:
		set = []string{""}
		for _, sub := range re.Sub {
			l, ok := exactStrings(sub)
			if !ok {
				return nil, false
			}
			if set = crossStrings(set, l); set == nil {
				return nil, false
			}
		}
		return set, true
	}
	return nil, false
}

// crossStrings returns each of a followed by each of b, or nil when they
// are more than mostSpellings.
func crossStrings(a, b []string) []string {
	if len(a)*len(b) > mostSpellings {
		return nil
	}
	out := make([]string, 0, len(a)*len(b))
	for _, x := range a {
		for _, y := range b {
			out = append(out, x+y)
		}
	}
	return out
}

// foldVariants returns, for a case-folded literal, every spelling of its
// longest run of runes that has at most 16 spellings (Unicode simple
// folding, as (?i) matches: "k" is also the Kelvin sign): one of them
// occurs in any text the literal matches. nil when no run of three runes
// has 16 spellings or fewer.
func foldVariants(rs []rune) []string {
	orbit := func(r rune) []rune {
		out := []rune{r}
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			out = append(out, f)
		}
		return out
	}
	const most = 16
	from, to, spellings := 0, 0, 0
	for i := range rs {
		n := 1
		for j := i; j < len(rs); j++ {
			if n *= len(orbit(rs[j])); n > most {
				break
			}
			if k := j + 1 - i; k > to-from || k == to-from && n < spellings {
				from, to, spellings = i, j+1, n
			}
		}
	}
	if to-from < 3 {
		return nil
	}
	out := []string{""}
	for _, r := range rs[from:to] {
		var next []string
		for _, prefix := range out {
			for _, f := range orbit(r) {
				next = append(next, prefix+string(f))
			}
		}
		out = next
	}
	return out
}

// literalSets returns the literal sets of a pattern's concatenated parts:
// a line the pattern matches holds one literal of every set. The
// prefilter finds one set; checking the others with strings.Contains
// before the regex spares it on lines that hold a common word ("engine")
// but not the rest ("died"). From builtinTrees' facts when it has src.
func literalSets(src string) [][]string {
	if f := builtinFacts(src); f != nil {
		return f.sets
	}
	return deriveLiteralSets(src)
}

// deriveLiteralSets is literalSets from the pattern's tree.
func deriveLiteralSets(src string) [][]string {
	re, err := parsePattern(src)
	if err != nil {
		return nil
	}
	var sets [][]string
	var walk func(re *syntax.Regexp)
	walk = func(re *syntax.Regexp) {
		switch re.Op {
		case syntax.OpCapture:
			walk(re.Sub[0])
		case syntax.OpConcat:
			for _, sub := range re.Sub {
				walk(sub)
			}
			sets = append(sets, exactRuns(re)...)
		default:
			if l := litsOf(re); len(l) > 0 {
				sets = append(sets, l)
			}
		}
	}
	walk(re.Simplify())
	if len(sets) < 2 {
		return nil // the prefilter's one set says it all
	}
	return sets
}

// holdsAll reports whether line holds a literal of every set.
func holdsAll(line string, sets [][]string) bool {
	for _, set := range sets {
		if !hasAny(line, set) {
			return false
		}
	}
	return true
}

// anchoredPrefix returns the text every match of src begins with when src
// is anchored at the start of the text ("^(?:\(Worker pid=...": "("), or "".
// A strip regex runs on every line; a prefix check first spares the regex
// call on lines without the prefix, most of them.
func anchoredPrefix(src string) string {
	re, err := parsePattern(src)
	if err != nil {
		return ""
	}
	re = re.Simplify()
	if re.Op != syntax.OpConcat || len(re.Sub) < 2 || re.Sub[0].Op != syntax.OpBeginText {
		return ""
	}
	for re = re.Sub[1]; ; {
		switch {
		case re.Flags&syntax.FoldCase != 0:
			return ""
		case re.Op == syntax.OpLiteral:
			return string(re.Rune)
		case re.Op == syntax.OpCapture || re.Op == syntax.OpPlus || (re.Op == syntax.OpRepeat && re.Min >= 1) ||
			(re.Op == syntax.OpConcat && len(re.Sub) > 0):
			re = re.Sub[0]
		default:
			return ""
		}
	}
}

// startLiterals returns literals of at least 3 bytes one of which every
// match of src starts with (case-sensitive), or nil when there are none.
// From builtinTrees' facts when it has src.
func startLiterals(src string) []string {
	if f := builtinFacts(src); f != nil {
		return f.starts
	}
	return deriveStartLiterals(src)
}

// deriveStartLiterals is startLiterals from the pattern's tree.
func deriveStartLiterals(src string) []string {
	re, err := parsePattern(src)
	if err != nil {
		return nil
	}
	return startsOf(re.Simplify())
}

func startsOf(re *syntax.Regexp) []string {
	if re.Flags&syntax.FoldCase != 0 {
		return nil
	}
	switch re.Op {
	case syntax.OpLiteral:
		if s := string(re.Rune); len(s) >= 3 {
			return []string{s}
		}
	case syntax.OpCapture, syntax.OpPlus:
		return startsOf(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return startsOf(re.Sub[0])
		}
	case syntax.OpConcat:
		// The spellings of the leading parts that spell few strings
		// ("[Ii]nsufficient", "(?:CUDA|HIP) out of memory"), as far as
		// they stay few; else the first part's own.
		if lead := leadingSpellings(re.Sub); shortest(lead) >= 3 {
			return lead
		}
		if len(re.Sub) > 0 {
			return startsOf(re.Sub[0])
		}
	case syntax.OpAlternate:
		var out []string
		for _, sub := range re.Sub {
			l := startsOf(sub)
			if l == nil {
				return nil
			}
			out = append(out, l...)
		}
		return out
	}
	return nil
}

func hasAny(line string, lits []string) bool {
	if len(lits) == 0 {
		return true
	}
	for _, l := range lits {
		if strings.Contains(line, l) {
			return true
		}
	}
	return false
}
