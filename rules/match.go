package rules

import (
	"math/bits"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/llmfleet/analyzer/domain"
)

// HasChildren reports whether another engine extends e (so an attempt of e
// may turn out to be one of them).
func (e *Engine) HasChildren() bool { return e != nil && len(e.children) > 0 }

// Parent returns the engine e extends, or "".
func (e *Engine) Parent() string {
	if e == nil {
		return ""
	}
	return e.Extends
}

// Engine returns the profile of the named engine, or nil.
func (s *Set) Engine(name string) *Engine { return s.byName[name] }

// Engines returns the engine profiles in file order.
func (s *Set) Engines() []*Engine { return s.engines }

// Rules returns every rule in file order.
func (s *Set) Rules() []*Rule { return s.all }

// Detect returns the engine a line identifies and the version it states.
func (s *Set) Detect(line string) (engine, version string, ok bool) {
	return s.DetectLine(s.NewLine(line))
}

// DetectLine is Detect on a prepared line.
func (s *Set) DetectLine(l *Line) (engine, version string, ok bool) {
	engine, version, _, ok = s.DetectWeighted(l)
	return engine, version, ok
}

// Banner reports whether the line starts a new boot of any engine (plain
// text segmentation) and which.
func (s *Set) Banner(line string) (string, bool) {
	return s.BannerLine(s.NewLine(line))
}

// BannerLine is Banner on a prepared line.
func (s *Set) BannerLine(l *Line) (string, bool) {
	l = s.pre.line(l)
	for _, e := range s.engines {
		for i, re := range e.banner {
			if l.may(e.bannerIDs[i]) && l.matchNear(e.bannerIDs[i], re) {
				return e.Name, true
			}
		}
	}
	return "", false
}

// Strip removes the engine's per-process prefixes from a line.
func (e *Engine) Strip(line string) string {
	if e == nil {
		return line
	}
	return line[e.StripLen(line):]
}

// StripLine is Strip on a prepared line, in place.
func (e *Engine) StripLine(l *Line) {
	if e != nil {
		l.narrow(e.StripLen(l.Text))
	}
}

// StripLen is the length of the prefixes Strip removes from line.
func (e *Engine) StripLen(line string) int {
	n := 0
	for i, re := range e.strip {
		if i < len(e.stripPre) && !strings.HasPrefix(line[n:], e.stripPre[i]) {
			continue
		}
		if i < len(e.stripDFA) {
			if k, ok, decided := e.stripDFA[i].match(line[n:]); decided {
				if ok {
					n += k
				}
				continue
			}
		}
		if loc := re.FindStringIndex(line[n:]); loc != nil && loc[0] == 0 {
			n += loc[1]
		}
	}
	return n
}

// Phase returns the phase a line moves the attempt into. forwardOnly
// markers must not move an attempt backwards.
func (e *Engine) Phase(line string, reachedReady bool) (p domain.Phase, forwardOnly, ok bool) {
	if e == nil {
		return "", false, false
	}
	return e.PhaseLine(e.pre.newLine(line), reachedReady)
}

// PhaseLine is Phase on a prepared line.
func (e *Engine) PhaseLine(l *Line, reachedReady bool) (p domain.Phase, forwardOnly, ok bool) {
	return e.PhaseLineIn(l, reachedReady, "")
}

// PhaseLineIn is PhaseLine for an attempt in phase current (other than
// ready, whose marker lines are also readiness evidence). Once the engine
// is ready a marker into current changes nothing, so when the candidates
// left all lead there their regexes need not run (on a serving journal
// every request line is a candidate of the serving markers); ok is then
// false. Before readiness such a marker is reported: it is where the boot
// got to.
func (e *Engine) PhaseLineIn(l *Line, reachedReady bool, current domain.Phase) (p domain.Phase, forwardOnly, ok bool) {
	if e == nil {
		return "", false, false
	}
	l = e.pre.line(l)
	if !l.anyOf(e.phaseIDs) {
		return "", false, false
	}
	for i := range e.phases {
		m := &e.phases[i]
		if m.afterReady && !reachedReady {
			continue
		}
		if !l.may(m.id) {
			continue
		}
		if current != "" && m.phase == current && reachedReady && !e.otherPhaseAfter(l, i) {
			return "", false, false
		}
		if m.alts != nil && matchAlts(l, m.alts) || m.alts == nil && l.matchNear(m.id, m.re) {
			return m.phase, m.forwardOnly, true
		}
	}
	return "", false, false
}

