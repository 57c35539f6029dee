package rules

import (
	"regexp/syntax"
	"unicode"
	"unicode/utf8"
)

// Go's regexes cost in proportion to the line they run on, and the
// slowest mode (the NFA, past a few KiB) is the one long lines get: a
// traceback joined into one record, a line split at 8 KiB. Most patterns
// match at most a few dozen bytes, and every match holds one of the
// pattern's required literals, whose positions the prefilter's scan
// already has. A pattern of bounded span can only match within span bytes
// of such a literal, so on a line of some length its regex runs on those
// windows first: no match there is no match in the line (in the night
// bench, 9-11 % less time for explain).
const (
	// windowLine is the shortest text worth cutting into windows.
	windowLine = 256
	// maxWindowSpan is the longest span that still pays: longer ones run
	// on the whole line.
	maxWindowSpan = 512
)

// A pattern without a bound can still be confined: when no part of it can
// match some bytes (a space, a slash, a quote), every match lies in a run
// of the other bytes, so the run around each of its literals is its window
// (a pattern of file names like `\w*nccl\w*\.cu:\d+` in a 7 KB traceback
// line, which no span bounds).

// byteSet is a set of bytes, a bit each.
type byteSet [4]uint64

func (b *byteSet) add(c byte)      { b[c/64] |= 1 << (c % 64) }
func (b *byteSet) has(c byte) bool { return b[c/64]&(1<<(c%64)) != 0 }
func (b *byteSet) addRange(lo, hi byte) {
	for c := int(lo); c <= int(hi); c++ {
		b.add(byte(c))
	}
}

// windowBounds returns matchSpan and stopBytes of re, from builtinTrees'
// facts when it has re's source (-1 and no stop bytes for nil).
func windowBounds(re *lazyRegexp) (span int, stops byteSet) {
	if re == nil {
		return -1, byteSet{}
	}
	if f := builtinFacts(re.String()); f != nil {
		return f.span, f.stops
	}
	return deriveWindowBounds(re.String())
}

// deriveWindowBounds is windowBounds from the tree of src.
func deriveWindowBounds(src string) (span int, stops byteSet) {
	tree, err := parsePattern(src)
	if err != nil {
		return -1, byteSet{}
	}
	if span = spanOf(tree); span > maxWindowSpan {
		span = -1
	}
	return span, stopBytes(tree)
}

// stopBytes returns the bytes no match of re can hold (empty when every
// byte can occur in one).
func stopBytes(re *syntax.Regexp) byteSet {
	var can byteSet
	canMatch(re, &can)
	var stop byteSet
	for i := range stop {
		stop[i] = ^can[i]
	}
	return stop
}

// canMatch adds to can the bytes a match of re can hold. Any rune past
// ASCII adds every byte from 0x80 on: its encoding, and the invalid bytes
// the regexp package reads as U+FFFD.
func canMatch(re *syntax.Regexp, can *byteSet) {
	runes := func(lo, hi rune) {
		if lo < utf8.RuneSelf {
			can.addRange(byte(lo), byte(min(hi, utf8.RuneSelf-1)))
		}
		if hi >= utf8.RuneSelf {
			can.addRange(0x80, 0xff)
		}
	}
	switch re.Op {
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			runes(r, r)
			if re.Flags&syntax.FoldCase != 0 {
				for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
					runes(f, f)
				}
			}
		}
	case syntax.OpCharClass:
		for i := 0; i+1 < len(re.Rune); i += 2 {
			runes(re.Rune[i], re.Rune[i+1])
		}
	case syntax.OpAnyCharNotNL:
		runes(0, '\n'-1)
		runes('\n'+1, unicode.MaxRune)
	case syntax.OpAnyChar:
		runes(0, unicode.MaxRune)
	default:
		for _, sub := range re.Sub {
			canMatch(sub, can)
		}
	}
}

// matchSpan returns the most bytes a match of the regex can span, or -1
// when that is unbounded (a star, a plus, an open repeat) or above
// maxWindowSpan.
func matchSpan(re *lazyRegexp) int {
	span, _ := windowBounds(re)
	return span
}

// spanOf is matchSpan on a parsed regex, in bytes of UTF-8; -1 unbounded.
func spanOf(re *syntax.Regexp) int {
	switch re.Op {
	case syntax.OpNoMatch, syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine,
		syntax.OpBeginText, syntax.OpEndText, syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return 0
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase != 0 {
			return utf8.UTFMax * len(re.Rune) // a folded rune may be longer ("k", Kelvin sign)
		}
		n := 0
		for _, r := range re.Rune {
			n += runeBytes(r)
		}
		return n
	case syntax.OpCharClass:
		if len(re.Rune) == 0 {
			return 0
		}
		return runeBytes(re.Rune[len(re.Rune)-1]) // ranges are sorted: the last is the widest
	case syntax.OpAnyCharNotNL, syntax.OpAnyChar:
		return utf8.UTFMax
	case syntax.OpCapture, syntax.OpQuest:
		return spanOf(re.Sub[0])
	case syntax.OpStar, syntax.OpPlus:
		return -1
	case syntax.OpRepeat:
		n := spanOf(re.Sub[0])
		if re.Max < 0 || n < 0 {
			return -1
		}
		return min(re.Max*n, 1<<20)
	case syntax.OpConcat, syntax.OpAlternate:
		total := 0
		for _, sub := range re.Sub {
			n := spanOf(sub)
			if n < 0 {
				return -1
			}
			if re.Op == syntax.OpConcat {
				total = min(total+n, 1<<20)
			} else {
				total = max(total, n)
			}
		}
		return total
	}
	return -1
}

