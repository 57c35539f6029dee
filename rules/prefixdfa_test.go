package rules

import (
	"encoding/json"
	"os"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"sync"
	"testing"
)

// regexpPrefix is what stripLen asks of the regexp package: the length of
// the match at the start of text.
func regexpPrefix(re *regexp.Regexp, text string) (int, bool) {
	if loc := re.FindStringIndex(text); loc != nil && loc[0] == 0 {
		return loc[1], true
	}
	return 0, false
}

func TestPrefixDFAStripPatterns(t *testing.T) {
	set, err := LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	lines := []string{
		"(APIServer pid=1) INFO 10-02 09:00:00 [api_server.py:1] vLLM API server version 0.11.0",
		"(EngineCore_DP0 pid=311) (RayWorkerWrapper pid=144, ip=10.0.0.7) ERROR torch.OutOfMemoryError",
		"(ServeReplica:app:LLMServer pid=12, ip=10.0.0.1) INFO x",
		"(VllmWorker rank=1 pid=77) WARNING y",
		"(APIServer pid=1)no space after",
		"(APIServer pid=) not a prefix",
		"(APIServer pid=1) (Worker pid=2",
		"INFO no prefix at all",
		"(Wörker pid=1) non-ASCII name",
		"(Worker pid=1) (Wörker pid=2) non-ASCII in the second",
		"",
	}
	dfas := 0
	for _, e := range set.engines {
		for i, re := range e.strip {
			d := e.stripDFA[i].get()
			if d == nil {
				continue
			}
			dfas++
			for _, l := range lines {
				wantN, wantOK := regexpPrefix(re.compiled(), l)
				n, ok, decided := d.match(l)
				if !decided {
					if isASCII(l) {
						t.Errorf("%s %q: undecided on ASCII text %q", e.Name, re, l)
					}
					continue
				}
				if n != wantN || ok != wantOK {
					t.Errorf("%s %q on %q: DFA %d %v, regexp %d %v", e.Name, re, l, n, ok, wantN, wantOK)
				}
			}
		}
	}
	if v := set.Engine("vllm"); v == nil || len(v.stripDFA) == 0 || v.stripDFA[0].get() == nil {
		t.Fatal("vllm's process-prefix strip pattern has no DFA")
	}
	if got, want := set.Engine("vllm").StripLen(lines[1]), len("(EngineCore_DP0 pid=311) (RayWorkerWrapper pid=144, ip=10.0.0.7) "); got != want {
		t.Errorf("vllm strips %d bytes of a nested Ray prefix, want %d", got, want)
	}
	t.Logf("%d strip patterns with a DFA", dfas)
}

// TestPrefixDFARefuses: a pattern with an assertion the DFA cannot decide
// or too many states gets none (at once, or failed once a text leads
// there), and decides nothing; the others are built whole.
func TestPrefixDFARefuses(t *testing.T) {
	for _, expr := range []string{`^\bword`, `^a$`, `(?m)^a`, `^(a|b)*c{1000}`, `^[ab]*a[ab]{9}`} {
		if d := newPrefixDFA(expr); d.complete() {
			t.Errorf("%q: built a DFA, want none (assertion or too many states)", expr)
		}
	}
	d := newPrefixDFA(`^a$`)
	if d == nil {
		t.Fatal(`^a$: no start state`)
	}
	if _, _, decided := d.match("ab"); decided {
		t.Error(`^a$ decided "ab" past the $ it cannot decide`)
	}
	if _, _, decided := d.match("b"); decided {
		t.Error(`^a$ decided "b" after it failed`)
	}
	for _, expr := range []string{`^(?:\((?:[A-Za-z][\w:.-]*)(?: rank=\d+)? pid=\d+(?:, ip=[0-9a-fA-F.:]+)?\) ?)+`, `^\[[^\]]*\]`, `a|ab`, `(?i)^info`} {
		if !newPrefixDFA(expr).complete() {
			t.Errorf("%q: no DFA", expr)
		}
	}
}