// otherPhaseAfter reports whether a marker after the i-th, into another
// phase than the i-th's, is a candidate for l. It is asked once the engine
// is ready, so the markers of after_ready phases count. On a serving
// journal it is asked for nearly every line.
func (e *Engine) otherPhaseAfter(l *Line, i int) bool {
	return l.anyOf(e.phases[i].others)
}

// markIDs sets the idSets of e's loops (phases, each marker's others,
// shape), once the ids are registered and the parent's markers copied.
func (e *Engine) markIDs() {
	ms := e.phases
	ids := make([]int, 0, len(ms))
	for i := range ms {
		ids = ids[:0]
		for _, o := range ms[i+1:] {
			if o.phase != ms[i].phase {
				ids = append(ids, o.id)
			}
		}
		ms[i].others = newIDSet(ids)
	}
	ids = ids[:0]
	for _, m := range ms {
		ids = append(ids, m.id)
	}
	e.phaseIDs = newIDSet(ids)
	ids = ids[:0]
	for _, sl := range e.shape {
		ids = append(ids, sl.id)
	}
	e.shapeIDs = newIDSet(ids)
}

// IsReadyEvidence reports whether a line is worth quoting as evidence of a
// ready attempt.
func (e *Engine) IsReadyEvidence(line string) bool {
	if e == nil {
		return false
	}
	return e.IsReadyEvidenceLine(e.pre.newLine(line))
}

// IsReadyEvidenceLine is IsReadyEvidence on a prepared line.
func (e *Engine) IsReadyEvidenceLine(l *Line) bool {
	if e == nil {
		return false
	}
	l = e.pre.line(l)
	for i, re := range e.readyEv {
		if !l.may(e.readyIDs[i]) {
			continue
		}
		if alts := e.readyAlts[i]; alts != nil && matchAlts(l, alts) || alts == nil && l.matchNear(e.readyIDs[i], re) {
			return true
		}
	}
	return false
}

// UpdateShape sets the shape keys a line reports. It returns whether any
// key was set.
func (e *Engine) UpdateShape(line string, shape domain.Shape) bool {
	if e == nil {
		return false
	}
	return e.UpdateShapeLine(e.pre.newLine(line), shape)
}

// UpdateShapeLine is UpdateShape on a prepared line.
func (e *Engine) UpdateShapeLine(l *Line, shape domain.Shape) bool {
	if e == nil {
		return false
	}
	l = e.pre.line(l)
	if !l.anyOf(e.shapeIDs) {
		return false
	}
	line := l.Text
	changed := false
	for i := range e.shape {
		sl := &e.shape[i]
		if !l.may(sl.id) {
			continue
		}
		if !l.mayMatchNear(sl.id, sl.re) {
			continue
		}
		m := submatches(line, search(l, sl.re, sl.startID, line))
		if m == nil {
			continue
		}
		for key, v := range sl.set {
			shape.Set(key, v)
			changed = true
		}
		if sl.parse != "" {
			raw := m[sl.re.SubexpIndex(sl.from)]
			var kv map[string]any
			switch sl.parse {
			case "pydict":
				kv = parsePyDict(raw, sl.keys)
			case "pyargs":
				kv = parsePyArgs(raw, sl.keys)
			case "kv":
				kv = parseKV(raw)
			}
			for name, key := range sl.keys {
				if v, ok := kv[name]; ok {
					shape.Set(key, normalizeValue(key, v))
					changed = true
				}
			}
			continue
		}
		for i, name := range sl.re.SubexpNames() {
			if name == "" || m[i] == "" {
				continue
			}
			key := name
			if k, ok := sl.keys[name]; ok {
				key = k
			}
			shape.Set(key, normalizeValue(key, m[i]))
			changed = true
		}
	}
	return changed
}

// ApplyDefaults fills shape keys the engine never printed.
func (e *Engine) ApplyDefaults(shape domain.Shape) {
	if e == nil {
		return
	}
	for k, v := range e.Defaults {
		if _, ok := shape[k]; !ok {
			shape.Set(k, normalizeValue(k, v))
		}
	}
}

