package judge

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/internal/randline"
	"github.com/llmfleet/analyzer/rules"
)

// TestTracebackRegexpsAgree runs the traceback reader's anchored patterns
// on every message of the bundled journals, and on each message with its
// first envelope parts cut off, through the DFA and through the regexp
// (the envelope's patterns: rules.TestPrefixRegexpsAgree).
func TestTracebackRegexpsAgree(t *testing.T) {
	res := map[string]rules.PrefixRegexp{"frameLine": frameLine, "ipythonFrame": ipythonFrame, "raiseSource": raiseSource}
	for name, p := range res {
		if !p.HasDFA() {
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
		if matched == 0 && name == "frameLine" {
			t.Errorf("%s matched none of %d messages: the test does not exercise it", name, len(msgs))
		}
	}
	// The bundled journals hold no IPython frame and no raise line: each
	// pattern on a line of its grammar, and on one that only looks like it.
	for name, c := range map[string]struct{ match, not string }{
		"frameLine":    {`  File "/usr/lib/python3/site-packages/vllm/worker.py", line 12, in load_model`, `File "x.py" was not found`},
		"ipythonFrame": {`/opt/app/model.py in load(path)`, `/opt/app/model.py is loaded`},
		"raiseSource":  {`    raise ValueError(`, `    raised ValueError(`},
	} {
		p := res[name]
		if !p.MatchString(c.match) || !p.Regexp.MatchString(c.match) {
			t.Errorf("%s does not match %q", name, c.match)
		}
		if p.MatchString(c.not) || p.Regexp.MatchString(c.not) {
			t.Errorf("%s matches %q", name, c.not)
		}
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

// TestErrorLinesAreTheLogViewers: the judge's error lines (the rules'
// `error`, an unknown failure's last errors) are the log viewer's "next
// error" stops (rules.IsErrorText), but for the exception and death lines
// the judge also counts.
func TestErrorLinesAreTheLogViewers(t *testing.T) {
	set, err := rules.LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	msgs := append(bundledMessages(t),
		"WARNING 01-01 10:00:00 [plugins.py:12] failed to load plugin foo",
		"ERROR 01-01 10:00:00 [core.py:12] EngineCore failed to start.",
		"2025-03-01 10:00:10,123 - vllm.worker - WARNING - retry failed once",
		"2025-03-01 10:00:10,123 - vllm.worker - ERROR - Worker failed",
		"INFO 01-01 10:00:00 [metrics.py:12] requests: 12 finished, 0 failed",
		"DEBUG 01-01 10:00:00 [server.py:40] error handler installed",
		"Traceback (most recent call last):", `  File "x.py", line 1, in f`, "RuntimeError: invalid argument")
	var x excReader
	errs, fatal := 0, 0
	for i, m := range msgs {
		l := set.NewLine(m)
		info := x.line(m, l.MayMatter(), i+1, domain.Evidence{Message: m}, domain.PhaseStart, false)
		got := isErrorLine(m, l.LooksLikeError(), info)
		if info.fatal != nil {
			fatal++
			if !got {
				t.Errorf("%q ends a fatal event but is no error line", m)
			}
			continue
		}
		if want := rules.IsErrorText(m); got != want {
			t.Errorf("%q: judge's error line %v, log viewer's %v", m, got, want)
		}
		if got {
			errs++
		}
	}
	if errs == 0 || fatal == 0 {
		t.Errorf("%d error lines, %d fatal: the test does not exercise both", errs, fatal)
	}
}

// TestGuardsKeepMatches: the literal checks before the traceback reader's
// unanchored and $-anchored patterns never turn away a line the pattern
// matches (they only spare the regexp on the others), and the exception
// line's hand reader agrees with excLine, on every bundled message and on
// lines of each grammar.
func TestGuardsKeepMatches(t *testing.T) {
	msgs := append(bundledMessages(t),
		"RuntimeError: CUDA error", "torch.OutOfMemoryError: x", "KeyboardInterrupt", "ValueError  ", "ValueError:",
		"_private.Error: x", "a.b.C", "a.b.c", "9Error: x", ".Error", "Error :x", "Error\v", "ValueError\u00a0",
		"panic: runtime error: index out of range", "thread 'main' panicked at src/main.rs:2:5:",
		"terminate called after throwing an instance of 'c10::Error'", "  what():  boom")
	excMatched := 0
	for _, m := range msgs {
		if excLine.MatchString(m) {
			excMatched++
		}
		checkExcLine(t, m)
		for _, g := range []struct {
			lit string
			re  *regexp.Regexp
		}{{cppThrown, cppThrow}, {goPanicked, goPanic}, {rustPanicked, rustPanic}} {
			if got, want := submatchIf(g.lit, g.re, m), g.re.FindStringSubmatch(m); !slices.Equal(got, want) {
				t.Errorf("submatchIf(%q, %q) = %q, regexp %q", g.lit, m, got, want)
			}
		}
	}
	if excMatched < 10 {
		t.Errorf("excLine matched %d messages: the test does not exercise it", excMatched)
	}
	for _, no := range []string{"", " ValueError: x", "Loading weights took 3.1 seconds", "9Error: x", ".Error"} {
		if _, _, ok := matchExcLine(no); ok {
			t.Errorf("matchExcLine(%q) is an exception line", no)
		}
	}
}

// TestReaderGateKeepsFatals: outside a traceback the exception reader
// reads only the lines rules.Line.MayMatter lets by. Reading every line
// instead finds the same fatal events, on the bundled journals and on
// every corpus log. (It found four the gate hid, a level in brackets and
// dotted exception types: rules.mayMatterShapes reads those now.)
func TestReaderGateKeepsFatals(t *testing.T) {
	set, err := rules.LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	logs := map[string][]string{"bundled": bundledMessages(t)}
	paths, err := filepath.Glob("../testdata/corpus/*/log.txt")
	if err != nil || len(paths) < 100 {
		t.Fatalf("corpus logs: %d, %v", len(paths), err)
	}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		logs[p] = strings.Split(string(data), "\n")
	}
	events := 0
	for name, lines := range logs {
		var gated, all excReader
		for i, m := range lines {
			ev := domain.Evidence{Message: m}
			gated.line(m, set.NewLine(m).MayMatter(), i+1, ev, domain.PhaseStart, false)
			all.line(m, true, i+1, ev, domain.PhaseStart, false)
		}
		if len(gated.fatals) != len(all.fatals) {
			t.Errorf("%s: %d fatal events read through the gate, %d reading every line", name, len(gated.fatals), len(all.fatals))
			continue
		}
		for i, g := range gated.fatals {
			a := all.fatals[i]
			if g.Kind != a.Kind || g.Type != a.Type || g.Message != a.Message || g.Start != a.Start || g.Line != a.Line ||
				!slices.Equal(g.Frames, a.Frames) {
				t.Errorf("%s: fatal event %d through the gate %+v, reading every line %+v", name, i, g, a)
			}
		}
		events += len(all.fatals)
	}
	if events < 100 {
		t.Errorf("%d fatal events in all: the test does not exercise the reader", events)
	}
}

// excLine is a Python exception line as a regexp: a dotted name whose last
// part is capitalized, then ": message" or the end of the line. The reader
// reads it by hand (matchExcLine).
var excLine = regexp.MustCompile(`^((?:[A-Za-z_][A-Za-z0-9_]*\.)*[A-Z][A-Za-z0-9_]*)(?::(?:\s+(.*))?)?\s*$`)

// excSuffixRE is excSuffixes as the regexp the reader used before.
var excSuffixRE = regexp.MustCompile(`(?:` + strings.Join(excSuffixes, "|") + `)$`)

// checkExcLine fails t where matchExcLine and excLine part on s.
func checkExcLine(t *testing.T, s string) {
	t.Helper()
	name, msg, ok := matchExcLine(s)
	m := excLine.FindStringSubmatch(s)
	if ok != (m != nil) || ok && (name != m[1] || msg != m[2]) {
		t.Fatalf("matchExcLine(%q) = %q, %q, %v; excLine %q", s, name, msg, ok, m)
	}
	for _, x := range []string{name, s[:min(len(s), 64)]} {
		if got, want := excSuffixed(x), excSuffixRE.MatchString(x); got != want {
			t.Fatalf("excSuffixed(%q) = %v, the regexp %v", x, got, want)
		}
	}
}

// TestMatchExcLine holds the hand reading of an exception line to excLine
// on every bundled message and on random lines of name bytes, colons,
// blanks (the regexp's and others) and newlines.
func TestMatchExcLine(t *testing.T) {
	matched := 0
	for _, m := range bundledMessages(t) {
		checkExcLine(t, m)
		if _, _, ok := matchExcLine(m); ok {
			matched++
		}
	}
	if matched == 0 {
		t.Fatal("no bundled message is an exception line: the test does not exercise it")
	}
	r := rand.New(rand.NewPCG(3, 4))
	parts := []string{"a", "Z", "_", "9", ".", ":", " ", "\t", "\n", "\v", "\u00a0", "Error", "x.", "Value", "é"}
	for range 200000 {
		checkExcLine(t, randline.Join(r, parts, 8))
	}
}

func FuzzMatchExcLine(f *testing.F) {
	for _, s := range []string{"ValueError: x", "torch.OutOfMemoryError:  a\n ", "a.B:\n", "Error :x", "X:\t\n y", "KeyboardInterrupt"} {
		f.Add(s)
	}
	f.Fuzz(checkExcLine)
}

// checkFrameParts fails t where frameParts of frameLine's match of s is
// not the regexp's submatches.
func checkFrameParts(t *testing.T, s string) bool {
	t.Helper()
	want := frameLine.Regexp.FindStringSubmatch(s)
	m := frameLine.FindString(s)
	if (m != "") != (want != nil) {
		t.Fatalf("frameLine.FindString(%q) = %q, regexp %q", s, m, want)
	}
	if m == "" {
		return false
	}
	if file, fn := frameParts(m); m != want[0] || file != want[1] || fn != want[2] {
		t.Fatalf("frameParts of %q = %q, %q; regexp %q", s, file, fn, want)
	}
	return true
}

// TestFrameParts: the file and function read from a frame line's match are
// the regexp's submatches, on every bundled message and on random lines
// built from the frame grammar (quotes, commas and ", in " inside paths).
func TestFrameParts(t *testing.T) {
	found := 0
	for _, m := range bundledMessages(t) {
		if checkFrameParts(t, m) {
			found++
		}
	}
	if found == 0 {
		t.Fatal("no bundled message is a frame line: the test does not exercise it")
	}
	r := rand.New(rand.NewPCG(7, 8))
	parts := []string{"File ", `"`, "x.py", `", line `, "12", ", in ", "f", " ", "\t", "\n", ",", "é", "<module>"}
	frames := 0
	for range 200000 {
		line := randline.Join(r, parts, 8)
		if r.IntN(2) == 0 {
			line = `  File "` + line
		}
		if checkFrameParts(t, line) {
			frames++
		}
	}
	if frames < 100 {
		t.Fatalf("%d random lines were frames: too few to test", frames)
	}
}

func FuzzFrameParts(f *testing.F) {
	for _, s := range []string{`  File "/a/b.py", line 12, in load_model`, `File "a, in b", line 3`, `File "x", line 1, in `} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkFrameParts(t, s) })
}