// TestPrefixDFAConcurrentBuild: goroutines that build one DFA (a lazyDFA,
// as an engine's strip and detect patterns are) and its states while they
// match (as the live pipeline, the web handlers and a reload share the
// patterns) agree with the regexp. make test runs it under -race.
func TestPrefixDFAConcurrentBuild(t *testing.T) {
	msgs := bundledMessages(t)
	for _, p := range []PrefixRegexp{procPrefix, stampPrefix, sourcePrefix} {
		d := &lazyDFA{expr: p.String(), build: newPrefixDFA}
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Go(func() {
				for i := g; i < len(msgs); i += 2 {
					m := msgs[i]
					n, ok, decided := d.match(m)
					if !decided {
						continue
					}
					if wantN, wantOK := regexpPrefix(p.Regexp, m); n != wantN || ok != wantOK {
						t.Errorf("%s on %q: DFA %d %v, regexp %d %v", p, m, n, ok, wantN, wantOK)
						return
					}
				}
			})
		}
		wg.Wait()
		if !d.get().complete() {
			t.Errorf("%s: failed", p)
		}
	}
}

// FuzzPrefixDFA: wherever the DFA decides, it agrees with the regexp
// package on the length of the match at the start of the text.
func FuzzPrefixDFA(f *testing.F) {
	f.Add(`^(?:\((?:[A-Za-z][\w:.-]*)(?: rank=\d+)? pid=\d+(?:, ip=[0-9a-fA-F.:]+)?\) ?)+`, "(A pid=1) (B pid=2, ip=::1) x")
	f.Add(`a|ab`, "abc")
	f.Add(`(a*)(a|b)*?c`, "aabac")
	f.Add(`x*?`, "xxx")
	f.Add(`(?i)^info|warn`, "WARNING")
	for _, p := range []PrefixRegexp{procPrefix, bracketPrefix, stampPrefix, levelPrefix, sourcePrefix} {
		f.Add(p.String(), "(EngineCore_DP0 pid=1) [rank0]: 2025-08-13 14:29:40 INFO [core.py:1] x")
	}
	f.Fuzz(func(t *testing.T, expr, text string) {
		re := fuzzPattern(expr)
		if re == nil {
			return
		}
		d := newPrefixDFA(expr)
		if d == nil {
			return
		}
		n, ok, decided := d.match(text)
		if !decided {
			return
		}
		wantN, wantOK := regexpPrefix(re, text)
		if n != wantN || ok != wantOK {
			t.Fatalf("%q on %q: DFA %d %v, regexp %d %v", expr, text, n, ok, wantN, wantOK)
		}
		// The submatches of the n bytes the DFA matched are the text's.
		if tree, err := parsePattern(expr); err == nil && anchoredTree(tree.Simplify()) {
			p := PrefixRegexp{re, d}
			if got, want := p.FindStringSubmatch(text), re.FindStringSubmatch(text); !slices.Equal(got, want) {
				t.Fatalf("%q on %q: submatches %v, regexp %v", expr, text, got, want)
			}
		}
	})
}

// TestPrefixRegexpsAgree runs the envelope's anchored patterns on every
// message of the bundled journals, and on each message with its first
// envelope parts cut off, through the DFA and through the regexp (the
// judge's traceback patterns: judge.TestTracebackRegexpsAgree).
func TestPrefixRegexpsAgree(t *testing.T) {
	res := map[string]PrefixRegexp{"procPrefix": procPrefix, "bracketPrefix": bracketPrefix, "stampPrefix": stampPrefix, "levelPrefix": levelPrefix,
		"sourcePrefix": sourcePrefix}
	for name, p := range res {
		if p.dfa == nil {
			t.Errorf("%s: no DFA", name)
		}
	}
	msgs := bundledMessages(t)
	for name, p := range res {
		matched := 0
		for _, m := range msgs {
			if got, want := p.FindString(m), p.Regexp.FindString(m); got != want {
				t.Errorf("%s.FindString(%q) = %q, regexp %q", name, m, got, want)
			}
			if got, want := p.FindStringSubmatch(m), p.Regexp.FindStringSubmatch(m); !slices.Equal(got, want) {
				t.Errorf("%s.FindStringSubmatch(%q) = %q, regexp %q", name, m, got, want)
			}
			if p.MatchString(m) {
				matched++
			}
		}
		if matched == 0 {
			t.Errorf("%s matched none of %d messages: the test does not exercise it", name, len(msgs))
		}
	}
}

