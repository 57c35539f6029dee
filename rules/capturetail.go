package rules

import (
	"regexp"
	"regexp/syntax"
	"slices"
)

// A long rule pattern often names a failure by one of many wordings and
// then captures details that may follow it: common.yaml's out-of-memory
// pattern is ~40 wordings, then "(?:.*?Tried to allocate (?P<alloc>...))?
// (?:.*?of which (?P<free>...) free)?". The regexp package finds
// submatches with its backtracker only while the program's size times the
// text's stays within a budget (256 Kbit); a 540-byte traceback line and
// that program are past it, and its NFA took ~14 µs a line.
//
// When a pattern is a concatenation whose part before its first capture
// holds none (the head) and whose rest can match the empty string and
// holds no assertion (the tail), its leftmost-first match is the head's
// leftmost-first match followed by the tail's match anchored where the
// head's ends: the tail cannot fail, so the search never returns into
// the head, and with no assertion the tail does not look at the bytes
// before it. So the head runs without submatches, and only the small tail
// with them.

// captureTail is a pattern cut into its head and its tail (^(?:tail)).
type captureTail struct {
	head, tail *regexp.Regexp
	numSubexp  int
}

// minTailSplit is the shortest pattern worth cutting: below it the program
// is small enough for the backtracker on most lines, and a second regexp
// call costs more than it saves.
const minTailSplit = 256

// splitCaptureTail cuts src (Perl syntax, as the rule files are) into
// head and tail; ok is false when src is shorter than minTailSplit or not
// of that form.
func splitCaptureTail(src string) (c captureTail, ok bool) {
	if len(src) < minTailSplit {
		return c, false
	}
	tree, err := parsePattern(src)
	if err != nil || tree.Op != syntax.OpConcat || tree.MaxCap() == 0 {
		return c, false
	}
	k := slices.IndexFunc(tree.Sub, func(re *syntax.Regexp) bool { return re.MaxCap() > 0 })
	if k <= 0 {
		return c, false // no head
	}
	for _, sub := range tree.Sub[k:] {
		if !matchesEmpty(sub) || hasAssertion(sub) {
			return c, false
		}
	}
	head, tail := *tree, *tree
	head.Sub, tail.Sub = tree.Sub[:k], tree.Sub[k:]
	h, err := regexp.Compile(head.String())
	if err != nil {
		return c, false
	}
	t, err := regexp.Compile(`^(?:` + tail.String() + `)`)
	if err != nil || t.NumSubexp() != tree.MaxCap() || !slices.Equal(t.SubexpNames(), tree.CapNames()) {
		return c, false // String did not keep the captures
	}
	return captureTail{head: h, tail: t, numSubexp: tree.MaxCap()}, true
}

// matchesEmpty reports whether re can match the empty string.
func matchesEmpty(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpEmptyMatch, syntax.OpStar, syntax.OpQuest:
		return true
	case syntax.OpLiteral:
		return len(re.Rune) == 0
	case syntax.OpCapture:
		return matchesEmpty(re.Sub[0])
	case syntax.OpPlus:
		return matchesEmpty(re.Sub[0])
	case syntax.OpRepeat:
		return re.Min == 0 || matchesEmpty(re.Sub[0])
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			if !matchesEmpty(sub) {
				return false
			}
		}
		return true
	case syntax.OpAlternate:
		return slices.ContainsFunc(re.Sub, matchesEmpty)
	}
	return false // a character, a class, an assertion, no match
}

// hasAssertion reports whether re holds ^, $, \A, \z, \b or \B.
func hasAssertion(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
		syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return true
	}
	return slices.ContainsFunc(re.Sub, hasAssertion)
}

// find is FindStringSubmatchIndex of the whole pattern (all is false:
// FindStringIndex).
func (c *captureTail) find(s string, all bool) []int {
	loc := c.head.FindStringIndex(s)
	if loc == nil {
		return nil
	}
	rest := s[loc[1]:]
	if !all {
		t := c.tail.FindStringIndex(rest) // never nil: the tail matches empty
		return []int{loc[0], loc[1] + t[1]}
	}
	t := c.tail.FindStringSubmatchIndex(rest)
	m := make([]int, 2*(c.numSubexp+1))
	m[0], m[1] = loc[0], loc[1]+t[1]
	for i := 2; i < len(m); i++ {
		m[i] = t[i]
		if m[i] >= 0 {
			m[i] += loc[1]
		}
	}
	return m
}
