package rules

import (
	"regexp"
	"regexp/syntax"
	"strings"
	"sync"
	"sync/atomic"
)

// Loading the rules is a fixed cost of every command (about 40 % of a
// one-entry explain's 0.12 s), and each pattern went through the regexp
// parser five or six times: once per analysis (literals, start literals,
// windows, size, tail) and again for each rule repeating an anchored
// pattern (*oom, *raised).
// While a Load runs, patternMemo keeps each source's parse tree and
// lazyRegexp, so each is made once; outside of a Load nothing is kept.

// patternMemo is the memo of the Loads in progress.
type patternMemo struct {
	mu    sync.Mutex
	loads int // Loads in progress; the maps are dropped at zero
	trees map[string]*syntax.Regexp
	res   map[string]*lazyRegexp
	alts  map[string][]alt         // by captures flag and source; callers get a copy
	facts map[string]*patternFacts // builtinFacts decoded, by source; loadedPatterns reads the keys
	// quota is the search DFA states (searchDFAStates) of the patterns
	// these Loads make: a rule set's DFAs end with it, a reload's start
	// afresh.
	quota *atomic.Int64
}

var memo patternMemo

// begin starts a Load's use of the memo; end finishes it.
func (m *patternMemo) begin() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.loads++; m.loads == 1 {
		m.trees, m.res, m.alts, m.facts = map[string]*syntax.Regexp{}, map[string]*lazyRegexp{}, map[string][]alt{}, map[string]*patternFacts{}
		m.quota = new(atomic.Int64)
		m.quota.Store(searchDFAStates)
	}
}

// searchQuota returns the quota of the Loads in progress (nil: none).
func (m *patternMemo) searchQuota() *atomic.Int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.quota
}

func (m *patternMemo) end() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.loads--; m.loads == 0 {
		m.trees, m.res, m.alts, m.facts, m.quota = nil, nil, nil, nil, nil
	}
}

// parsePattern is syntax.Parse(src, syntax.Perl), memoized during a Load,
// from builtinTrees when it has src. The tree is shared: callers must not
// modify it (Simplify does not).
func parsePattern(src string) (*syntax.Regexp, error) {
	return memoized(&memo.trees, src, func(s string) (*syntax.Regexp, error) {
		if t := builtinTree(s); t != nil {
			return t, nil
		}
		return syntax.Parse(s, syntax.Perl)
	})
}

// compilePattern returns the lazyRegexp of src, or the error
// regexp.Compile(src) would return; memoized during a Load (a lazyRegexp
// is safe to share).
func compilePattern(src string) (*lazyRegexp, error) {
	return memoized(&memo.res, src, func(s string) (*lazyRegexp, error) {
		if f := builtinFacts(s); f != nil {
			return newLazyRegexp(s, f.numSubexp, f.names, memo.searchQuota()), nil
		}
		tree, err := parsePattern(s)
		if err != nil {
			return nil, err
		}
		return newLazyRegexp(s, tree.MaxCap(), tree.CapNames(), memo.searchQuota()), nil
	})
}

// newLazyRegexp returns the lazyRegexp of src, whose search DFA draws its
// states from quota (nil: it has none).
func newLazyRegexp(src string, numSubexp int, names []string, quota *atomic.Int64) *lazyRegexp {
	p := &lazyRegexp{src: src, numSubexp: numSubexp, names: names, quota: quota}
	if quota != nil {
		p.search = lazyDFA{expr: src, build: func(expr string) *prefixDFA { return searchDFA(expr, quota) }}
	}
	return p
}

// lazyRegexp is a rule file's pattern, compiled on its first use. A Load
// parses every pattern (regexp/syntax, as the literal analyses need), so
// it still reports every bad one, but a run only needs the patterns whose
// literals its lines hold: compiling all of the ~760 built-in ones was a
// fifth of a short command's time. regexp.Compile cannot fail on a
// pattern syntax.Parse took with the same flags (regexp/syntax.Compile
// returns no error). Safe for concurrent use.
type lazyRegexp struct {
	src       string
	numSubexp int
	names     []string // regexp.Regexp.SubexpNames
	once      sync.Once
	re        *regexp.Regexp
	rest      restOfLine   // rest.head is nil unless src ends in ".*$" (see restOfLine)
	split     *captureTail // nil unless src is long, with a capture tail (see captureTail)

	quota  *atomic.Int64 // its Load's search DFA states; nil: no search DFA
	search lazyDFA       // searchDFA(src, quota), built on the first MatchString (see newLazyRegexp)
}

