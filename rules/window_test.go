package rules

import (
	"math/rand"
	"strings"
	"testing"

	"github.com/llmfleet/analyzer/internal/race"
)

// idRegexp is a prefilter matcher and the regex it guards.
type idRegexp struct {
	id int
	re *lazyRegexp
}

// matchers lists every matcher of set that guards a regex.
func matchers(set *Set) []idRegexp {
	var out []idRegexp
	add := func(id int, re *lazyRegexp) {
		if re != nil {
			out = append(out, idRegexp{id, re})
		}
	}
	alts := func(as []alt) {
		for _, a := range as {
			add(a.id, a.re)
		}
	}
	for _, m := range set.frames {
		add(m.id, m.re)
		alts(m.alts)
	}
	for _, f := range set.fatal {
		add(f.id, f.re)
		alts(f.alts)
	}
	for _, e := range set.engines {
		for i, re := range e.detect {
			add(e.detectIDs[i], re)
		}
		for i, re := range e.banner {
			add(e.bannerIDs[i], re)
		}
		for i, re := range e.readyEv {
			add(e.readyIDs[i], re)
			alts(e.readyAlts[i])
		}
		for _, m := range e.phases {
			add(m.id, m.re)
			alts(m.alts)
		}
		for _, sl := range e.shape {
			add(sl.id, sl.re)
		}
	}
	for _, r := range set.all {
		if r.End {
			continue
		}
		add(r.matchID, r.match)
		alts(r.alts)
		if r.after != nil {
			add(r.afterID, r.after)
		}
		if r.until != nil {
			add(r.untilID, r.until)
		}
	}
	return out
}

// checkNear fails when near's verdict on line (after k bytes are stripped)
// contradicts the whole regex, for any matcher; it returns how many
// verdicts were decided (not nearUnknown).
func checkNear(t *testing.T, set *Set, ms []idRegexp, l *Line, line string, k int) int {
	t.Helper()
	set.Prepare(l, line)
	l.narrow(k)
	decided := 0
	for _, m := range ms {
		if !l.may(m.id) {
			continue
		}
		v := l.near(m.id, m.re)
		want := m.re.MatchString(l.Text)
		switch {
		case v == nearNo && want:
			t.Fatalf("near says %q does not match, it does: %q", m.re, l.Text)
		case v == nearYes && !want:
			t.Fatalf("near says %q matches, it does not: %q", m.re, l.Text)
		}
		if v != nearUnknown {
			decided++
		}
	}
	return decided
}

// TestNearAgreesWithRegex: on long lines made of the rules' own test lines,
// filler words, runes of two to four bytes, invalid bytes and newlines,
// every decided verdict of near is the whole regex's answer, and windows
// decide most of them (a test that cannot fail otherwise).
func TestNearAgreesWithRegex(t *testing.T) {
	set, err := LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	ms := matchers(set)
	var pieces []string
	for _, r := range set.all {
		for _, tc := range r.Tests {
			for _, l := range tc.Lines {
				pieces = append(pieces, l.Msg)
			}
		}
	}
	filler := []string{" ", "x", "word ", "\n", "é", "€", "𝄞", "\xff", "\x80", "\xe2\x82", "K", "\u212a", "_", "[", "]", ": ", "failed "}
	rng := rand.New(rand.NewSource(1))
	l := &Line{}
	n := 400
	if race.Enabled {
		n = 30 // one goroutine, nothing for the detector to find; 15x slower under it
	}
	decided, lines := 0, 0
	for range n {
		var b strings.Builder
		size := 256 + rng.Intn(6000)
		for b.Len() < size {
			if rng.Intn(4) == 0 {
				b.WriteString(pieces[rng.Intn(len(pieces))])
			} else {
				for range 1 + rng.Intn(40) {
					b.WriteString(filler[rng.Intn(len(filler))])
				}
			}
		}
		line := b.String()
		for _, k := range []int{0, rng.Intn(64)} {
			decided += checkNear(t, set, ms, l, line, k)
			lines++
		}
	}
	if decided < lines {
		t.Fatalf("windows decided %d verdicts on %d lines: they no longer apply", decided, lines)
	}
}

// TestNearDecides pins the three verdicts on a long line for one bounded
// pattern: no match near its literals, a match inside a window, and a
// pattern without a bound, which the line must run.
func TestNearDecides(t *testing.T) {
	set, err := LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	var startup *fatalLine
	for i := range set.fatal {
		if strings.Contains(set.fatal[i].re.String(), "tartup") {
			startup = &set.fatal[i]
		}
	}
	if startup == nil {
		t.Fatal("no fatal pattern of a failed startup")
	}
	if span := matchSpan(startup.re); span <= 0 || span > 64 {
		t.Fatalf("span of %q = %d", startup.re, span)
	}
	pad := strings.Repeat("the worker rpc: startup failedover; remote traceback follows. ", 40)
	l := &Line{}
	set.Prepare(l, pad)
	if v := l.near(startup.id, startup.re); v != nearNo {
		t.Errorf("no match near the literals: verdict %d, want nearNo", v)
	}
	set.Prepare(l, pad+"Startup failed because of X. "+pad)
	if v := l.near(startup.id, startup.re); v != nearYes {
		t.Errorf("a match mid-line: verdict %d, want nearYes", v)
	}
	if got := matchSpan(mustPattern(`failed: .*`)); got != -1 {
		t.Errorf("span of an unbounded pattern = %d, want -1", got)
	}
	if got := matchSpan(mustPattern(`(?:ab|c{2,3})\bé$`)); got != 5 {
		t.Errorf("span = %d, want 5 (two ASCII bytes, one rune of two)", got)
	}
}

