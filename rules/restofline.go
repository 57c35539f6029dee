package rules

import (
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
)

// Shape and rule patterns that take the rest of a line end in ".*$",
// alone or as the end of their last capture ("non-default args:
// (?P<args>\{.*)$"). The regexp package walks that rest a rune at a time,
// with its slowest matcher once the line is long (engine config dumps are
// kilobytes): 7 µs a line, for a match whose end is already known.
//
// On a text without '\n', ".*" followed by the end of the text matches
// whatever follows, from any position. So the leftmost-first match of the
// pattern is the match of its head (the pattern without ".*$"), with the
// match, and the capture that held ".*", ending at the end of the text.

// restOfLine is a pattern's head: the pattern without its trailing ".*$".
type restOfLine struct {
	head *regexp.Regexp
	ends []int // capture indexes that end where the text ends (besides 0)
}

// splitRestOfLine returns src's head when src (Perl syntax, as the rule
// files are) ends in ".*$" or "(...X.*)$" with '.' not matching '\n';
// ok is false for any other pattern.
func splitRestOfLine(src string) (r restOfLine, ok bool) {
	tree, err := parsePattern(src)
	if err != nil || tree.Op != syntax.OpConcat || len(tree.Sub) < 2 {
		return r, false
	}
	n := len(tree.Sub)
	if tree.Sub[n-1].Op != syntax.OpEndText {
		return r, false
	}
	head := *tree
	head.Sub = append([]*syntax.Regexp(nil), tree.Sub[:n-1]...)
	last := tree.Sub[n-2]
	switch {
	case isRest(last):
		head.Sub = head.Sub[:n-2]
	case last.Op == syntax.OpCapture:
		inner := last.Sub[0]
		c := *last
		switch {
		case isRest(inner):
			c.Sub = []*syntax.Regexp{{Op: syntax.OpEmptyMatch}}
		case inner.Op == syntax.OpConcat && len(inner.Sub) > 0 && isRest(inner.Sub[len(inner.Sub)-1]):
			in := *inner
			in.Sub = inner.Sub[:len(inner.Sub)-1]
			c.Sub = []*syntax.Regexp{&in}
		default:
			return r, false
		}
		head.Sub[n-2] = &c
		r.ends = []int{last.Cap}
	default:
		return r, false
	}
	src, ok = headSource(src, last.Op == syntax.OpCapture)
	if !ok {
		src = head.String()
	}
	re, err := regexp.Compile(src)
	if err != nil || re.NumSubexp() != tree.MaxCap() ||
		!slices.Equal(re.SubexpNames(), tree.CapNames()) {
		return restOfLine{}, false // String did not keep the captures
	}
	r.head = re
	return r, true
}

// headSource returns the head's source cut from src's text when src ends
// in ".*$" or ".*?$" (inCapture: ".*)$", the rest closing the last
// capture): the tree says the rest is there, and the text says where.
// syntax.Regexp.String would print it from the tree, at ~0.1 ms a pattern
// for computing its flags: a tenth of the fixed cost of a run that meets
// a dozen such patterns. ok is false for any other spelling.
func headSource(src string, inCapture bool) (head string, ok bool) {
	s, ok := strings.CutSuffix(src, "$")
	closing := ""
	if ok && inCapture {
		s, ok = strings.CutSuffix(s, ")")
		closing = ")"
	}
	if !ok {
		return "", false
	}
	for _, rest := range []string{".*?", ".*"} {
		if h, cut := strings.CutSuffix(s, rest); cut {
			// A '.' after an odd run of backslashes is a literal dot.
			if n := len(h) - len(strings.TrimRight(h, `\`)); n%2 == 0 {
				return h + closing, true
			}
			return "", false
		}
	}
	return "", false
}

// isRest reports whether re is ".*" (or ".*?") with '.' not matching '\n'.
func isRest(re *syntax.Regexp) bool {
	return re.Op == syntax.OpStar && re.Sub[0].Op == syntax.OpAnyCharNotNL
}

// applies reports whether the head answers for s: s holds no '\n'.
func (r *restOfLine) applies(s string) bool {
	return r.head != nil && strings.IndexByte(s, '\n') < 0
}

// extend moves the ends of the whole match and, when m holds submatches,
// of r.ends to len(s).
func (r *restOfLine) extend(m []int, s string) []int {
	if m == nil {
		return nil
	}
	m[1] = len(s)
	for _, c := range r.ends {
		if 2*c+1 < len(m) {
			m[2*c+1] = len(s)
		}
	}
	return m
}
