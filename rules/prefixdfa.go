package rules

import (
	"encoding/binary"
	"math/bits"
	"regexp"
	"regexp/syntax"
	"slices"
	"sync"
	"sync/atomic"
	"unicode"
)

// prefixDFA answers "how long is the match of this regexp at the start of
// the text" for the strip patterns (a process prefix on every line of an
// engine's output) without running the regexp package per line: make bench
// showed ~0.3-0.4 µs per call there however short the match, a tenth of a
// serving journal's time per line.
//
// It is the regexp's own program (regexp/syntax, as regexp.Compile builds
// it) turned into a DFA over ASCII bytes, with the states holding the
// program's threads in priority order as RE2's DFA does, so that the match
// is the one regexp's leftmost-first semantics picks. A text with a byte
// above 0x7f where the match could still go on is not decided: the caller
// runs the regexp.
//
// A state's transitions are built when a text first reaches it, as RE2's
// DFA does: building every state ahead of time was a tenth of a short
// command's CPU (package initialization and rule loading), for states most
// runs never reach. A DFA is shared between goroutines: transitions are
// read and written atomically, new states are published before any
// transition leads to them, and building takes mu. One that turns out to need more than maxDFAStates states or
// dfaBudget steps, or meets an assertion it cannot decide, is failed: it
// decides nothing from then on.
type prefixDFA struct {
	table  atomic.Pointer[dfaTable] // the states built so far; state 0 is the start
	failed atomic.Bool
	class  [128]uint8 // each ASCII byte's class (byteClasses)

	mu   sync.Mutex
	b    *dfaBuilder // guarded by mu
	reps []rune      // one byte of each class
}

// dfaTable is a DFA's states as match reads them: where state s leads on
// ASCII byte c is next[s<<7|c] (dfaDead: nowhere; dfaUnknown: not built
// yet), read and written atomically; flags[s] says whether the text read
// so far is a match (dfaMatch) and whether some thread can still read a
// byte (dfaAlive). A table with more states shares its prefix with the
// ones before, or is a copy of it (when the arrays grew): a transition
// built after the copy reads as dfaUnknown in the old one, whose reader
// then asks transition and takes the new table.
type dfaTable struct {
	next  []int32
	flags []uint8
}

const (
	dfaMatch = 1 << iota
	dfaAlive
)

const (
	dfaDead    = -1
	dfaUnknown = -2
	// maxDFAStates bounds the table (128 transitions of 4 bytes each per
	// state) and dfaBudget the instructions visited while building it (rule
	// files come from operators and the rules API): a pattern that needs
	// more keeps using the regexp package.
	maxDFAStates = 256
	dfaBudget    = 1 << 20
	// maxDFAProg bounds the program, and so the depth of follow's recursion.
	maxDFAProg = 1000
)

// newPrefixDFA returns the DFA of expr (regexp syntax, Perl flags) with its
// start state built, or nil when expr is outside what it handles:
// empty-width assertions at the start other than ^ and \A (without the m
// flag), or a program longer than maxDFAProg. Assertions further on, and
// too many states, fail it when a text first leads there.
func newPrefixDFA(expr string) *prefixDFA {
	re, err := parsePattern(expr)
	if err != nil {
		return nil
	}
	return prefixDFAOf(re.Simplify())
}

// prefixDFAOf is newPrefixDFA of a simplified tree.
func prefixDFAOf(simple *syntax.Regexp) *prefixDFA {
	return prefixDFAWithin(simple, nil)
}

// prefixDFAWithin is prefixDFAOf with each new state also taken from
// quota (nil: none): a DFA that finds it empty fails.
func prefixDFAWithin(simple *syntax.Regexp, quota *atomic.Int64) *prefixDFA {
	prog, err := syntax.Compile(simple)
	if err != nil || len(prog.Inst) > maxDFAProg {
		return nil
	}
	b := &dfaBuilder{prog: prog, index: map[string]int32{}, budget: dfaBudget, quota: quota}
	start, ok := b.state(b.closure(nil, uint32(prog.Start), true))
	if !ok || start != 0 {
		return nil
	}
	d := &prefixDFA{b: b}
	d.reps, d.class = byteClasses(prog)
	d.publish()
	return d
}

// publish makes the builder's states visible to match. Called with mu held
// (or before d is shared).
func (d *prefixDFA) publish() {
	d.table.Store(&dfaTable{next: d.b.next, flags: d.b.flags})
}