// FuzzNear is differential: on any line, from any stripped offset, near's
// decided verdicts agree with every built-in matcher's whole regex.
func FuzzNear(f *testing.F) {
	set, err := LoadBuiltin()
	if err != nil {
		f.Fatal(err)
	}
	ms := matchers(set)
	f.Add(strings.Repeat("worker failed; ", 30)+"Startup failed", uint8(0))
	f.Add(strings.Repeat("é\xff vllm/v1/engine/core.py", 20), uint8(3))
	l := &Line{}
	f.Fuzz(func(t *testing.T, line string, k uint8) {
		for len(line) < windowLine && len(line) > 0 {
			line += line
		}
		checkNear(t, set, ms, l, line, min(int(k), len(line)))
	})
}

// TestNearConfinedRuns: a pattern with no bound but bytes it cannot hold
// (a file name: no space, no slash) is looked for in the run around each
// literal; the verdicts agree with the regex at every alignment, and a
// long line of such literals is decided.
func TestNearConfinedRuns(t *testing.T) {
	re := mustPattern(`\b\w*(?:nccl|all_reduce)\w*\.(?:cu|cpp):\d+`)
	p := &prefilter{}
	id := p.add(requiredLiterals(re.String()), re)
	p.build()
	if p.span[id] >= 0 || p.stops[id] == (byteSet{}) {
		t.Fatalf("span %d, stops %v: want unbounded and confined", p.span[id], p.stops[id])
	}
	for _, b := range []byte{' ', '/', '"', '\n'} {
		if !p.stops[id].has(b) {
			t.Errorf("%q is not a stop byte", b)
		}
	}
	for _, b := range []byte{'a', '_', '.', ':', '7'} {
		if p.stops[id].has(b) {
			t.Errorf("%q is a stop byte", b)
		}
	}
	decided := 0
	for _, tail := range []string{"csrc/custom_all_reduce.cu:368", "nccl_utils.cpp:12", "nccl.cu:x", "nccl.cu", "all_reduce.cu:", "xnccl.cuda:1", "é_nccl.cu:1"} {
		for _, pad := range []string{"a", " ", "/", "𝄞", "nccl "} {
			for _, after := range []string{"", " rest", "9", ":"} {
				line := strings.Repeat(pad, 100) + strings.Repeat("frame nccl_comm.py line 3 ", 20) + tail + after
				l := &Line{}
				p.scan(l, line)
				v := l.near(id, re)
				want := re.MatchString(line)
				if v == nearNo && want || v == nearYes && !want {
					t.Fatalf("on …%q: verdict %d, regex %v", line[len(line)-60:], v, want)
				}
				if v != nearUnknown {
					decided++
				}
			}
		}
	}
	if decided == 0 {
		t.Error("runs decided nothing")
	}
}

// TestNearWindowEdges: patterns whose matches can begin or end at a
// window's edge (^, $, \b, runes cut by the window) must not be taken for
// matches of the line; each line is tried at every alignment of its
// padding.
func TestNearWindowEdges(t *testing.T) {
	for _, tc := range []struct{ re, tail string }{
		{`^.{0,6}abc`, "xyzabc"},                  // ^ at a window's start
		{`abc.{0,6}$`, "abcxyz"},                  // $ at a window's end
		{`\b.{0,3}abc`, "wxyzabc"},                // \b after a word byte
		{`\x{FFFD}{2}.abc`, "𝄞𝄞𝄞abc"},             // runes cut at the start
		{`abc.\x{FFFD}{2}`, "abc𝄞𝄞𝄞"},             // runes cut at the end
		{`(?m)^.{0,4}abc`, "\nzzzzzabc"},          // a newline outside
		{`[^a]{3}abc`, "a𝄞𝄞abc"},                  // a rune in the window's first bytes
		{`(?i)k{2}abc`, "\u212a\u212aabc"},        // a folded literal's longer runes
		{`\Bxabc`, "zxabc"},                       // not a word boundary
		{`abc\b`, "abcd"},                         // a boundary after
		{`x?abc[0-9]{1,3}`, "abc1234"},            // the line keeps going
		{`(?:^|/)abc/(?:v1|engine)/`, "/abc/v1/"}, // one alternative anchored
	} {
		re := mustPattern(tc.re)
		p := &prefilter{}
		id := p.add(requiredLiterals(tc.re), re)
		p.build()
		if p.span[id] < 0 {
			t.Fatalf("%s: no span", tc.re)
		}
		decided := 0
		for pad := range 12 {
			for _, fill := range []string{"x", "𝄞", " ", "é", "\n"} {
				for _, after := range []string{"", " tail", "𝄞", "\n"} {
					line := strings.Repeat(fill, 300) + strings.Repeat("𝄞", pad%4) + strings.Repeat("y", pad/4) + tc.tail + after
					if after == "" {
						line = strings.Repeat("q", 300) + line // the tail ends the line
					}
					l := &Line{}
					p.scan(l, line)
					v := l.near(id, re)
					want := re.MatchString(line)
					if v == nearNo && want || v == nearYes && !want {
						t.Fatalf("%s on …%q: verdict %d, regex %v", tc.re, line[len(line)-40:], v, want)
					}
					if v != nearUnknown {
						decided++
					}
				}
			}
		}
		if decided == 0 {
			t.Errorf("%s: windows decided nothing", tc.re)
		}
	}
}

// mustPattern is compilePattern for a test's own pattern.
func mustPattern(src string) *lazyRegexp {
	p, err := compilePattern(src)
	if err != nil {
		panic(err)
	}
	return p
}
