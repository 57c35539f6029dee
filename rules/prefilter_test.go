package rules

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// prefilterLines are lines to check the prefilter on: the rule tests', the
// example journals' and the shared corpus's, plus overlapping literals.
func prefilterLines(t *testing.T, set *Set) []string {
	lines := []string{"", "ab", "out of memoryout of memory", "CUDA out of memory OutOfMemoryError",
		"(EngineCore_DP0 pid=1) INFO: Application startup complete.", "(APIServer pid=2) (Worker pid=3) NCCL error: x"}
	for _, r := range set.all {
		for _, tc := range r.Tests {
			for _, l := range tc.Lines {
				lines = append(lines, l.Msg)
			}
		}
	}
	files, _ := filepath.Glob("../examples/*.journal.json")
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(nil, 1<<24)
		for sc.Scan() {
			var rec map[string]any
			if json.Unmarshal(sc.Bytes(), &rec) != nil {
				continue
			}
			switch m := rec["MESSAGE"].(type) {
			case string:
				lines = append(lines, strings.Split(m, "\n")...)
			case []any:
				b := make([]byte, len(m))
				for i, x := range m {
					f, _ := x.(float64)
					b[i] = byte(f)
				}
				lines = append(lines, strings.Split(string(b), "\n")...)
			}
		}
		fh.Close()
	}
	logs, _ := filepath.Glob("../../shared/corpus/*/log.txt")
	for _, f := range logs {
		b, err := os.ReadFile(f)
		if err == nil {
			lines = append(lines, strings.Split(string(b), "\n")...)
		}
	}
	return lines
}

// TestPrefilterAgreesWithContains: the Aho-Corasick pass lets a matcher
// through exactly when one of its literals occurs in the (stripped) line.
func TestPrefilterAgreesWithContains(t *testing.T) {
	set, err := LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	type matcher struct {
		what string
		id   int
		lits []string
	}
	var ms []matcher
	for _, e := range set.engines {
		for i := range e.detect {
			ms = append(ms, matcher{e.Name + " detect", e.detectIDs[i], e.detectLits[i]})
		}
		for i := range e.banner {
			ms = append(ms, matcher{e.Name + " banner", e.bannerIDs[i], e.bannerLits[i]})
		}
		for i := range e.readyEv {
			ms = append(ms, matcher{e.Name + " ready", e.readyIDs[i], e.readyLits[i]})
		}
		for _, m := range e.phases {
			ms = append(ms, matcher{e.Name + " phase " + m.re.String(), m.id, m.lits})
		}
		for _, m := range e.shape {
			ms = append(ms, matcher{e.Name + " shape " + m.re.String(), m.id, m.lits})
		}
	}
	for _, r := range set.all {
		if r.End {
			continue
		}
		ms = append(ms, matcher{r.ID, r.matchID, r.literals})
		if r.after != nil {
			ms = append(ms, matcher{r.ID + " after", r.afterID, r.afterLits})
		}
		if r.until != nil {
			ms = append(ms, matcher{r.ID + " until", r.untilID, r.untilLits})
		}
	}
	eachPreparedLine(t, set, func(l *Line) {
		for _, m := range ms {
			if got, want := l.may(m.id), hasAny(l.Text, m.lits); got != want {
				t.Fatalf("%s on %q: prefilter says %v, literals %q say %v", m.what, l.Text, got, m.lits, want)
			}
		}
	})
}

// eachPreparedLine calls fn with each of prefilterLines prepared and then
// stripped as vLLM's lines are, or cut by 1 or 7 bytes.
func eachPreparedLine(t *testing.T, set *Set, fn func(l *Line)) {
	t.Helper()
	lines := prefilterLines(t, set)
	if len(lines) < 1000 {
		t.Fatalf("only %d lines to check", len(lines))
	}
	vllm := set.Engine("vllm")
	l := &Line{}
	for _, line := range lines {
		for _, cut := range []int{-1, 1, 7} {
			prepareCut(set, vllm, l, line, cut)
			fn(l)
		}
	}
}