// transition builds the transitions of state s (its whole row: every
// class, one step each) and returns where byte c leads (dfaDead: nowhere);
// ok is false when d failed.
func (d *prefixDFA) transition(s int32, c byte) (int32, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.failed.Load() {
		return 0, false
	}
	if n := atomic.LoadInt32(&d.b.next[int(s)<<7|int(c)]); n != dfaUnknown {
		return n, true // built meanwhile, or after the caller's table was copied
	}
	states := len(d.b.flags)
	byClass := make([]int32, len(d.reps))
	for k, r := range d.reps {
		n, ok := d.b.step(int(s), r)
		if !ok || d.b.budget < 0 {
			d.failed.Store(true)
			d.b = nil // what it built is not needed any more
			return 0, false
		}
		byClass[k] = n
	}
	// The new states are published first: a reader that sees a transition
	// finds its state.
	if len(d.b.flags) > states {
		d.publish()
	}
	row := d.b.next[int(s)<<7 : int(s+1)<<7]
	for x := range row {
		atomic.StoreInt32(&row[x], byClass[d.class[x]])
	}
	return byClass[d.class[c]], true
}

// match returns the length of the regexp's match at the start of text (ok
// false: none). decided is false when the DFA cannot tell (a non-ASCII byte
// read while the match could still go on, d is nil because the pattern has
// no DFA, or d failed); the caller must then ask the regexp.
func (d *prefixDFA) match(text string) (n int, ok, decided bool) {
	if d == nil || d.failed.Load() {
		return 0, false, false
	}
	t := d.table.Load()
	next, flags := t.next, t.flags
	s := int32(0)
	n = -1
	for i := 0; ; i++ {
		f := flags[s]
		if f&dfaMatch != 0 {
			n = i
		}
		if f&dfaAlive == 0 || i == len(text) {
			break
		}
		c := text[i]
		if c >= 0x80 {
			return 0, false, false
		}
		ns := atomic.LoadInt32(&next[int(s)<<7|int(c)])
		// One comparison on the path of a built transition to a known
		// state: dfaDead and dfaUnknown are above every index as uint32.
		if uint32(ns) >= uint32(len(flags)) {
			if ns == dfaUnknown {
				if ns, ok = d.transition(s, c); !ok {
					return 0, false, false
				}
			}
			if ns == dfaDead {
				break
			}
			// A state built after t was loaded (here or by another
			// goroutine): it was published before the transition to it.
			t = d.table.Load()
			next, flags = t.next, t.flags
		}
		s = ns
	}
	if n < 0 {
		return 0, false, true
	}
	return n, true, true
}

// searchDFAStates bounds the states of the search DFAs of one rule set
// together (512 bytes each: 4 MiB; see patternMemo.quota). A few hundred
// patterns may get one, and what a follower reads for weeks, or a local
// user writes to the journal to that end, could otherwise grow each to
// maxDFAStates. On the bundled journals' lines every pattern of the
// built-in rules together took 7,717. A DFA that finds the quota spent
// fails: its pattern keeps the regexp package.
const searchDFAStates = 8192

// searchDFA returns the prefixDFA of (?s:.)*?expr, or nil as newPrefixDFA
// would: a text has a match of it at its start exactly when expr matches
// somewhere in the text, which contains answers. Its states come from
// quota.
func searchDFA(expr string, quota *atomic.Int64) *prefixDFA {
	re, err := parsePattern(expr)
	if err != nil {
		return nil
	}
	anyPrefix := &syntax.Regexp{Op: syntax.OpStar, Flags: syntax.NonGreedy, Sub: []*syntax.Regexp{{Op: syntax.OpAnyChar}}}
	return prefixDFAWithin(&syntax.Regexp{Op: syntax.OpConcat, Sub: []*syntax.Regexp{anyPrefix, re.Simplify()}}, quota)
}

