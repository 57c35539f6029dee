package rules

import (
	"regexp/syntax"
	"slices"
	"strings"
)

// alt is one alternative of a pattern (phase markers, ready evidence, a
// rule's match). A line matches A|B|... exactly when it matches one
// alternative, so each gets its own prefilter matcher and an alternative
// that is a plain literal needs no regex at all: the prefilter already
// found it. Long lines made the whole alternation the tracker's most
// expensive regex.
type alt struct {
	re *lazyRegexp // nil: the alternative is exactly its one literal
	// gate: for "(?:A)T" (see distribute), the regex of A alone. Every
	// match of re starts with one of gate's, and gate's span is bounded
	// where re's is not, so the prefilter's windows (see Line.near) rule
	// out a line before re runs on all of it. nil: re is its own gate.
	gate   *lazyRegexp
	lits   []string   // requiredLiterals of gate, or of re without one
	sets   [][]string // literalSets of re, checked before it; none with a gate
	setIDs []int      // the sets' prefilter matcher ids
	id     int        // prefilter matcher id
}

// compileAlts splits src into its alternatives, or returns nil when src has
// one alternative or a form the split does not handle (then the whole
// regex runs, as before). With captures (a rule's match, whose captures
// findAlts returns), every alternative must have src's captures at the
// same indexes, or there is no split.
func compileAlts(src string, captures bool) []alt {
	key := "s" + src
	if captures {
		key = "c" + src
	}
	// The six out-of-memory rules share one pattern. A copy each: the
	// prefilter ids are the Set's, and Loads may run at once.
	alts, _ := memoized(&memo.alts, key, func(string) ([]alt, error) { return splitAlts(src, captures), nil })
	return slices.Clone(alts)
}

// splitAlts is compileAlts without the memo.
func splitAlts(src string, captures bool) []alt {
	parts, tail := splitTop(src), ""
	if len(parts) < 2 {
		if parts, tail = distribute(src); parts == nil {
			return nil
		}
	}
	whole, err := compilePattern(src)
	if err != nil {
		return nil
	}
	out := make([]alt, 0, len(parts))
	for _, p := range parts {
		var a alt
		if tail == "" {
			if a.re, err = compilePattern(p); err != nil || captures && !slices.Equal(a.re.SubexpNames(), whole.SubexpNames()) {
				return nil
			}
		} else {
			// A head without captures leaves p+tail the captures of src,
			// at the same indexes: not parsed again (two dozen
			// alternatives share a long tail), compiled on first use.
			head, err := compilePattern(p)
			if err != nil || head.NumSubexp() > 0 {
				return nil
			}
			a.re = newLazyRegexp(p+tail, whole.numSubexp, whole.names, whole.quota)
			// The windows are around the gate's own literals: a literal of
			// the tail may lie anywhere after the gate's match. Every
			// match of re holds one of the gate's, so the gate's literals
			// are re's too. No literal sets: the gate's windows answer
			// more cheaply than searching a long line for each set.
			if a.lits = requiredLiterals(p); len(a.lits) > 0 {
				a.gate = head
			}
		}
		if a.gate == nil {
			a.lits, a.sets = requiredLiterals(p+tail), literalSets(p+tail)
		}
		if tail == "" {
			if lit, ok := plainLiteral(p); ok && len(a.lits) == 1 && a.lits[0] == lit {
				a.re = nil
			}
		}
		out = append(out, a)
	}
	return out
}

// gated returns a's gate, or re when it has none.
func (a *alt) gated() *lazyRegexp {
	if a.gate != nil {
		return a.gate
	}
	return a.re
}

// mayMatch reports whether a may match line (l's text, or any text when l
// is nil): its literal sets and, on l, its gate's windows.
func (a *alt) mayMatch(l *Line, line string) bool {
	return l.holds(a.setIDs, a.sets, line) && l.mayMatchText(a.id, a.gated(), line)
}