// TestHoldsAgreesWithContains: Line.holds answers the literal sets of
// every rule and alternative as searching the (stripped) line does, from
// the scan for the sets addSets registered.
func TestHoldsAgreesWithContains(t *testing.T) {
	set, err := LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	type check struct {
		what string
		ids  []int
		sets [][]string
	}
	var cs []check
	addAlts := func(what string, alts []alt) {
		for _, a := range alts {
			cs = append(cs, check{fmt.Sprintf("%s alt %q", what, a.lits), a.setIDs, a.sets})
		}
	}
	for _, r := range set.all {
		if !r.End {
			cs = append(cs, check{r.ID, r.setIDs, r.sets})
			addAlts(r.ID, r.alts)
		}
	}
	for i := range set.fatal {
		addAlts("fatal", set.fatal[i].alts)
	}
	for i := range set.frames {
		addAlts("frame", set.frames[i].alts)
	}
	for _, e := range set.engines {
		for i := range e.phases {
			addAlts(e.Name+" phase", e.phases[i].alts)
		}
		for _, alts := range e.readyAlts {
			addAlts(e.Name+" ready", alts)
		}
	}
	registered := 0
	for _, c := range cs {
		if len(c.ids) != len(c.sets) {
			t.Fatalf("%s: %d ids for %d sets", c.what, len(c.ids), len(c.sets))
		}
		for _, id := range c.ids {
			if id >= 0 {
				registered++
			}
		}
	}
	if registered < 10 {
		t.Fatalf("only %d literal sets answered from the scan", registered)
	}
	eachPreparedLine(t, set, func(l *Line) {
		for _, c := range cs {
			if got, want := l.holds(c.ids, c.sets, l.Text), holdsAll(l.Text, c.sets); got != want {
				t.Fatalf("%s on %q: holds says %v, searching for %q says %v", c.what, l.Text, got, c.sets, want)
			}
		}
	})
}

// TestIsSourceLine: the hand-written test equals the sourceLine regex.
func TestIsSourceLine(t *testing.T) {
	set, err := LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	lines := append(prefilterLines(t, set), "raise X", "  if\tx", "x] elif y", "] return\n", "{a}", "{_a.b9}", "{9a}",
		"{a", "a{b.c}d", "{.a}", "if", "ifx y", "[x] raise", "(EngineCore pid=1) ERROR [core.py:1] raise RuntimeError(f\"{e}\")",
		"\f\rassert x", "x]  except y", "{a-b}", "{{a}}", "{}")
	for _, l := range lines {
		if got, want := isSourceLine(l), sourceLine.MatchString(l); got != want {
			t.Errorf("isSourceLine(%q) = %v, regex says %v", l, got, want)
		}
	}
}

// TestAltsAgreeWithRegex: matching a phase or ready pattern alternative by
// alternative gives the whole regex's answer, on every line and stripped
// line; and the split respects groups, classes and escapes.
func TestAltsAgreeWithRegex(t *testing.T) {
	set, err := LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	split := 0
	l := &Line{}
	for _, line := range prefilterLines(t, set) {
		for _, e := range set.engines {
			for _, strip := range []bool{false, true} {
				set.Prepare(l, line)
				if strip {
					e.StripLine(l)
				}
				for _, m := range e.phases {
					if m.alts != nil && matchAlts(l, m.alts) != m.re.MatchString(l.Text) {
						t.Fatalf("%s phase %s on %q: alternatives disagree with the regex", e.Name, m.re, l.Text)
					}
				}
				for i, alts := range e.readyAlts {
					if alts != nil && matchAlts(l, alts) != e.readyEv[i].MatchString(l.Text) {
						t.Fatalf("%s ready %s on %q: alternatives disagree with the regex", e.Name, e.readyEv[i], l.Text)
					}
				}
			}
		}
	}
	for _, e := range set.engines {
		for _, m := range e.phases {
			if m.alts != nil {
				split++
			}
		}
	}
	if split == 0 {
		t.Fatal("no phase pattern was split")
	}
	for src, want := range map[string][]string{
		`a|b(c|d)|[|]e|\|f`: {`a`, `b(c|d)`, `[|]e`, `\|f`},
		`[]|]x|y`:           {`[]|]x`, `y`},
		`[^]|]x|y`:          {`[^]|]x`, `y`},
		`(?i)a|b`:           nil,
		`x|(?s)a|b`:         nil,
		`(?i:a)|b`:          {`(?i:a)`, `b`},
		`(?P<x>a|b)|c`:      {`(?P<x>a|b)`, `c`},
		`[[:alpha:]|]|b`:    nil,
		`\Qa|b\E`:           nil,
		`single`:            {`single`},
		`x(?:y|z)`:          {`x(?:y|z)`},
		`a\\|b`:             {`a\\`, `b`},
	} {
		t.Run(src, func(t *testing.T) {
			if got := splitTop(src); !reflect.DeepEqual(got, want) {
				t.Errorf("splitTop(%q) = %q, want %q", src, got, want)
			}
		})
	}
	for src, want := range map[string][]string{
		`(?:a|b)c(?P<x>d)?`: {`(?:a)`, `(?:b)`, `c(?P<x>d)?`},
		`(?:a|b)`:           {`(?:a)`, `(?:b)`, ``},
		`(?:a|(?:b|c))d`:    {`(?:a)`, `(?:(?:b|c))`, `d`},
		`(?:a|[)|]|\))x`:    {`(?:a)`, `(?:[)|])`, `(?:\))`, `x`},
		`(?:a|b)c|d`:        nil, // splitTop's
		`(?:a|b)+c`:         nil,
		`(?:a|b)?c`:         nil,
		`(?:a|b){2}`:        nil,
		`(a|b)c`:            nil,
		`x(?:a|b)`:          nil,
		`(?:a)(?:b|c)`:      nil,
		`(?:(?i)a|b)c`:      nil, // the flag applies to b too
	} {
		heads, tail := distribute(src)
		if got := append(heads, tail); heads == nil && want != nil || heads != nil && !reflect.DeepEqual(got, want) {
			t.Errorf("distribute(%q) = %q, %q; want %q", src, heads, tail, want)
		}
	}
}