// contains reports whether d's pattern, a searchDFA's, matches at the
// start of text: it stops at the first byte where a match has ended,
// where match reads on for a longer one. decided is false as for match.
func (d *prefixDFA) contains(text string) (ok, decided bool) {
	if d == nil || d.failed.Load() {
		return false, false
	}
	t := d.table.Load()
	next, flags := t.next, t.flags
	s := int32(0)
	for i := 0; ; i++ {
		f := flags[s]
		if f&dfaMatch != 0 {
			return true, true
		}
		if f&dfaAlive == 0 || i == len(text) {
			return false, true
		}
		c := text[i]
		if c >= 0x80 {
			return false, false
		}
		ns := atomic.LoadInt32(&next[int(s)<<7|int(c)])
		if uint32(ns) >= uint32(len(flags)) {
			if ns == dfaUnknown {
				if ns, ok = d.transition(s, c); !ok {
					return false, false
				}
			}
			if ns == dfaDead {
				return false, true
			}
			t = d.table.Load()
			next, flags = t.next, t.flags
		}
		s = ns
	}
}

// complete builds every state of d and reports whether d holds them all
// (false: it failed, or d is nil). For tests: match builds what it needs.
func (d *prefixDFA) complete() bool {
	if d == nil {
		return false
	}
	for s := 0; ; s++ {
		t := d.table.Load()
		if d.failed.Load() {
			return false
		}
		if s >= len(t.flags) {
			return true
		}
		if t.flags[s]&dfaAlive == 0 {
			continue
		}
		if atomic.LoadInt32(&t.next[s<<7]) != dfaUnknown {
			continue // a row is built whole
		}
		if _, ok := d.transition(int32(s), 0); !ok {
			return false
		}
	}
}

// byteClasses partitions the ASCII bytes by the rune instructions of prog
// that match them, and returns one byte of each class (reps, in byte
// order) and each byte's class. A state's threads are rune instructions,
// so two bytes of one class lead from every state to the same state: the
// builder steps once per class instead of once per byte (a log line's
// patterns have 10-30 classes; building all 128 transitions one by one was
// most of a short command's package initialization).
//
// Each instruction's bytes are a 128-bit set, and the classes are refined
// by each set in turn: asking every instruction about every byte
// (Inst.MatchRune) was half the cost of a pattern's DFA.
func byteClasses(prog *syntax.Prog) (reps []rune, class [128]uint8) {
	sets := make([]asciiSet, 1, 32)
	sets[0] = asciiSet{^uint64(0), ^uint64(0)}
	for i := range prog.Inst {
		in := &prog.Inst[i]
		switch in.Op {
		case syntax.InstRune, syntax.InstRune1, syntax.InstRuneAny, syntax.InstRuneAnyNotNL:
		default:
			continue
		}
		m := runeSet(in)
		for k, n := 0, len(sets); k < n; k++ {
			in, out := sets[k].and(m), sets[k].andNot(m)
			if !in.empty() && !out.empty() {
				sets[k] = in
				sets = append(sets, out)
			}
		}
	}
	// Classes numbered in the order of their first byte.
	slices.SortFunc(sets, func(a, b asciiSet) int { return a.first() - b.first() })
	for k, set := range sets {
		reps = append(reps, rune(set.first()))
		for c := range 128 {
			if set.has(c) {
				class[c] = uint8(k)
			}
		}
	}
	return reps, class
}

// asciiSet is a set of the bytes 0-127.
type asciiSet [2]uint64

func (s asciiSet) has(c int) bool             { return s[c/64]&(1<<(c%64)) != 0 }
func (s *asciiSet) add(c int)                 { s[c/64] |= 1 << (c % 64) }
func (s asciiSet) and(t asciiSet) asciiSet    { return asciiSet{s[0] & t[0], s[1] & t[1]} }
func (s asciiSet) andNot(t asciiSet) asciiSet { return asciiSet{s[0] &^ t[0], s[1] &^ t[1]} }
func (s asciiSet) empty() bool                { return s[0]|s[1] == 0 }

// first is the smallest byte of s (128 when empty).
func (s asciiSet) first() int {
	if s[0] != 0 {
		return bits.TrailingZeros64(s[0])
	}
	return 64 + bits.TrailingZeros64(s[1])
}