// runeBytes bounds the bytes r takes in a text: its UTF-8 length (an
// invalid byte, which the regexp package reads as U+FFFD, takes one), 4
// for a rune UTF-8 cannot encode.
func runeBytes(r rune) int {
	if n := utf8.RuneLen(r); n > 0 {
		return n
	}
	return utf8.UTFMax
}

// What a look at the windows of a line tells of a regex.
const (
	nearUnknown int8 = iota // run the regex on the line
	nearNo                  // it does not match the line
	nearYes                 // it matches the line
)

// near looks for matcher id's regex re around the occurrences of the
// matcher's literals in a long line: each window is the span on both sides
// of a literal and one byte more (the byte an assertion such as \b or
// (?m)^ looks at). No match in any window: the line has none. A match in a
// window that keeps a byte of the window on each side (or reaches the
// line's own start or end) is one in the line: every assertion in it saw
// the line's bytes. Any other case, or a short line, is nearUnknown.
func (l *Line) near(id int, re *lazyRegexp) int8 {
	if l == nil || len(l.Text) < windowLine || id >= len(l.pre.span) {
		return nearUnknown
	}
	span, stops := int(l.pre.span[id]), &l.pre.stops[id]
	confined := *stops != byteSet{}
	if span < 0 && !confined || l.pre.always[id/64]&(1<<(id%64)) != 0 {
		return nearUnknown // unbounded, or needs no literal
	}
	text := l.Text
	look := func(from, to int) int8 {
		// Whole runes only: the regexp package reads runes from where its
		// text starts, so a window starts and ends where the line's runes
		// do (a byte that does not continue a rune starts one). The extra
		// byte of each window already keeps a match away from a cut rune
		// and from the window's edges; these checks keep the verdicts
		// right should the windows change.
		for from > 0 && !utf8.RuneStart(text[from]) {
			from--
		}
		for to < len(text) && !utf8.RuneStart(text[to]) {
			to++
		}
		loc := re.FindStringIndex(text[from:to])
		switch {
		case loc == nil:
			return nearNo
		case (loc[0] > 0 || from == 0) && (loc[1] < to-from || to == len(text)):
			return nearYes
		}
		return nearUnknown
	}
	from, to := -1, -1 // the window being grown
	run := 0           // bytes looked at so far
	for _, h := range l.hits {
		if h.Start < l.off || !l.pre.uses(h.Lit, id) {
			continue
		}
		s, e := 0, len(text)
		if span >= 0 {
			s, e = max(h.Start-l.off-span-1, 0), min(h.End-l.off+span+1, len(text))
		}
		if confined {
			// The run of bytes a match can hold, with the stop byte on each
			// side. Without a span, every window is such a run, so a scan
			// stops where the window being grown ends (a run reaching it
			// merges with it): each byte is scanned about once however many
			// literals a run holds. With one, the span bounds the scans.
			grown := span < 0 && from >= 0
			floor := s
			if grown {
				floor = max(floor, to)
			}
			k := h.Start - l.off
			for k > floor && !stops.has(text[k-1]) {
				k--
			}
			s = max(s, k-1, 0)
			if !grown || h.End-l.off > to {
				k = h.End - l.off
				for k < e && !stops.has(text[k]) {
					k++
				}
				e = min(e, k+1)
			} else {
				e = min(e, to)
			}
		}
		if from >= 0 && s <= to {
			from, to = min(from, s), max(to, e) // hits come by end: windows overlap or follow
			continue
		}
		if from >= 0 {
			// Windows that cover most of the line cost what the whole line
			// does, and the caller would then run it again: run it whole.
			if run += to - from; run > len(text)/2 {
				return nearUnknown
			}
			if v := look(from, to); v != nearNo {
				return v
			}
		}
		from, to = s, e
	}
	if from < 0 {
		return nearUnknown // no literal seen: the caller's prefilter decides
	}
	if run += to - from; run > len(text)/2 {
		return nearUnknown
	}
	return look(from, to)
}

// matchNear is re.MatchString(l.Text) for matcher id (see near).
func (l *Line) matchNear(id int, re *lazyRegexp) bool {
	switch l.near(id, re) {
	case nearNo:
		return false
	case nearYes:
		return true
	}
	return re.MatchString(l.Text)
}

// mayMatchNear reports whether matcher id's regex re may match l.Text:
// false when near says it does not.
func (l *Line) mayMatchNear(id int, re *lazyRegexp) bool { return l.near(id, re) != nearNo }

// mayMatchText is mayMatchNear for a text that may not be l's (a rule
// test's line, l nil): true unless text is l.Text and near says no.
func (l *Line) mayMatchText(id int, re *lazyRegexp, text string) bool {
	return l == nil || text != l.Text || l.mayMatchNear(id, re)
}

// uses reports whether matcher id needs literal lit.
func (p *prefilter) uses(lit, id int) bool {
	for _, m := range p.users[lit] {
		if int(m) == id {
			return true
		}
	}
	return false
}
