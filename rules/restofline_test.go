package rules

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestRestOfLineAgrees: a lazyRegexp answers as regexp does, whether or not
// it has a head, for the hand-written forms below and for every built-in
// pattern with a head on the example journals' messages (whole and
// split into lines) and on lines made of its literals.
func TestRestOfLineAgrees(t *testing.T) {
	forms := []struct {
		src  string
		head bool
	}{
		{`non-default args: (?P<args>\{.*)$`, true},
		{`config (?P<cfg>.*)$`, true},
		{`^x.*$`, true},
		{`(?:a|ab)(?P<r>b?.*)$`, true},
		{`a(?P<lazy>.*?)$`, true},
		{`(?P<w>(?:[^W].*?)?\bW_\w+.*?\b(?:is|not)\b.*)$`, true},
		{`(?s)a(.*)$`, false},     // '.' matches '\n'
		{`(?m)a(.*)$`, false},     // '$' ends a line
		{`a(.*)\)$`, false},       // something after the rest
		{`a((?P<in>.*))$`, false}, // the rest in a nested capture
		{`(a.*)$|b`, false},       // an alternation
		{`a.+$`, false},
		{`(?:a.*)$`, true},      // no capture: the head comes from the tree
		{`a[^\n]*$`, false},     // a class, which the parser keeps as one
		{`a\\.*$`, true},        // an escaped backslash, then the rest
		{`a\.*$`, false},        // a literal dot, repeated
		{`(?P<d>a\.*)$`, false}, // the same in a capture
	}
	texts := []string{
		"", "a", "ab", "abb", "non-default args: {'model': 'x'}", "xx non-default args: {",
		"config ", "config a\nb", "a\nab", "x\xffconfig \xfe", "aWb W_X is set", "W_A not W_B is",
		"aaab\n", "zab\xffq", `a\`, `a\\x`, "a...", "a.", "a\n.",
	}
	for _, f := range forms {
		p := &lazyRegexp{src: f.src}
		want := regexp.MustCompile(f.src)
		if p.compiled(); (p.rest.head != nil) != f.head {
			t.Errorf("%q: head %v, want %v", f.src, p.rest.head, f.head)
		}
		for _, s := range texts {
			agree(t, p, want, s)
		}
	}

	heads := builtinPatterns(t, func(p *lazyRegexp) bool { return p.rest.head != nil })
	var lines []string
	for _, m := range bundledMessages(t) {
		lines = append(lines, m) // the tracker matches the lines of m, and m
		if strings.Contains(m, "\n") {
			lines = append(lines, strings.Split(m, "\n")...)
		}
	}
	for _, p := range heads {
		lit := strings.Join(requiredLiterals(p.src), " ")
		lines = append(lines, lit, lit+" {'max_model_len': 4096}", lit+"x\ny", "> "+lit+lit)
	}
	hits := agreeOn(t, heads, lines)
	// The vLLM config and argument lines, SGLang's server_args, halogen's.
	if len(heads) < 5 || hits < 20 {
		t.Errorf("%d built-in patterns with a head matched %d messages: the test does not exercise them", len(heads), hits)
	}
}

// agree fails t unless p's four methods answer for s as want's do, and
// reports whether s matched.
func agree(t *testing.T, p *lazyRegexp, want *regexp.Regexp, s string) bool {
	t.Helper()
	if got, w := p.FindStringSubmatchIndex(s), want.FindStringSubmatchIndex(s); !slices.Equal(got, w) {
		t.Errorf("%q on %q: submatches %v, regexp's %v", p.src, s, got, w)
	}
	if got, w := p.FindStringSubmatch(s), want.FindStringSubmatch(s); !slices.Equal(got, w) {
		t.Errorf("%q on %q: %q, regexp's %q", p.src, s, got, w)
	}
	if got, w := p.FindStringIndex(s), want.FindStringIndex(s); !slices.Equal(got, w) {
		t.Errorf("%q on %q: match %v, regexp's %v", p.src, s, got, w)
	}
	m := want.MatchString(s)
	if p.MatchString(s) != m {
		t.Errorf("%q on %q: MatchString %v, regexp's %v", p.src, s, !m, m)
	}
	return m
}

func TestHeadSource(t *testing.T) {
	for _, c := range []struct {
		src       string
		inCapture bool
		head      string
		ok        bool
	}{
		{`config (?P<cfg>.*)$`, true, `config (?P<cfg>)`, true},
		{`non-default args: (?P<args>\{.*)$`, true, `non-default args: (?P<args>\{)`, true},
		{`a(?P<lazy>.*?)$`, true, `a(?P<lazy>)`, true},
		{`^x.*$`, false, `^x`, true},
		{`a\\.*$`, false, `a\\`, true},
		{`a\.*$`, false, "", false},
		{`(?:a.*)$`, false, "", false}, // the tree's head is printed instead
		{`a.*`, false, "", false},
		{`(a.*$`, true, "", false},
	} {
		if head, ok := headSource(c.src, c.inCapture); head != c.head || ok != c.ok {
			t.Errorf("headSource(%q, %v) = %q, %v; want %q, %v", c.src, c.inCapture, head, ok, c.head, c.ok)
		}
	}
}

// builtinPatterns returns the built-in rules' compiled patterns that keep
// says yes to.
func builtinPatterns(t *testing.T, keep func(p *lazyRegexp) bool) []*lazyRegexp {
	t.Helper()
	memo.begin()
	defer memo.end()
	if _, err := LoadBuiltin(); err != nil {
		t.Fatal(err)
	}
	var out []*lazyRegexp
	for _, p := range memo.res {
		if p.compiled(); keep(p) {
			out = append(out, p)
		}
	}
	return out
}

// agreeOn runs agree for every pattern of pats on every line, against the
// regexp package's compile of its source, and returns how many matched.
func agreeOn(t *testing.T, pats []*lazyRegexp, lines []string) int {
	t.Helper()
	hits := 0
	for _, p := range pats {
		want := regexp.MustCompile(p.src)
		for _, s := range lines {
			if agree(t, p, want, s) {
				hits++
			}
		}
	}
	return hits
}
