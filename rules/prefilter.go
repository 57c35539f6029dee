package rules

import "strings"

// prefilter finds in one Aho-Corasick pass which of the set's literals
// occur in a line, hence which matchers (detect, banner, phase, shape and
// ready-evidence patterns, rule match/after/until) may match it: only those
// run their regex. A matcher needs one of its literals (case-sensitive);
// one without literals runs on every line.
type prefilter struct {
	ac     *acAutomaton     // nil when the set has no literals
	users  [][]int32        // literal id → matchers that need it
	always []uint64         // bitset of the matchers without literals
	litID  map[string]int32 // built at Load, then unused
	sets   []pendingSets    // addSets' sets, until build
	n      int              // matchers
	starts [][]int32        // literal id → start sets holding it
	nstart int              // start sets
	kind   []uint8          // literal id → wordError | wordMatters
	span   []int32          // matcher id → matchSpan of its regex
	stops  []byteSet        // matcher id → stopBytes of its regex
}

// pendingSets are literal sets and where their ids go (addSets).
type pendingSets struct {
	ids  []int
	sets [][]string
}

// Kinds of literal the prefilter finds besides the matchers': words of
// looksLikeError and of mayMatter.
const (
	wordError uint8 = 1 << iota
	wordMatters
)

// literal returns the id of literal l, registering it when new.
func (p *prefilter) literal(l string) int32 {
	li, ok := p.litID[l]
	if !ok {
		if p.litID == nil {
			p.litID = map[string]int32{}
		}
		li = int32(len(p.users))
		p.litID[l] = li
		p.users = append(p.users, nil)
		p.starts = append(p.starts, nil)
	}
	return li
}

// startSet registers the start literals of re, if it has any, and returns
// the start set's id (-1 when none).
func (p *prefilter) startSet(re *lazyRegexp) int {
	if lits := startLiterals(re.String()); lits != nil {
		return p.addStarts(lits)
	}
	return -1
}

// addStarts registers a start set (literals one of which begins every
// match of a pattern) and returns its id, for Line.first.
func (p *prefilter) addStarts(lits []string) int {
	id := p.nstart
	p.nstart++
	for _, l := range lits {
		li := p.literal(l)
		p.starts[li] = append(p.starts[li], int32(id))
	}
	return id
}

// add registers a matcher needing one of lits, whose regex is re (nil:
// the literal itself), and returns its id.
func (p *prefilter) add(lits []string, re *lazyRegexp) int {
	id := p.n
	p.n++
	span, stops := windowBounds(re)
	p.span, p.stops = append(p.span, int32(span)), append(p.stops, stops)
	for len(p.always)*64 < p.n {
		p.always = append(p.always, 0)
	}
	if len(lits) == 0 {
		p.always[id/64] |= 1 << (id % 64)
		return id
	}
	for _, l := range lits {
		if l == "" { // matches every line
			p.always[id/64] |= 1 << (id % 64)
			continue
		}
		li := p.literal(l)
		p.users[li] = append(p.users[li], int32(id))
	}
	return id
}

// addAlts registers the alternatives of one pattern.
func (p *prefilter) addAlts(alts []alt) {
	for i := range alts {
		alts[i].id = p.add(alts[i].lits, alts[i].gated())
		alts[i].setIDs = p.addSets(alts[i].sets)
	}
}

// addSets returns the prefilter matcher ids of sets (see literalSets), -1
// each until build: a set whose literals the automaton finds for other
// matchers then becomes a matcher with no regex (one per distinct set),
// and Line.holds answers it from the scan already made instead of
// searching the line for each literal. A set with a literal of its own
// stays -1, searched for: adding those literals to the automaton made
// every line's scan slower than the searches it saved.
func (p *prefilter) addSets(sets [][]string) []int {
	if len(sets) == 0 {
		return nil
	}
	ids := make([]int, len(sets))
	for i := range ids {
		ids[i] = -1
	}
	p.sets = append(p.sets, pendingSets{ids, sets})
	return ids
}

// resolveSets gives the sets addSets took their ids, once every literal
// of the automaton is registered.
func (p *prefilter) resolveSets() {
	setID := map[string]int{}
	for _, ps := range p.sets {
	next:
		for i, set := range ps.sets {
			for _, l := range set {
				if _, ok := p.litID[l]; !ok {
					continue next
				}
			}
			key := strings.Join(set, "\x00")
			id, ok := setID[key]
			if !ok {
				id = p.add(set, nil)
				setID[key] = id
			}
			ps.ids[i] = id
		}
	}
	p.sets = nil
}

// build compiles the automaton over the registered literals, the
// errorWords and the mayMatterWords, so the same pass also tells whether a
// line looks like an error (Line.LooksLikeError) and whether the exception
// reader needs it (Line.MayMatter).
func (p *prefilter) build() {
	for _, k := range []struct {
		words []string
		kind  uint8
	}{{errorWords, wordError}, {mayMatterWords, wordMatters}} {
		for _, w := range k.words {
			li := p.literal(w)
			for int(li) >= len(p.kind) {
				p.kind = append(p.kind, 0)
			}
			p.kind[li] |= k.kind
		}
	}
	p.resolveSets()
	for len(p.kind) < len(p.users) {
		p.kind = append(p.kind, 0)
	}
	pats := make([]string, len(p.users))
	for l, i := range p.litID {
		pats[i] = l
	}
	p.litID = nil
	if len(pats) > 0 {
		p.ac = builtinAC(pats)
	}
}

