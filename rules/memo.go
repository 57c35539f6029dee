package rules

import (
	"regexp"
	"regexp/syntax"
	"sync"
)

// Loading the rules is a fixed cost of every command (~0.1 s of a short
// explain), and each pattern went through the regexp parser five or six
// times: once per analysis (literals, start literals, windows, size, tail)
// and again for each rule repeating an anchored pattern (*oom, *raised).
// While a Load runs, patternMemo keeps each source's parse tree and
// compiled regexp, so each is made once; outside of a Load nothing is kept.

// patternMemo is the memo of the Loads in progress.
type patternMemo struct {
	mu    sync.Mutex
	loads int // Loads in progress; the maps are dropped at zero
	trees map[string]*syntax.Regexp
	res   map[string]*regexp.Regexp
}

var memo patternMemo

// begin starts a Load's use of the memo; end finishes it.
func (m *patternMemo) begin() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.loads++; m.loads == 1 {
		m.trees, m.res = map[string]*syntax.Regexp{}, map[string]*regexp.Regexp{}
	}
}

func (m *patternMemo) end() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.loads--; m.loads == 0 {
		m.trees, m.res = nil, nil
	}
}

// parsePattern is syntax.Parse(src, syntax.Perl), memoized during a Load.
// The tree is shared: callers must not modify it (Simplify does not).
func parsePattern(src string) (*syntax.Regexp, error) {
	return memoized(&memo.trees, src, func(s string) (*syntax.Regexp, error) { return syntax.Parse(s, syntax.Perl) })
}

// compilePattern is regexp.Compile(src), memoized during a Load (a
// Regexp is safe to share).
func compilePattern(src string) (*regexp.Regexp, error) {
	return memoized(&memo.res, src, regexp.Compile)
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