// TestDetectDFAs checks the DFAs of the engine detection patterns that are
// anchored at the start against their regexps on the bundled messages.
func TestDetectDFAs(t *testing.T) {
	set, err := LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	msgs := bundledMessages(t)
	dfas, matched := 0, 0
	for _, e := range set.engines {
		for i, re := range e.detect {
			d := e.detectDFA[i].get()
			if (d != nil) != anchoredAtStart(re.String()) {
				t.Errorf("%s detect %q: DFA %v, anchored %v", e.Name, re, d != nil, anchoredAtStart(re.String()))
			}
			if d == nil {
				continue
			}
			dfas++
			for _, m := range msgs {
				_, ok, decided := d.match(m)
				if decided && ok != re.MatchString(m) {
					t.Errorf("%s detect %q on %q: DFA %v, regexp %v", e.Name, re, m, ok, !ok)
				}
				if decided && ok {
					matched++
				}
			}
		}
	}
	if dfas == 0 || matched == 0 {
		t.Errorf("%d detect DFAs matched %d messages: the test does not exercise them", dfas, matched)
	}
}

// bundledMessages returns the string MESSAGEs of the bundled journals, each
// also with its leading words cut off one by one.
func bundledMessages(t *testing.T) []string {
	var msgs []string
	for _, path := range []string{"../examples/dankserver-night-ladder.journal.json", "../examples/dankclaw-day.journal.json"} {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(data), "\n") {
			var rec struct{ MESSAGE any }
			if json.Unmarshal([]byte(l), &rec) != nil {
				continue
			}
			if s, ok := rec.MESSAGE.(string); ok {
				for ; s != ""; s = strings.TrimLeft(s[1:], " ") {
					msgs = append(msgs, s)
					if i := strings.IndexAny(s, " ]"); i >= 0 {
						s = s[i:]
					} else {
						break
					}
				}
			}
		}
	}
	if len(msgs) < 1000 {
		t.Fatalf("only %d messages", len(msgs))
	}
	return msgs
}

// BenchmarkNewPrefixDFA builds the envelope's DFAs whole (a command
// builds only the states its lines reach, as they reach them).
func BenchmarkNewPrefixDFA(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		for _, p := range []PrefixRegexp{procPrefix, bracketPrefix, stampPrefix, levelPrefix, loggerPrefix, sourcePrefix} {
			if !newPrefixDFA(p.String()).complete() {
				b.Fatalf("%s: no DFA", p)
			}
		}
	}
}

// TestFindRankAgrees: findRank's literal check never hides a match of
// tpRank, on every bracket of the bundled journals and on each form it
// names.
func TestFindRankAgrees(t *testing.T) {
	brackets := []string{"2025-08-13 14:29:40 TP0", "DP1 TP3", "PP 2", "EP12", "RANK 3", "rank0", "rank 1", "core.py:708", "TP", "xTP1", "TP1x", ""}
	for _, m := range bundledMessages(t) {
		if b := bracketPrefix.Regexp.FindStringSubmatch(strings.TrimLeft(m, " \t")); b != nil {
			brackets = append(brackets, b[1])
		}
	}
	found := 0
	for _, b := range brackets {
		got, want := findRank(b), tpRank.FindString(b)
		if got != want {
			t.Errorf("findRank(%q) = %q, tpRank %q", b, got, want)
		}
		if want != "" {
			found++
		}
	}
	if found < 6 {
		t.Errorf("tpRank matched %d of %d brackets: the test does not exercise it", found, len(brackets))
	}
	if _, key, _ := Envelope("[2025-08-13 14:29:40 TP0] Load weight end."); key != "TP0;" {
		t.Errorf("key %q, want TP0;", key)
	}
}