// SeqState is one attempt's state of the line rules that keep one, by rule
// id: whether a sequence rule (After/Until) is armed, and a count rule's
// count. Every attempt starts with an empty SeqState{}; the matcher adds
// what it needs.
type SeqState map[string]*ruleState

// ruleState is one rule's state in one attempt.
type ruleState struct {
	// armed: a sequence rule saw its After line and no Until since.
	armed bool
	// fired: a count rule reached its count; it fires once per attempt.
	fired bool
	// n is the number of lines counted (a count without within or
	// distinct).
	n int
	// times are the timestamps of the counted lines still inside the
	// window (a count with within, without distinct); fewer than gte.
	times []time.Time
	// values are the distinct values counted, each with the latest time it
	// was seen (a count with distinct); fewer than gte.
	values map[string]time.Time
}

// get returns the state of rule id, creating it.
func (s SeqState) get(id string) *ruleState {
	st := s[id]
	if st == nil {
		st = &ruleState{}
		s[id] = st
	}
	return st
}

// Hit is one rule firing on a line.
type Hit struct {
	Rule     *Rule
	Captures map[string]string
	// At and End are the byte offsets of the match in the line
	// (line[At:End] is the matched text).
	At, End int
}

// sourceLine matches Python source quoted in a traceback ("raise
// RuntimeError(f\"NCCL error: {error_str}\")"): it names an error without
// being one, so no rule may fire on it.
var sourceLine = regexp.MustCompile(`(?:^|\] )\s*(?:raise|return|assert|except|if|elif)\s|\{[A-Za-z_][A-Za-z_0-9.]*\}`)

// isSourceLine is sourceLine.MatchString without the regex, which is slow on
// long traceback lines (TestIsSourceLine keeps them equal).
func isSourceLine(line string) bool {
	if startsStatement(line) {
		return true
	}
	for i := 0; ; {
		j := strings.Index(line[i:], "] ")
		if j < 0 {
			break
		}
		i += j + 2
		if startsStatement(line[i:]) {
			return true
		}
	}
	for i := 0; ; {
		j := strings.IndexByte(line[i:], '{')
		if j < 0 {
			return false
		}
		i += j + 1
		k := i
		for k < len(line) && (isIdentByte(line[k]) || (k > i && (line[k] == '.' || (line[k] >= '0' && line[k] <= '9')))) {
			k++
		}
		if k > i && k < len(line) && line[k] == '}' {
			return true
		}
	}
}

// startsStatement: \s*(?:raise|return|assert|except|if|elif)\s at the start.
func startsStatement(s string) bool {
	for len(s) > 0 && IsRESpace(s[0]) {
		s = s[1:]
	}
	for _, kw := range [...]string{"raise", "return", "assert", "except", "if", "elif"} {
		if len(s) > len(kw) && s[:len(kw)] == kw && IsRESpace(s[len(kw)]) {
			return true
		}
	}
	return false
}

// IsRESpace reports whether c is in RE2's \s, [\t\n\f\r ] (the regexp
// package's; not \v), for readers that stand in for a regexp.
func IsRESpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r' }

