package rules

import (
	"regexp"
	"regexp/syntax"
)

// A pattern that names a failure and then picks optional details out of
// the rest of the line (common.yaml's OOM: a long alternation, then
// `(?:.*?Tried to allocate (?P<alloc>...))?(?:.*?of which ...)?`) is one
// large program with captures: past a few hundred bytes Go runs it in its
// slowest mode, ~50 µs a line. Its leftmost match is the head's (the
// optional tail always matches, so no choice in the head depends on it),
// and the tail then matches where the head ended; each part alone is a
// small, fast regex.

// splitRE is a pattern cut into its head, with no capture group, and its
// tail: optional groups only, run anchored where the head's match ends.
type splitRE struct {
	head *regexp.Regexp
	tail *regexp.Regexp // ^(?:tail)
	n    int            // capture groups of the whole pattern
}

// splitOptionalTail returns the split of src, or nil when src is not a
// head with no capture followed by one or more optional parts whose
// assertions cannot see the cut (no \b, \B, ^ or \A in the tail).
func splitOptionalTail(src string) *splitRE {
	re, err := parsePattern(src)
	if err != nil || re.Op != syntax.OpConcat {
		return nil
	}
	k := len(re.Sub)
	for k > 0 && re.Sub[k-1].Op == syntax.OpQuest && re.Sub[k-1].Flags&syntax.NonGreedy == 0 {
		k--
	}
	if k == 0 || k == len(re.Sub) {
		return nil
	}
	head := &syntax.Regexp{Op: syntax.OpConcat, Flags: re.Flags, Sub: re.Sub[:k]}
	tail := &syntax.Regexp{Op: syntax.OpConcat, Flags: re.Flags, Sub: re.Sub[k:]}
	if head.MaxCap() > 0 || seesBefore(tail) {
		return nil
	}
	h, err := compilePattern(head.String())
	if err != nil {
		return nil
	}
	t, err := compilePattern(`^(?:` + tail.String() + `)`)
	if err != nil {
		return nil
	}
	return &splitRE{head: h, tail: t, n: re.MaxCap()}
}

// seesBefore reports whether re holds an assertion that reads the text
// before where it runs.
func seesBefore(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpWordBoundary, syntax.OpNoWordBoundary, syntax.OpBeginLine, syntax.OpBeginText:
		return true
	}
	for _, sub := range re.Sub {
		if seesBefore(sub) {
			return true
		}
	}
	return false
}

// find is FindStringSubmatchIndex of the whole pattern on line, the head
// searched from the first literal of start set k when l is not nil and k
// is not -1 (as search does).
func (s *splitRE) find(l *Line, k int, line string) []int {
	from := 0
	if l != nil && k >= 0 {
		if from = l.first(k); from < 0 {
			return nil
		}
	}
	h := s.head.FindStringIndex(line[from:])
	if h == nil {
		return nil
	}
	h[0], h[1] = h[0]+from, h[1]+from
	t := s.tail.FindStringSubmatchIndex(line[h[1]:])
	m := make([]int, 2+2*s.n)
	m[0], m[1] = h[0], h[1]+t[1] // the tail always matches, maybe empty
	for i := 2; i < len(m); i++ {
		if m[i] = -1; i < len(t) && t[i] >= 0 {
			m[i] = h[1] + t[i]
		}
	}
	return m
}