// Line is one line prepared for the matchers: the set's literals that occur
// in it, found in one pass, so each matcher runs its regex only when one of
// its literals is there. Text is what the matchers see; Engine.StripLine
// narrows it to a suffix without scanning again. A Line may be reused with
// Set.Prepare; it is not safe for concurrent use.
type Line struct {
	Text string
	pre  *prefilter
	off  int // Text is the scanned line from byte off on
	hits []acMatch
	cand []uint64 // matchers that may match Text
}

// NewLine scans text for the set's literals.
func (s *Set) NewLine(text string) *Line { return s.pre.newLine(text) }

func (p *prefilter) newLine(text string) *Line {
	l := &Line{}
	p.scan(l, text)
	return l
}

// Prepare scans text into l, reusing l's memory.
func (s *Set) Prepare(l *Line, text string) { s.pre.scan(l, text) }

func (p *prefilter) scan(l *Line, text string) {
	l.Text, l.pre, l.off, l.hits = text, p, 0, l.hits[:0]
	if p.ac != nil {
		l.hits = p.ac.findAll(l.hits, text)
	}
	l.cand = append(l.cand[:0], p.always...)
	p.mark(l)
}

// mark sets the candidates of the literals found at or after l.off.
func (p *prefilter) mark(l *Line) {
	for _, h := range l.hits {
		if h.Start < l.off {
			continue
		}
		for _, m := range p.users[h.Lit] {
			l.cand[m/64] |= 1 << (m % 64)
		}
	}
}

// line returns l as scanned by p: l itself, or a new scan when l comes
// from another rule set (the tracker's rules were swapped).
func (p *prefilter) line(l *Line) *Line {
	if l.pre == p {
		return l
	}
	n := &Line{}
	p.scan(n, l.Text)
	return n
}

// narrow drops the first k bytes of l.Text (a stripped prefix): literals
// found only there no longer count.
func (l *Line) narrow(k int) {
	if k == 0 {
		return
	}
	l.Text = l.Text[k:]
	l.off += k
	stale := false
	for _, h := range l.hits {
		if h.Start < l.off {
			stale = true
			break
		}
	}
	if stale {
		l.cand = append(l.cand[:0], l.pre.always...)
		l.pre.mark(l)
	}
}

// LooksLikeError is looksLikeError(l.Text), from the scan already made.
func (l *Line) LooksLikeError() bool {
	if l.pre.ac == nil {
		return looksLikeError(l.Text)
	}
	return l.has(wordError)
}

// MayMatter is mayMatter(l.Text), from the scan already made.
func (l *Line) MayMatter() bool {
	if l.pre.ac == nil {
		return mayMatter(l.Text)
	}
	return l.has(wordMatters) || mayMatterShapes(l.Text)
}

// has tells whether a literal of kind k occurs in l.Text.
func (l *Line) has(k uint8) bool {
	for _, h := range l.hits {
		if h.Start >= l.off && l.pre.kind[h.Lit]&k != 0 {
			return true
		}
	}
	return false
}

// first returns the offset in l.Text of the first literal of start set k,
// or -1 when none occurs there.
func (l *Line) first(k int) int {
	best := -1
	for _, h := range l.hits {
		if h.Start < l.off || (best >= 0 && h.Start >= best) {
			continue
		}
		for _, s := range l.pre.starts[h.Lit] {
			if int(s) == k {
				best = h.Start
				break
			}
		}
	}
	if best < 0 {
		return -1
	}
	return best - l.off
}

// holds is holdsAll(text, sets), where ids are the sets' matcher ids
// (addSets): from the scan when text is l.Text and a set has an id, else
// by searching text (l nil: rule tests; a text that is not the scanned
// line's).
func (l *Line) holds(ids []int, sets [][]string, text string) bool {
	if l == nil || text != l.Text || len(ids) != len(sets) {
		return holdsAll(text, sets)
	}
	for i, id := range ids {
		if id >= 0 && !l.may(id) || id < 0 && !hasAny(text, sets[i]) {
			return false
		}
	}
	return true
}

// may reports whether matcher id may match l.
func (l *Line) may(id int) bool { return l.cand[id/64]&(1<<(id%64)) != 0 }

// idSet is a set of matcher ids as words of Line.cand, from word from on.
// A loop over many matchers tests its idSet first: on most lines none is
// a candidate, and the loop then reads a word or two instead of every
// matcher's struct.
type idSet struct {
	words []uint64
	from  int
}

// newIDSet returns the set of ids (none negative).
func newIDSet(ids []int) idSet {
	if len(ids) == 0 {
		return idSet{}
	}
	lo, hi := ids[0]/64, ids[0]/64
	for _, id := range ids {
		lo, hi = min(lo, id/64), max(hi, id/64)
	}
	s := idSet{words: make([]uint64, hi-lo+1), from: lo}
	for _, id := range ids {
		s.words[id/64-lo] |= 1 << (id % 64)
	}
	return s
}

// anyOf reports whether a matcher of s may match l.
func (l *Line) anyOf(s idSet) bool {
	for k, w := range s.words {
		if l.cand[s.from+k]&w != 0 {
			return true
		}
	}
	return false
}
