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
	memo.mu.Lock()
	re, ok := memo.trees[src]
	memo.mu.Unlock()
	if ok {
		return re, nil
	}
	re, err := syntax.Parse(src, syntax.Perl)
	if err != nil {
		return nil, err
	}
	memo.mu.Lock()
	if memo.trees != nil {
		memo.trees[src] = re
	}
	memo.mu.Unlock()
	return re, nil
}

// compilePattern is regexp.Compile(src), memoized during a Load (a
// Regexp is safe to share).
func compilePattern(src string) (*regexp.Regexp, error) {
	memo.mu.Lock()
	re, ok := memo.res[src]
	memo.mu.Unlock()
	if ok {
		return re, nil
	}
	re, err := regexp.Compile(src)
	if err != nil {
		return nil, err
	}
	memo.mu.Lock()
	if memo.res != nil {
		memo.res[src] = re
	}
	memo.mu.Unlock()
	return re, nil
}