// runeSet is the ASCII bytes rune instruction in matches, as
// Inst.MatchRune decides: a single rune (a literal's) matches its case
// folds too when the instruction folds case; a class's runes are ranges
// with their folds already in them.
func runeSet(in *syntax.Inst) asciiSet {
	var s asciiSet
	switch {
	case in.Op == syntax.InstRuneAny:
		return asciiSet{^uint64(0), ^uint64(0)}
	case in.Op == syntax.InstRuneAnyNotNL:
		return asciiSet{^uint64(0) &^ (1 << '\n'), ^uint64(0)}
	case len(in.Rune) == 1:
		r0 := in.Rune[0]
		if r0 < 128 {
			s.add(int(r0))
		}
		if syntax.Flags(in.Arg)&syntax.FoldCase != 0 {
			for r := unicode.SimpleFold(r0); r != r0; r = unicode.SimpleFold(r) {
				if r < 128 {
					s.add(int(r))
				}
			}
		}
	default:
		for j := 0; j+1 < len(in.Rune); j += 2 {
			for c := max(in.Rune[j], 0); c <= in.Rune[j+1] && c < 128; c++ {
				s.add(int(c))
			}
		}
	}
	return s
}

// dfaBuilder makes the states of a prefixDFA: each is the ordered list of
// the program's threads (rune and match instructions) after the text so
// far. next and flags are the table (dfaTable) of the states made so far.
type dfaBuilder struct {
	prog    *syntax.Prog
	threads [][]uint32 // per state
	next    []int32
	flags   []uint8
	key     []byte
	index   map[string]int32
	budget  int           // instructions left to visit
	quota   *atomic.Int64 // states left to the DFAs sharing it; nil: no limit but maxDFAStates
}

// closure appends to list, in priority order, the rune and match
// instructions reachable from pc without reading a byte; it stops at a
// match (threads after it have lower priority and would be cut there). ok
// is false for an empty-width assertion it cannot decide.
func (b *dfaBuilder) closure(list []uint32, pc uint32, atStart bool) []uint32 {
	list, _ = b.follow(list, pc, atStart)
	return list
}

// follow is closure; stop reports that a match was added.
func (b *dfaBuilder) follow(list []uint32, pc uint32, atStart bool) (_ []uint32, stop bool) {
	b.budget -= len(list) + 1
	if b.budget < 0 {
		return append(list, ^uint32(0)), true
	}
	if slices.Contains(list, pc) {
		return list, false
	}
	in := &b.prog.Inst[pc]
	switch in.Op {
	case syntax.InstAlt, syntax.InstAltMatch:
		if list, stop = b.follow(list, in.Out, atStart); stop {
			return list, true
		}
		return b.follow(list, in.Arg, atStart)
	case syntax.InstCapture, syntax.InstNop:
		return b.follow(list, in.Out, atStart)
	case syntax.InstEmptyWidth:
		if syntax.EmptyOp(in.Arg) == syntax.EmptyBeginText {
			if atStart {
				return b.follow(list, in.Out, atStart)
			}
			return list, false
		}
		// Other assertions depend on the bytes around: mark the list as
		// unusable with an instruction no state can hold.
		return append(list, ^uint32(0)), true
	case syntax.InstFail:
		return list, false
	case syntax.InstMatch:
		return append(list, pc), true
	}
	return append(list, pc), false // rune instructions
}

// state returns the index of the state of threads, adding it if new.
func (b *dfaBuilder) state(threads []uint32) (int32, bool) {
	if len(threads) == 0 {
		return dfaDead, true
	}
	var flags uint8
	b.key = b.key[:0]
	for _, pc := range threads {
		if pc == ^uint32(0) {
			return 0, false
		}
		b.key = binary.LittleEndian.AppendUint32(b.key, pc)
		if b.prog.Inst[pc].Op == syntax.InstMatch {
			flags |= dfaMatch
		} else {
			flags |= dfaAlive
		}
	}
	if i, ok := b.index[string(b.key)]; ok {
		return i, true
	}
	if len(b.threads) >= maxDFAStates || b.quota != nil && b.quota.Add(-1) < 0 {
		return 0, false
	}
	i := int32(len(b.threads))
	b.index[string(b.key)] = i
	b.threads = append(b.threads, threads)
	b.flags = append(b.flags, flags)
	for range 128 {
		b.next = append(b.next, dfaUnknown)
	}
	return i, true
}

// step returns the state after reading c in state i.
func (b *dfaBuilder) step(i int, c rune) (int32, bool) {
	var next []uint32
	for _, pc := range b.threads[i] {
		in := &b.prog.Inst[pc]
		if in.Op == syntax.InstMatch {
			break // lower-priority threads lose to this match
		}
		if in.MatchRune(c) {
			var stop bool
			next, stop = b.follow(next, in.Out, false)
			if stop && !slices.Contains(next, ^uint32(0)) {
				// A match: the threads after it have lower priority.
				break
			}
		}
	}
	return b.state(next)
}