// TestStartLiteralsKeepMatches: searching from the first start literal, or
// alternative by alternative, finds the same match, captures included, as
// searching the whole line.
func TestStartLiteralsKeepMatches(t *testing.T) {
	set, err := LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	var rs []*Rule
	for _, r := range set.all {
		if !r.End && (r.startID >= 0 || r.alts != nil) {
			rs = append(rs, r)
		}
	}
	if len(rs) == 0 {
		t.Fatal("no rule has start literals")
	}
	vllm := set.Engine("vllm")
	l := &Line{}
	lines := append(prefilterLines(t, set), "x CUDA out of memory. Tried to allocate 2.00 GiB of which 1 GiB is free",
		"Constraints violated (L['x'].size()[0])! You marked L['x'] as dynamic but your code specialized it to be a constant (3)")
	for _, line := range lines {
		for _, cut := range []int{-1, 0, 3} {
			prepareCut(set, vllm, l, line, cut)
			for _, r := range rs {
				if got, want := r.find(l, l.Text), r.match.FindStringSubmatchIndex(l.Text); !reflect.DeepEqual(got, want) {
					t.Fatalf("%s on %q: from the start literals %v, whole line %v", r.ID, l.Text, got, want)
				}
			}
			for _, e := range set.engines {
				for _, sh := range e.shape {
					got := submatches(l.Text, search(l, sh.re, sh.startID, l.Text))
					if want := sh.re.FindStringSubmatch(l.Text); !reflect.DeepEqual(got, want) {
						t.Fatalf("%s shape %s on %q: from the start literals %q, whole line %q", e.Name, sh.re, l.Text, got, want)
					}
				}
			}
		}
	}
	for src, want := range map[string][]string{
		`abc|(?P<x>def)+g`:   {"abc", "def"},
		`(?:abc|de)x`:        {"abcx", "dex"},
		`(?:ab|d)x`:          nil, // "dx" is too short
		`^abc`:               nil,
		`\babc`:              nil,
		`(?i)abc`:            nil,
		`(?:abc)?def`:        {"abcdef", "def"},
		`abc.*?(?P<n>\d+)`:   {"abc"},
		`(?:CUDA|HIP) error`: {"CUDA error", "HIP error"},
		`[Ii]nsufficient`:    {"Insufficient", "insufficient"},
	} {
		t.Run(src, func(t *testing.T) {
			if got := startLiterals(src); !reflect.DeepEqual(got, want) {
				t.Errorf("startLiterals(%q) = %q, want %q", src, got, want)
			}
		})
	}
}

func TestAnchoredPrefix(t *testing.T) {
	for src, want := range map[string]string{
		`^(?:\((?:[A-Za-z][A-Za-z0-9_]*)(?: rank=\d+)? pid=\d+(?:, ip=[0-9.]+)?\) ?)+`: "(",
		`^\[rank(?P<r>\d+)\]:`: "[rank",
		`^(?i)worker `:         "",
		`^(?:a|b)c`:            "",
		`\(pid=\d+\)`:          "", // not anchored
		`(?m)^x`:               "", // line anchor: matches after any newline
		`^x*y`:                 "",
		`^(`:                   "", // does not parse
	} {
		t.Run(src, func(t *testing.T) {
			if got := anchoredPrefix(src); got != want {
				t.Errorf("anchoredPrefix(%q) = %q, want %q", src, got, want)
			}
		})
	}
}

// prepareCut prepares line into l, then strips it as eng does (cut < 0) or
// drops its first cut bytes, as the tracker narrows prepared lines.
func prepareCut(set *Set, eng *Engine, l *Line, line string, cut int) {
	set.Prepare(l, line)
	switch {
	case cut < 0:
		eng.StripLine(l)
	case cut <= len(line):
		l.narrow(cut)
	}
}
