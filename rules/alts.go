package rules

import (
	"regexp/syntax"
	"strings"
)

// alt is one top-level alternative of a pattern that is only tested for a
// match (phase markers, ready evidence). A line matches A|B|... exactly when
// it matches one alternative, so each gets its own prefilter matcher and an
// alternative that is a plain literal needs no regex at all: the prefilter
// already found it. Long lines made the whole alternation the tracker's
// most expensive regex.
type alt struct {
	re   *lazyRegexp // nil: the alternative is exactly its one literal
	lits []string
	sets [][]string // literalSets: checked before re
	id   int        // prefilter matcher id
}

// compileAlts splits src into its alternatives, or returns nil when src has
// one alternative or a form the split does not handle (then the whole
// regex runs, as before).
func compileAlts(src string) []alt {
	parts := splitTop(src)
	if len(parts) < 2 {
		return nil
	}
	out := make([]alt, 0, len(parts))
	for _, p := range parts {
		re, err := compilePattern(p)
		if err != nil {
			return nil
		}
		a := alt{re: re, lits: requiredLiterals(p), sets: literalSets(p)}
		if sre, err := parsePattern(p); err == nil {
			sre = sre.Simplify()
			if sre.Op == syntax.OpLiteral && sre.Flags&syntax.FoldCase == 0 &&
				len(a.lits) == 1 && a.lits[0] == string(sre.Rune) {
				a.re = nil
			}
		}
		out = append(out, a)
	}
	return out
}

// splitTop splits a regex at its top-level '|', or returns nil for forms it
// does not parse (\Q…\E, POSIX classes, top-level flag groups, which apply
// to every later alternative).
func splitTop(src string) []string {
	if strings.Contains(src, `\Q`) || strings.Contains(src, "[:") {
		return nil
	}
	var out []string
	depth, start, inClass := 0, 0, false
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
				return nil
			}
			depth++
		case c == ')':
			depth--
		case c == '|' && depth == 0:
			out = append(out, src[start:i])
			start = i + 1
		}
	}
	if depth != 0 || inClass {
		return nil
	}
	return append(out, src[start:])
}

// matchAlts reports whether one of alts matches l.
func matchAlts(l *Line, alts []alt) bool {
	for i := range alts {
		a := &alts[i]
		if l.may(a.id) && (a.re == nil || holdsAll(l.Text, a.sets) && l.matchNear(a.id, a.re)) {
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
