package rules

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestCaptureTailAgrees: a long pattern cut into head and capture tail
// answers as the regexp package does, for made-up patterns of the forms
// that are cut and not, and for every built-in pattern that is cut, on
// every bundled message and on lines made of its literals.
func TestCaptureTailAgrees(t *testing.T) {
	long := "(?:" + strings.Repeat("padding|", 40) + "x)"
	forms := []struct {
		src string
		cut bool
	}{
		{long + `(?:.*?Tried (?P<a>\d+) MiB)?(?:.*?free (?P<f>\d+))?`, true},
		{long + `(?i:hold)?(?P<n>[a-z]*)`, true},
		{long + `(?:.*?(?P<a>a+?)b)?c*`, true},
		{long + `(?P<a>\d+)`, false},              // the tail must match: it can fail
		{long + `(?:\b(?P<a>\d+))?`, false},       // an assertion in the tail
		{long + `(?:(?P<a>\d+)$)?`, false},        // another
		{`(?P<h>` + long + `)(?P<a>\d+)?`, false}, // a capture in the head
		{`x(?:.*?(?P<a>\d+))?`, false},            // too short to pay
	}
	texts := []string{"", "x", "x 12 Tried 40 MiB free 3", "paddingTried 5 MiB", "xx12", "padding hold ab",
		"xHOLDabc", "xaab", "xaabc c", "x\n12", "\xffx\xfe7", "zz padding12 free 9 Tried 1 MiB"}
	for _, f := range forms {
		p := &lazyRegexp{src: f.src}
		if p.compiled(); (p.split != nil) != f.cut {
			t.Errorf("%q: cut %v, want %v", f.src, p.split != nil, f.cut)
		}
		want := regexp.MustCompile(f.src)
		for _, s := range texts {
			agree(t, p, want, s)
		}
	}

	cut := builtinPatterns(t, func(p *lazyRegexp) bool { return p.split != nil })
	// The bundled messages up to 4 KiB that hold a literal of a cut
	// pattern (the head can match only those), and every 20th of the
	// others: they hold 94 MB, a few joined tracebacks most of it, and the
	// regexp package's NFA took minutes on all of them.
	var lines []string
	for i, m := range bundledMessages(t) {
		if len(m) > 4<<10 {
			continue
		}
		if i%20 == 0 || slices.ContainsFunc(cut, func(p *lazyRegexp) bool { return hasAny(m, requiredLiterals(p.src)) }) {
			lines = append(lines, m)
		}
	}
	for _, p := range cut {
		for _, lit := range requiredLiterals(p.src) {
			lines = append(lines, lit, "x "+lit+". Tried to allocate 2.00 GiB. GPU 0 has 10 MiB of which 3.00 MiB is free", lit+lit+"\n"+lit)
		}
	}
	hits := agreeOn(t, cut, lines)
	if len(cut) == 0 || hits < 20 {
		t.Errorf("%d built-in patterns cut, %d messages matched: the test does not exercise them", len(cut), hits)
	}
	t.Logf("%d built-in patterns cut, %d matches checked", len(cut), hits)
}

// FuzzCaptureTail: a pattern of a head (padded past minTailSplit with an
// alternative that never matches) and a tail answers as the regexp
// package does, cut or not.
func FuzzCaptureTail(f *testing.F) {
	f.Add(`a|b|c`, `(?:.*?(?P<x>\d+))?`, "zz b 12 c 3")
	f.Add(`(?i:out of memory|oom)`, `(?:.*?allocate (?P<a>[\d.]+ [GM]iB))?(?:.*?(?P<f>free))?`, "CUDA Out Of Memory. Tried to allocate 2.00 GiB, 1 free")
	f.Add(`x+?`, `(?P<a>x*)(?P<b>y??)`, "xxxyy")
	f.Fuzz(func(t *testing.T, head, tail, s string) {
		if len(head)+len(tail) > 300 {
			return
		}
		src := `(?:` + strings.Repeat("\x00\x01", minTailSplit/2) + `|` + head + `)` + tail
		want, err := regexp.Compile(src)
		if err != nil {
			return
		}
		p := &lazyRegexp{src: src}
		p.compiled()
		agree(t, p, want, s)
	})
}