// PrefixRegexp is a regexp anchored at the start of the text (^...) with
// its prefixDFA when it has one: the DFA answers the calls that do not
// match and the match's length; the regexp runs only for submatches and
// for what the DFA cannot decide. The line grammars outside the rule files
// use it too (the envelope here, the judge's traceback reader).
type PrefixRegexp struct {
	*regexp.Regexp
	dfa *prefixDFA
}

// MustPrefixRegexp compiles expr, which must be anchored at the start; it
// panics otherwise, or when expr does not compile (the patterns are the
// program's own, not the rule files').
func MustPrefixRegexp(expr string) PrefixRegexp {
	re, err := parsePattern(expr)
	if err != nil {
		panic("rules: " + err.Error())
	}
	simple := re.Simplify()
	if !anchoredTree(simple) {
		panic("rules: " + expr + " is not anchored at the start")
	}
	return PrefixRegexp{regexp.MustCompile(expr), prefixDFAOf(simple)}
}

// anchoredTree reports whether every match of the simplified tree
// begins at the start of the text (^ or \A followed by the rest).
func anchoredTree(simple *syntax.Regexp) bool {
	return simple.Op == syntax.OpConcat && len(simple.Sub) > 0 && simple.Sub[0].Op == syntax.OpBeginText
}

// lazyDFA is the prefixDFA build(expr) makes, built on its first match: a
// Load compiles the detect and strip patterns of every engine, a run
// reads the lines of one or two, and building the DFAs of the others was
// ~3 % of a one-entry explain. Safe for concurrent use.
type lazyDFA struct {
	once  sync.Once
	expr  string
	build func(expr string) *prefixDFA // returns nil for a pattern without a DFA; nil once built
	dfa   *prefixDFA
}

// get returns the DFA (nil: none, also for the zero lazyDFA), building
// it on the first call.
func (l *lazyDFA) get() *prefixDFA {
	l.once.Do(func() {
		if l.build != nil {
			l.dfa, l.build = l.build(l.expr), nil
		}
	})
	return l.dfa
}

// match is prefixDFA.match of get's DFA.
func (l *lazyDFA) match(text string) (n int, ok, decided bool) { return l.get().match(text) }

// startDFA is newPrefixDFA(expr) for a pattern anchored at the start, and
// nil for any other: only then is "no match at the start" "no match".
func startDFA(expr string) *prefixDFA {
	re, err := parsePattern(expr)
	if err != nil {
		return nil
	}
	simple := re.Simplify()
	if !anchoredTree(simple) {
		return nil
	}
	return prefixDFAOf(simple)
}

// HasDFA reports whether p has a DFA (else every call runs the regexp).
func (p PrefixRegexp) HasDFA() bool { return p.dfa != nil }

// decide returns the length of the match at the start of s, when the DFA
// can tell.
func (p PrefixRegexp) decide(s string) (n int, ok, decided bool) {
	if p.dfa == nil {
		return 0, false, false
	}
	return p.dfa.match(s)
}

// MatchString is regexp.MatchString.
func (p PrefixRegexp) MatchString(s string) bool {
	if _, ok, decided := p.decide(s); decided {
		return ok
	}
	return p.Regexp.MatchString(s)
}

// FindString is regexp.FindString.
func (p PrefixRegexp) FindString(s string) string {
	if n, ok, decided := p.decide(s); decided {
		if !ok {
			return ""
		}
		return s[:n]
	}
	return p.Regexp.FindString(s)
}

// FindStringSubmatch is regexp.FindStringSubmatch. Where the DFA decides
// a match of n bytes, the regexp runs on those n bytes only: the DFA
// decides nothing past an assertion other than ^, so no path the regexp
// prefers can tell s from s[:n], and its backtracker clears state for
// every byte of its input (a line of 500 bytes, a prefix of 20: the
// envelope's submatches were ~3 % of a night journal's explain).
func (p PrefixRegexp) FindStringSubmatch(s string) []string {
	if n, ok, decided := p.decide(s); decided {
		if !ok {
			return nil
		}
		s = s[:n]
	}
	return p.Regexp.FindStringSubmatch(s)
}