// compiled returns the compiled regexp, compiling it on the first call.
func (p *lazyRegexp) compiled() *regexp.Regexp {
	p.once.Do(func() {
		p.re = regexp.MustCompile(p.src)
		if strings.HasSuffix(p.src, "$") {
			p.rest, _ = splitRestOfLine(p.src)
		}
		if c, ok := splitCaptureTail(p.src); ok && p.rest.head == nil {
			p.split = &c
		}
	})
	return p.re
}

// String returns the source text of the pattern.
func (p *lazyRegexp) String() string { return p.src }

// NumSubexp, SubexpNames and SubexpIndex answer from the parse, without
// compiling: Load asks them of every pattern.
func (p *lazyRegexp) NumSubexp() int { return p.numSubexp }

func (p *lazyRegexp) SubexpNames() []string { return p.names }

func (p *lazyRegexp) SubexpIndex(name string) int {
	if name != "" {
		for i, n := range p.names {
			if n == name {
				return i
			}
		}
	}
	return -1
}

// The matching methods of regexp.Regexp that the rules use.

// Each asks the head of a ".*$" pattern when it answers for s (see
// restOfLine), and a long pattern's head and capture tail when it has
// them (see captureTail).

// MatchString asks p's search DFA first: a yes-or-no matcher (a phase
// marker, a readiness, banner, detection or death line) is asked of lines
// that nearly always match it (the literals and their windows turned the
// others away), where the backtracker took ~0.5-1 µs a line of a night
// ladder (4 % of its explain).
func (p *lazyRegexp) MatchString(s string) bool {
	if ok, decided := p.search.get().contains(s); decided {
		return ok
	}
	re := p.compiled()
	switch {
	case p.rest.applies(s):
		return p.rest.head.MatchString(s)
	case p.split != nil:
		return p.split.head.MatchString(s) // the tail matches empty
	}
	return re.MatchString(s)
}

func (p *lazyRegexp) FindStringIndex(s string) []int {
	re := p.compiled()
	switch {
	case p.rest.applies(s):
		return p.rest.extend(p.rest.head.FindStringIndex(s), s)
	case p.split != nil:
		return p.split.find(s, false)
	}
	return re.FindStringIndex(s)
}

func (p *lazyRegexp) FindStringSubmatch(s string) []string {
	if p.compiled(); p.rest.applies(s) || p.split != nil {
		return submatches(s, p.FindStringSubmatchIndex(s))
	}
	return p.re.FindStringSubmatch(s)
}

func (p *lazyRegexp) FindStringSubmatchIndex(s string) []int {
	re := p.compiled()
	switch {
	case p.rest.applies(s):
		return p.rest.extend(p.rest.head.FindStringSubmatchIndex(s), s)
	case p.split != nil:
		return p.split.find(s, true)
	}
	return re.FindStringSubmatchIndex(s)
}

// memoized returns table's value for src, made with build and kept in
// table (one of memo's maps) while a Load runs.
func memoized[T any](table *map[string]T, src string, build func(string) (T, error)) (T, error) {
	memo.mu.Lock()
	v, ok := (*table)[src]
	memo.mu.Unlock()
	if ok {
		return v, nil
	}
	v, err := build(src)
	if err != nil {
		return v, err
	}
	memo.mu.Lock()
	defer memo.mu.Unlock()
	if *table != nil {
		// Another goroutine of the Load may have built it meanwhile: keep
		// the first, so every user of src shares one value.
		if first, ok := (*table)[src]; ok {
			return first, nil
		}
		(*table)[src] = v
	}
	return v, nil
}