func isIdentByte(c byte) bool { return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') }

// MatchLine evaluates the line rules of env.Engine (and the unscoped ones)
// on one line of the attempt whose state is seq. Every rule is evaluated
// (all-matches semantics). An expr runtime error counts as no match. Quoted
// source lines never match. A count rule hits once per attempt, on the line
// that brings its count to gte (env.Time places the line in its window).
func (s *Set) MatchLine(env *LineEnv, seq SeqState) []Hit {
	return s.MatchPrepared(s.NewLine(env.Line), env, seq)
}

// MatchPrepared is MatchLine with env.Line prepared as l (l.Text must be
// env.Line).
func (s *Set) MatchPrepared(l *Line, env *LineEnv, seq SeqState) []Hit {
	return s.matchVisit(s.ruleVisits[env.Engine], s.pre.line(l), env, seq)
}

// LineRules are the line rules of one engine (and the unscoped ones) as
// the matcher walks them: MatchPrepared looks them up per line, a caller
// that judges many lines of one engine (the judge) once per engine.
type LineRules struct {
	set   *Set
	visit *ruleVisit // nil: an engine no profile names, which has no rules either
}

// LineRules returns the line rules of engine ("" for lines of no known
// engine).
func (s *Set) LineRules(engine string) LineRules {
	return LineRules{set: s, visit: s.ruleVisits[engine]}
}

// Match is MatchPrepared on the engine's rules: env.Line prepared as l,
// env.Engine the engine they were looked up for.
func (v LineRules) Match(l *Line, env *LineEnv, seq SeqState) []Hit {
	return v.set.matchVisit(v.visit, v.set.pre.line(l), env, seq)
}

// Step runs r alone on env.Line, not prepared (rule tests, which judge
// with one rule: judge.Options.Only), with the attempt's sequence state
// seq: its sequence (after/until), match, conditions and count.
func (r *Rule) Step(env *LineEnv, seq SeqState) (Hit, bool) {
	return r.step(nil, env, seq, &matchCache{})
}

// OnUsage reports whether r reads usage_text: such rules, and only they,
// run on the first line of an argument parser's usage block.
func (r *Rule) OnUsage() bool { return r.onUsage }

// Fallback is the profile of attempts no engine profile claims.
func (s *Set) Fallback() *Engine { return s.fallback }

// matchVisit is MatchPrepared with env.Engine's ruleVisit v (nil: an
// engine no profile names, which has no rules either) and l scanned by s.
func (s *Set) matchVisit(v *ruleVisit, l *Line, env *LineEnv, seq SeqState) []Hit {
	if v == nil {
		return nil
	}
	var hits []Hit
	var c matchCache
	// The rules whose literals the line has, and those with a sequence or
	// a count, in lineRules' order (ruleVisit).
	for i := range v.passes {
		ps := &v.passes[i]
		for w, m := range ps.mask {
			b := l.cand[w]&m | ps.always[w]
			for b != 0 {
				r := s.byMatchID[w*64+bits.TrailingZeros64(b)]
				b &= b - 1
				if r.after == nil && r.count == nil {
					// Most rules: no state, no call to step.
					if h, ok := r.matchLine(l, env, &c); ok {
						hits = append(hits, h)
					}
					continue
				}
				if h, ok := r.step(l, env, seq, &c); ok {
					hits = append(hits, h)
				}
			}
		}
	}
	return hits
}

// step runs r on one line of an attempt whose state is seq: its sequence
// (After/Until), its match and conditions, then its count. l is env.Line
// prepared by r's set, or nil (rule tests: the literals are then looked for
// in env.Line).
func (r *Rule) step(l *Line, env *LineEnv, seq SeqState, c *matchCache) (Hit, bool) {
	var st *ruleState
	if r.after != nil {
		st = seq[r.ID]
		if r.until != nil && st != nil && st.armed && l.mayMatch(r.untilID, r.untilLits, env.Line) && r.until.MatchString(env.Line) {
			// Until cancels the sequence and what it counted.
			st.armed = false
			st.n, st.times, st.values = 0, nil, nil
		}
		if l.mayMatch(r.afterID, r.afterLits, env.Line) && r.after.MatchString(env.Line) {
			if st == nil {
				st = seq.get(r.ID)
			}
			st.armed = true
			return Hit{}, false
		}
		if st == nil || !st.armed {
			return Hit{}, false
		}
	}
	if !l.mayMatch(r.matchID, r.literals, env.Line) {
		return Hit{}, false
	}
	if r.count == nil {
		return r.matchLine(l, env, c)
	}
	if st == nil {
		st = seq.get(r.ID)
	}
	if st.fired {
		return Hit{}, false
	}
	h, ok := r.matchLine(l, env, c)
	if !ok {
		return Hit{}, false
	}
	return r.count.add(st, h, env.Time)
}

// mayMatch is l.may(id); with no prepared line (rule tests) it is whether
// text holds one of lits.
func (l *Line) mayMatch(id int, lits []string, text string) bool {
	if l == nil {
		return hasAny(text, lits)
	}
	return l.may(id)
}

// add counts the hit h, on a line at time t, into the rule's state st. It
// reports whether the count reached gte; the hit then carries the count as
// its capture "count", and st stops counting (the rule has fired for the
// attempt).
func (k *counting) add(st *ruleState, h Hit, t time.Time) (Hit, bool) {
	var n int
	switch {
	case k.distinct != "":
		v, ok := h.Captures[k.distinct]
		if !ok {
			return Hit{}, false // no value to count (Sigma value_count skips it too)
		}
		if st.values == nil {
			st.values = map[string]time.Time{}
		}
		if k.within > 0 {
			for x, at := range st.values {
				if !k.inside(at, t) {
					delete(st.values, x)
				}
			}
		}
		if old, seen := st.values[v]; !seen || newer(t, old) {
			st.values[v] = t
		}
		n = len(st.values)
	case k.within > 0:
		keep := st.times[:0]
		for _, at := range st.times {
			if k.inside(at, t) {
				keep = append(keep, at)
			}
		}
		st.times = append(keep, t)
		n = len(st.times)
	default:
		st.n++
		n = st.n
	}
	if n < k.gte {
		return Hit{}, false
	}
	st.fired = true
	st.times, st.values = nil, nil
	h.Captures["count"] = strconv.Itoa(n)
	return h, true
}

// inside reports whether a line counted at time at is still inside the
// window of a line at time t: at most within older. A line without a
// timestamp is inside every window, and so is one later than t (entries
// out of order).
func (k *counting) inside(at, t time.Time) bool {
	return at.IsZero() || t.IsZero() || t.Sub(at) <= k.within
}

// newer reports whether a value seen at a stays in windows longer than one
// seen at b (no timestamp stays forever).
func newer(a, b time.Time) bool {
	if b.IsZero() {
		return false
	}
	return a.IsZero() || a.After(b)
}

// matchCache holds what the rules judging one line share: the last match
// (rules with the same pattern share its regexp) and whether the line is
// quoted source.
type matchCache struct {
	re     *lazyRegexp
	m      []int
	source int8 // 0 unknown, 1 no, 2 yes
}

// matchLine runs r on a line its prefilter let through (l, when not nil,
// is env.Line prepared by r's set).
func (r *Rule) matchLine(l *Line, env *LineEnv, c *matchCache) (Hit, bool) {
	if c.source == 2 {
		return Hit{}, false
	}
	if r.when != nil {
		w := r.when.compiled()
		for _, g := range w.guards {
			if !g(env) {
				return Hit{}, false
			}
		}
		if r.whenFirst {
			env.Captures = nil
			if !w.holds(env) {
				return Hit{}, false
			}
		}
	}
	m := c.m
	if c.re != r.match {
		m = r.find(l, env.Line)
		c.re, c.m = r.match, m
	}
	if m == nil {
		return Hit{}, false
	}
	if c.source == 0 {
		c.source = 1
		if isSourceLine(env.Line) {
			c.source = 2
			return Hit{}, false
		}
	}
	for _, u := range r.unless {
		if u.MatchString(env.Line) {
			return Hit{}, false
		}
	}
	caps := map[string]string{}
	for i, name := range r.match.SubexpNames() {
		if name != "" && m[2*i] >= 0 && m[2*i+1] > m[2*i] {
			caps[name] = env.Line[m[2*i]:m[2*i+1]]
		}
	}
	if r.when != nil && !r.whenFirst {
		env.Captures = caps
		if !r.when.holds(env) {
			return Hit{}, false
		}
	}
	return Hit{Rule: r, Captures: caps, At: m[0], End: m[1]}, true
}

// find is r.match.FindStringSubmatchIndex(line). When every match of the
// pattern starts with one of its start literals, the search begins at the
// first of them the prefilter found: the regex then skips the part of a long
// traceback line before it, the same answer with less work.
func (r *Rule) find(l *Line, line string) []int {
	if r.alts != nil {
		return findAlts(l, r.alts, line)
	}
	if !l.holds(r.setIDs, r.sets, line) || !l.mayMatchText(r.matchID, r.match, line) {
		return nil
	}
	return search(l, r.match, r.startID, line)
}

// findAlts is FindStringSubmatchIndex of the alternation of alts: the
// leftmost match of any alternative, the first alternative on a tie
// (leftmost-first, as the whole regex). l may be nil (rule tests).
func findAlts(l *Line, alts []alt, line string) []int {
	var best []int
	for i := range alts {
		a := &alts[i]
		if l != nil && !l.may(a.id) || l == nil && !hasAny(line, a.lits) {
			continue
		}
		var loc []int
		if a.re == nil {
			if k := strings.Index(line, a.lits[0]); k >= 0 {
				loc = []int{k, k + len(a.lits[0])}
			}
		} else if a.mayMatch(l, line) {
			loc = a.re.FindStringSubmatchIndex(line)
		}
		if loc != nil && (best == nil || loc[0] < best[0]) {
			best = loc
			if best[0] == 0 {
				break
			}
		}
	}
	return best
}

// MatchAt returns the byte offset in line where r's match starts, or -1
// (for an end rule or no match). It ignores r's other conditions.
func (r *Rule) MatchAt(line string) int {
	if r.match == nil {
		return -1
	}
	if m := r.match.FindStringIndex(line); m != nil {
		return m[0]
	}
	return -1
}

// search is re.FindStringSubmatchIndex(line), begun at the first literal of
// start set k (see Rule.find) when l is not nil and k is not -1.
func search(l *Line, re *lazyRegexp, k int, line string) []int {
	from := 0
	if l != nil && k >= 0 {
		if from = l.first(k); from < 0 {
			return nil // no start literal, no match
		}
	}
	m := re.FindStringSubmatchIndex(line[from:])
	if m != nil && from > 0 {
		for i := range m {
			if m[i] >= 0 {
				m[i] += from
			}
		}
	}
	return m
}

// submatches turns FindStringSubmatchIndex's answer into
// FindStringSubmatch's.
func submatches(line string, m []int) []string {
	if m == nil {
		return nil
	}
	out := make([]string, len(m)/2)
	for i := range out {
		if m[2*i] >= 0 {
			out[i] = line[m[2*i]:m[2*i+1]]
		}
	}
	return out
}

// MatchEnd evaluates the end rules on an ended attempt.
func (s *Set) MatchEnd(env *EndEnv) []*Rule {
	var out []*Rule
	for _, r := range s.endRules {
		if len(r.Engines) > 0 && !slices.Contains(r.Engines, env.Engine) {
			continue
		}
		if r.when != nil && r.when.holds(env) {
			out = append(out, r)
		}
	}
	return out
}

// DetectWeighted returns the first engine (in detection priority order) a
// line identifies, the version it states and the weight of its evidence.
func (s *Set) DetectWeighted(l *Line) (engine, version string, weight int, ok bool) {
	l = s.pre.line(l)
	if !l.anyOf(s.detectIDs) {
		return "", "", 0, false
	}
	line := l.Text
	for _, e := range s.engines {
		for i, re := range e.detect {
			if !l.may(e.detectIDs[i]) {
				continue
			}
			if _, ok, decided := e.detectDFA[i].match(line); decided {
				if !ok {
					continue
				}
				if re.NumSubexp() == 0 {
					return e.Name, "", e.detectW[i], true
				}
			}
			if re.NumSubexp() == 0 {
				// Nothing to capture: matching alone is cheaper.
				if l.matchNear(e.detectIDs[i], re) {
					return e.Name, "", e.detectW[i], true
				}
				continue
			}
			if !l.mayMatchNear(e.detectIDs[i], re) {
				continue
			}
			m := re.FindStringSubmatchIndex(line)
			if m == nil {
				continue
			}
			if k := re.SubexpIndex("engine_version"); k >= 0 && m[2*k] >= 0 {
				version = line[m[2*k]:m[2*k+1]]
			}
			return e.Name, version, e.detectW[i], true
		}
	}
	return "", "", 0, false
}

// FatalLine reports whether l is a death line of the shared fatal
// vocabulary, and the exit status it states (-1: none).
func (s *Set) FatalLine(l *Line) (exit int, ok bool) {
	l = s.pre.line(l)
	if !l.anyOf(s.fatalIDs) {
		return -1, false
	}
	for i := range s.fatal {
		f := &s.fatal[i]
		if !l.may(f.id) {
			continue
		}
		if f.alts != nil {
			if matchAlts(l, f.alts) {
				return -1, true
			}
			continue
		}
		if f.exit < 0 {
			// No exit status to capture: matching alone is cheaper.
			if l.matchNear(f.id, f.re) {
				return -1, true
			}
			continue
		}
		if !l.mayMatchNear(f.id, f.re) {
			continue
		}
		m := f.re.FindStringSubmatch(l.Text)
		if m == nil {
			continue
		}
		exit = -1
		if f.exit >= 0 && m[f.exit] != "" {
			if n, err := strconv.Atoi(m[f.exit]); err == nil {
				exit = n
			}
		}
		return exit, true
	}
	return -1, false
}