// BenchmarkPrefixDFAMatch: the envelope's DFAs on typical first bytes of
// engine lines, states already built (the per-line cost).
func BenchmarkPrefixDFAMatch(b *testing.B) {
	msgs := []string{
		`(APIServer pid=1) INFO:     10.0.6.194:31484 - "POST /v1/chat/completions HTTP/1.1" 200 OK`,
		"(EngineCore_DP0 pid=311) (RayWorkerWrapper pid=144, ip=10.0.0.7) ERROR torch.OutOfMemoryError",
		"INFO 10-02 09:00:00 [api_server.py:1] vLLM API server version 0.11.0",
		"2025-08-13 14:29:40 INFO x",
	}
	var ds []*prefixDFA
	for _, p := range []PrefixRegexp{procPrefix, stampPrefix, sourcePrefix, levelPrefix} {
		ds = append(ds, newPrefixDFA(p.String()))
	}
	n := 0
	for b.Loop() {
		for _, d := range ds {
			for _, m := range msgs {
				k, _, _ := d.match(m)
				n += k
			}
		}
	}
	if n == 0 {
		b.Fatal("no match")
	}
}

// TestByteClassesAsMatchRune: the classes refined from each instruction's
// byte set are the partition asking Inst.MatchRune about every byte gives,
// numbered the same way, for every pattern of the built-in rules and for
// case folds, negated classes, dots and non-ASCII ranges.
func TestByteClassesAsMatchRune(t *testing.T) {
	srcs, err := loadedPatterns(Builtin)
	if err != nil {
		t.Fatal(err)
	}
	srcs = append(srcs, `(?i)kelvin|s`, `(?i)[k-s]x`, `[^\]]+`, `a.b`, `(?s:.)`, `[\x00-\x7f]`, `[é-ü]|\pL`, `(?i)é`, `\d+\s\w`)
	reference := func(prog *syntax.Prog) (reps []rune, class [128]uint8) {
		index := map[string]uint8{}
		for c := range rune(128) {
			var sig []byte
			for i := range prog.Inst {
				switch in := &prog.Inst[i]; in.Op {
				case syntax.InstRune, syntax.InstRune1, syntax.InstRuneAny, syntax.InstRuneAnyNotNL:
					b := byte('0')
					if in.MatchRune(c) {
						b = '1'
					}
					sig = append(sig, b)
				}
			}
			k, ok := index[string(sig)]
			if !ok {
				k = uint8(len(reps))
				index[string(sig)] = k
				reps = append(reps, c)
			}
			class[c] = k
		}
		return reps, class
	}
	split := 0
	for _, src := range srcs {
		re, err := syntax.Parse(src, syntax.Perl)
		if err != nil {
			t.Fatal(err)
		}
		prog, err := syntax.Compile(re.Simplify())
		if err != nil {
			t.Fatal(err)
		}
		reps, class := byteClasses(prog)
		wantReps, wantClass := reference(prog)
		if !slices.Equal(reps, wantReps) || class != wantClass {
			t.Fatalf("%q: reps %q classes %v, want %q %v", src, reps, class, wantReps, wantClass)
		}
		if len(reps) > 2 {
			split++
		}
	}
	if split < 100 {
		t.Errorf("%d patterns with more than two classes: the test does not exercise byteClasses", split)
	}
}

// anchoredAtStart reports whether every match of expr begins at the start
// of the text (expr is ^ or \A followed by the rest).
func anchoredAtStart(expr string) bool {
	re, err := parsePattern(expr)
	if err != nil {
		return false
	}
	return anchoredTree(re.Simplify())
}