// distribute splits "(?:A|B|…)T" into the heads "(?:A)", "(?:B)", … and
// the tail T: the alternatives "(?:A)T", "(?:B)T", … have the same matches,
// and the leftmost match of the whole is the leftmost of theirs, the first
// on a tie. The out-of-memory pattern is such a group of two dozen
// spellings followed by optional captures; as one regex it is too large
// for the regexp package's backtracker, and its NFA took 16-27 µs a line.
// nil when src does not start with a group of alternatives or the group is
// repeated.
func distribute(src string) (heads []string, tail string) {
	if !strings.HasPrefix(src, "(?:") {
		return nil, ""
	}
	bars, end, ok := scanTop(src)
	if !ok || end < 0 || len(bars) > 0 {
		return nil, "" // "(?:A|B)T|U" is splitTop's
	}
	tail = src[end+1:]
	if tail != "" && strings.IndexByte("*+?{", tail[0]) >= 0 {
		return nil, ""
	}
	heads = splitTop(src[len("(?:"):end])
	if len(heads) < 2 {
		return nil, ""
	}
	for i, h := range heads {
		heads[i] = "(?:" + h + ")"
	}
	return heads, tail
}

// splitTop splits a regex at its top-level '|', or returns nil for forms it
// does not parse (see scanTop).
func splitTop(src string) []string {
	bars, _, ok := scanTop(src)
	if !ok {
		return nil
	}
	out := make([]string, 0, len(bars)+1)
	start := 0
	for _, i := range bars {
		out = append(out, src[start:i])
		start = i + 1
	}
	return append(out, src[start:])
}

// scanTop returns the offsets of src's top-level '|' and of the ')' that
// closes a group opening src (-1 if src does not start with '('); ok is
// false for forms it does not parse (\Q…\E, POSIX classes, top-level flag
// groups, which apply to every later alternative).
func scanTop(src string) (bars []int, firstClose int, ok bool) {
	if strings.Contains(src, `\Q`) || strings.Contains(src, "[:") {
		return nil, -1, false
	}
	firstClose = -1
	depth, inClass := 0, false
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case c == '\\':
			i++ // the escaped byte (ASCII: a multi-byte rune is never escaped this way)
		case inClass:
			if c == ']' {
				inClass = false
			}
		case c == '[':
			inClass = true
			j := i + 1
			if j < len(src) && src[j] == '^' {
				j++
			}
			if j < len(src) && src[j] == ']' { // a leading ']' is literal
				i = j
			}
		case c == '(':
			if depth == 0 && setsFlags(src[i:]) {
				return nil, -1, false
			}
			depth++
		case c == ')':
			if depth--; depth == 0 && firstClose < 0 && src[0] == '(' {
				firstClose = i
			}
		case c == '|' && depth == 0:
			bars = append(bars, i)
		}
	}
	if depth != 0 || inClass {
		return nil, -1, false
	}
	return bars, firstClose, true
}

// matchAlts reports whether one of alts matches l.
func matchAlts(l *Line, alts []alt) bool {
	for i := range alts {
		a := &alts[i]
		if !l.may(a.id) {
			continue
		}
		if a.re == nil || a.gate == nil && l.holds(a.setIDs, a.sets, l.Text) && l.matchNear(a.id, a.re) ||
			a.gate != nil && a.mayMatch(l, l.Text) && a.re.MatchString(l.Text) {
			return true
		}
	}
	return false
}

// setsFlags reports whether group starts with "(?flags)", which changes the
// flags of the rest of the enclosing group ("(?flags:re)" does not).
func setsFlags(group string) bool {
	if !strings.HasPrefix(group, "(?") {
		return false
	}
	for _, c := range group[2:] {
		switch {
		case c == ')':
			return true
		case c == '-' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'):
		default:
			return false // ':' (scoped flags), 'P<' / '<' (named group), or invalid
		}
	}
	return false
}

// plainLiteral returns the text every match of src is, when src is a plain
// case-sensitive literal (its matches need no regex); from builtinTrees'
// facts when it has src.
func plainLiteral(src string) (string, bool) {
	if f := builtinFacts(src); f != nil {
		return f.plain, f.plainOK
	}
	return derivePlainLiteral(src)
}

// derivePlainLiteral is plainLiteral from the pattern's tree.
func derivePlainLiteral(src string) (string, bool) {
	re, err := parsePattern(src)
	if err != nil {
		return "", false
	}
	if re = re.Simplify(); re.Op != syntax.OpLiteral || re.Flags&syntax.FoldCase != 0 {
		return "", false
	}
	return string(re.Rune), true
}
