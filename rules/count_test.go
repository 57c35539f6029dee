package rules_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/rules"
	"github.com/llmfleet/analyzer/rules/ruletest"
	"github.com/llmfleet/analyzer/tracker"
)

// countRules is a rule set for the count tests: one engine and one rule,
// whose count block is countYAML.
func countRules(t *testing.T, rule string) *rules.Set {
	t.Helper()
	src := "engines:\n  - engine: demo\n    detect: ['^demo-engine starting']\nrules:\n" + rule
	set, err := rules.Load(fstest.MapFS{"demo.yaml": {Data: []byte(src)}})
	if err != nil {
		t.Fatalf("rules do not load:\n%v\n%s", err, src)
	}
	return set
}

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// feed runs the set on lines of one attempt (state seq), the i-th line at
// time t0+at[i]. It returns, space separated, each line's count capture of
// rule demo.r's hit, or "-" when it did not hit.
func feed(set *rules.Set, seq rules.SeqState, lines []string, at []time.Duration) string {
	out := make([]string, len(lines))
	for i, line := range lines {
		out[i] = "-"
		env := &rules.LineEnv{Line: line, Engine: "demo", Phase: "init", Time: t0.Add(at[i])}
		for _, h := range set.MatchLine(env, seq) {
			if h.Rule.ID == "demo.r" {
				out[i] = h.Captures["count"]
				if out[i] == "" {
					out[i] = "hit-without-count"
				}
			}
		}
	}
	return strings.Join(out, " ")
}

func secs(s ...int) []time.Duration {
	out := make([]time.Duration, len(s))
	for i, x := range s {
		out[i] = time.Duration(x) * time.Second
	}
	return out
}

func repeat(line string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = line
	}
	return out
}

func TestCountGteFiresOnceOnTheNthLine(t *testing.T) {
	set := countRules(t, "  - id: demo.r\n    engines: [demo]\n    match: 'worker (?P<w>\\d+) lost'\n    count: {gte: 3}\n    verdict: engine_died\n")
	lines := []string{"worker 1 lost", "unrelated", "worker 2 lost", "worker 1 lost", "worker 3 lost", "worker 4 lost"}
	got := feed(set, rules.SeqState{}, lines, secs(0, 1, 2, 3, 4, 5))
	if want := "- - - 3 - -"; got != want {
		t.Errorf("hits per line = %q, want %q (the 3rd matching line, then never again)", got, want)
	}
}

func TestCountGteOneFiresOnTheFirstLine(t *testing.T) {
	set := countRules(t, "  - id: demo.r\n    engines: [demo]\n    match: 'worker lost'\n    count: {gte: 1, within: 1m}\n    verdict: engine_died\n")
	if got := feed(set, rules.SeqState{}, []string{"worker lost", "worker lost"}, secs(0, 1)); got != "1 -" {
		t.Errorf("hits = %q, want \"1 -\"", got)
	}
}

func TestCountWithinIsASlidingWindow(t *testing.T) {
	set := countRules(t, "  - id: demo.r\n    engines: [demo]\n    match: 'retrying connect'\n    count: {gte: 3, within: 1m}\n    verdict: distributed_error\n")
	line := "retrying connect"
	for _, tc := range []struct {
		name string
		at   []time.Duration
		want string
	}{
		// 0s leaves the window of 70s (older than 1m); 30s, 70s, 80s fire.
		{"the oldest slides out", secs(0, 30, 70, 80), "- - - 3"},
		// exactly 1m apart is still inside (t − at <= within).
		{"the window is inclusive", secs(0, 30, 60), "- - 3"},
		// never 3 within one minute.
		{"spread out never fires", secs(0, 40, 80, 120, 160, 200), "- - - - - -"},
		// entries out of order: a line older than the current one is kept.
		{"out of order", secs(50, 10, 20), "- - 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := feed(set, rules.SeqState{}, repeat(line, len(tc.at)), tc.at); got != tc.want {
				t.Errorf("%s: hits = %q, want %s", tc.name, got, tc.want)
			}
		})
	}
}

func TestCountLinesWithoutTimeAreInsideEveryWindow(t *testing.T) {
	set := countRules(t, "  - id: demo.r\n    engines: [demo]\n    match: 'retrying connect'\n    count: {gte: 3, within: 1m}\n    verdict: distributed_error\n")
	seq := rules.SeqState{}
	got := ""
	// A plain-text line with no stamp (zero time) between stamped ones an
	// hour apart: it stays counted, the stamped ones age out.
	for _, at := range []time.Time{t0, {}, t0.Add(time.Hour), t0.Add(time.Hour + 10*time.Second)} {
		env := &rules.LineEnv{Line: "retrying connect", Engine: "demo", Time: at}
		hits := set.MatchLine(env, seq)
		c := " -"
		if len(hits) == 1 {
			c = " " + hits[0].Captures["count"]
		}
		got += c
	}
	if want := " - - - 3"; got != want {
		t.Errorf("hits = %q, want %s", got, want)
	}
}

func TestCountDistinctCountsValues(t *testing.T) {
	set := countRules(t, "  - id: demo.r\n    engines: [demo]\n    match: '\\[rank(?P<rank>\\d+)\\] collective timed out'\n    count: {gte: 3, distinct: rank}\n    verdict: distributed_error\n")
	lines := []string{
		"[rank0] collective timed out", "[rank0] collective timed out", "[rank1] collective timed out",
		"[rank1] collective timed out", "[rank0] collective timed out", "[rank2] collective timed out",
		"[rank3] collective timed out",
	}
	seq := rules.SeqState{}
	var hit *rules.Hit
	for i, line := range lines {
		for _, h := range set.MatchLine(&rules.LineEnv{Line: line, Engine: "demo", Time: t0.Add(time.Duration(i) * time.Second)}, seq) {
			if hit != nil {
				t.Fatalf("fired again on line %d (%q)", i+1, line)
			}
			if i != 5 {
				t.Fatalf("fired on line %d, want line 6 (the third distinct rank)", i+1)
			}
			h := h
			hit = &h
		}
	}
	if hit == nil {
		t.Fatal("never fired on three distinct ranks")
	}
	// The captures are the firing line's, plus the count.
	if hit.Captures["rank"] != "2" || hit.Captures["count"] != "3" {
		t.Errorf("captures = %v, want rank 2 and count 3", hit.Captures)
	}
}

func TestCountDistinctWithin(t *testing.T) {
	set := countRules(t, "  - id: demo.r\n    engines: [demo]\n    match: '\\[rank(?P<rank>\\d+)\\] collective timed out'\n    count: {gte: 3, within: 1m, distinct: rank}\n    verdict: distributed_error\n")
	l := func(r int) string { return fmt.Sprintf("[rank%d] collective timed out", r) }
	for _, tc := range []struct {
		name  string
		ranks []int
		at    []time.Duration
		want  string
	}{
		// rank0 (0s) is gone by 90s: ranks 1 and 2 only.
		{"an old value leaves the window", []int{0, 1, 2}, secs(0, 30, 90), "- - -"},
		// rank0 (0s) is gone by 100s, so 1 and 2 make two...
		{"without a new sighting", []int{0, 1, 2}, secs(0, 45, 100), "- - -"},
		// ...but seen again at 50s it is still inside at 100s.
		{"a value seen again stays", []int{0, 1, 0, 2}, secs(0, 45, 50, 100), "- - - 3"},
		// only duplicates: one value however often.
		{"duplicates count once", []int{4, 4, 4, 4}, secs(0, 1, 2, 3), "- - - -"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lines := make([]string, len(tc.ranks))
			for i, r := range tc.ranks {
				lines[i] = l(r)
			}
			if got := feed(set, rules.SeqState{}, lines, tc.at); got != tc.want {
				t.Errorf("%s: hits = %q, want %s", tc.name, got, tc.want)
			}
		})
	}
}

func TestCountDistinctSkipsLinesWithoutTheValue(t *testing.T) {
	set := countRules(t, "  - id: demo.r\n    engines: [demo]\n    match: 'collective timed out(?: on rank (?P<rank>\\d+))?'\n    count: {gte: 2, distinct: rank}\n    verdict: distributed_error\n")
	got := feed(set, rules.SeqState{}, []string{"collective timed out", "collective timed out", "collective timed out on rank 1",
		"collective timed out", "collective timed out on rank 2"}, secs(0, 1, 2, 3, 4))
	if want := "- - - - 2"; got != want {
		t.Errorf("hits = %q, want %s (lines without a rank are not counted)", got, want)
	}
}

// Every other condition of the rule applies before a line is counted.
func TestCountOnlyCountsLinesThatPassTheRule(t *testing.T) {
	set := countRules(t, "  - id: demo.r\n    engines: [demo]\n    match: 'worker (?P<w>\\d+) lost'\n    when: 'captures.w != \"9\"'\n"+
		"    unless: ['during shutdown']\n    count: {gte: 2}\n    verdict: engine_died\n")
	got := feed(set, rules.SeqState{}, []string{"worker 9 lost", "worker 1 lost during shutdown", "worker 1 lost", "worker 9 lost", "worker 2 lost"},
		secs(0, 1, 2, 3, 4))
	if want := "- - - - 2"; got != want {
		t.Errorf("hits = %q, want %s (when and unless filter before counting)", got, want)
	}
}

// Until cancels a sequence and what it counted; After arms it again.
func TestCountWithAfterUntil(t *testing.T) {
	set := countRules(t, "  - id: demo.r\n    engines: [demo]\n    after: 'capture begin'\n    until: 'capture end'\n"+
		"    match: 'retry alloc'\n    count: {gte: 2}\n    verdict: oom_graph_capture\n")
	lines := []string{"retry alloc", "capture begin", "retry alloc", "capture end", "retry alloc", "capture begin", "retry alloc", "retry alloc"}
	got := feed(set, rules.SeqState{}, lines, secs(0, 1, 2, 3, 4, 5, 6, 7))
	if want := "- - - - - - - 2"; got != want {
		t.Errorf("hits = %q, want %s", got, want)
	}
}

// State belongs to one attempt: another SeqState starts from zero.
func TestCountStateIsPerAttempt(t *testing.T) {
	set := countRules(t, "  - id: demo.r\n    engines: [demo]\n    match: 'worker lost'\n    count: {gte: 3}\n    verdict: engine_died\n")
	a, b := rules.SeqState{}, rules.SeqState{}
	two := repeat("worker lost", 2)
	if got := feed(set, a, two, secs(0, 1)); got != "- -" {
		t.Fatalf("attempt a, 2 lines: %q", got)
	}
	if got := feed(set, b, two, secs(2, 3)); got != "- -" {
		t.Errorf("attempt b, 2 lines: %q (counted attempt a's lines)", got)
	}
	if got := feed(set, a, repeat("worker lost", 2), secs(4, 5)); got != "3 -" {
		t.Errorf("attempt a, lines 3 and 4: %q, want \"3 -\"", got)
	}
	if got := feed(set, b, repeat("worker lost", 1), secs(6)); got != "3" {
		t.Errorf("attempt b, line 3: %q, want \"3\" (a firing in a does not silence b)", got)
	}
}

// The tracker gives every attempt fresh state and the entries' times.
func TestCountInTheTracker(t *testing.T) {
	set := countRules(t, "  - id: demo.r\n    match: '\\[rank(?P<rank>\\d+)\\] collective timed out'\n"+
		"    count: {gte: 3, within: 1m, distinct: rank}\n    verdict: distributed_error\n    note: '{{.Captures.count}} ranks timed out'\n")
	n := 0
	entry := func(inv string, at time.Duration, msg string) domain.Entry {
		n++
		return domain.Entry{Cursor: fmt.Sprintf("c%d", n), Time: t0.Add(at), Host: "h", Unit: "demo.service",
			InvocationID: inv, PID: 100, Identifier: "demo", Message: msg}
	}
	tr := tracker.New(set, tracker.Options{})
	for _, e := range []domain.Entry{
		// Attempt 1: two ranks before the engine is known (judged again once
		// it is, and must not count twice), then the window runs out.
		entry("inv1", 0, "[rank0] collective timed out"),
		entry("inv1", 1*time.Second, "[rank1] collective timed out"),
		entry("inv1", 2*time.Second, "demo-engine starting"),
		entry("inv1", 90*time.Second, "[rank2] collective timed out"),
		// Attempt 2: two ranks; attempt 1's do not carry over.
		entry("inv2", 100*time.Second, "demo-engine starting"),
		entry("inv2", 101*time.Second, "[rank0] collective timed out"),
		entry("inv2", 102*time.Second, "[rank1] collective timed out"),
		// Attempt 1 again, in the window of its rank2: ranks 2, 3, 4 fire.
		entry("inv1", 110*time.Second, "[rank3] collective timed out"),
		entry("inv1", 120*time.Second, "[rank4] collective timed out"),
	} {
		tr.Add(e)
	}
	got := map[string]*domain.Attempt{}
	for _, a := range tr.Attempts() {
		got[a.InvocationID] = a
	}
	a1, a2 := got["inv1"], got["inv2"]
	if a1 == nil || a2 == nil {
		t.Fatalf("attempts: %v", got)
	}
	if a2.Verdict != domain.VerdictRunning {
		t.Errorf("attempt 2 verdict %s, want running (2 ranks only)", a2.Verdict)
	}
	if a1.Verdict != domain.VerdictDistributedError {
		t.Fatalf("attempt 1 verdict %s, want distributed_error", a1.Verdict)
	}
	if len(a1.Evidence) != 1 || a1.Evidence[0].Message != "[rank4] collective timed out" || !a1.Evidence[0].Time.Equal(t0.Add(120*time.Second)) {
		t.Errorf("attempt 1 evidence %+v, want the firing line (rank4 at +120s)", a1.Evidence)
	}
	if !strings.HasPrefix(a1.Note, "3 ranks timed out") {
		t.Errorf("attempt 1 note %q", a1.Note)
	}
}

// Attempt 1 of TestCountInTheTracker without the late ranks: the two ranks
// seen before the engine was known are judged twice, and must count once.
func TestCountEarlyLinesCountOnce(t *testing.T) {
	set := countRules(t, "  - id: demo.r\n    match: 'worker lost'\n    count: {gte: 3}\n    verdict: engine_died\n")
	tr := tracker.New(set, tracker.Options{})
	for i, msg := range []string{"worker lost", "worker lost", "demo-engine starting"} {
		tr.Add(domain.Entry{Cursor: fmt.Sprint(i), Time: t0.Add(time.Duration(i) * time.Second), Host: "h", Unit: "demo.service",
			InvocationID: "inv", PID: 7, Identifier: "demo", Message: msg})
	}
	as := tr.Attempts()
	if len(as) != 1 {
		t.Fatalf("%d attempts, want 1", len(as))
	}
	if as[0].Verdict != domain.VerdictRunning {
		t.Fatalf("verdict %s, want running: two lines are not three", as[0].Verdict)
	}
	tr.Add(domain.Entry{Cursor: "3", Time: t0.Add(3 * time.Second), Host: "h", Unit: "demo.service",
		InvocationID: "inv", PID: 7, Identifier: "demo", Message: "worker lost"})
	if v := tr.Attempts()[0].Verdict; v != domain.VerdictEngineDied {
		t.Errorf("after the third line: verdict %s, want engine_died", v)
	}
}

// A rule test gives lines as strings or as {t, msg, repeat, every}; the
// times reach the count window.
func TestRuleTestLineTimes(t *testing.T) {
	rule := "rules:\n  - id: demo.r\n    match: 'retrying connect'\n    count: {gte: 3, within: 1m}\n    verdict: distributed_error\n    tests:\n"
	for _, tc := range []struct {
		name, lines string
		pass        bool
	}{
		{"plain strings share one time", `["retrying connect", "retrying connect", "retrying connect"]`, true},
		{"inside the window", `[{t: +0s, msg: retrying connect}, {t: +30s, msg: retrying connect}, {t: 1m, msg: retrying connect}]`, true},
		{"outside the window", `[{t: +0s, msg: retrying connect}, {t: +31s, msg: retrying connect}, {t: +61s, msg: retrying connect}]`, false},
		{"a string takes the previous time", `[{t: +0s, msg: retrying connect}, {t: +2m, msg: retrying connect}, "retrying connect"]`, false},
		{"repeat inside", `[{t: +5s, msg: retrying connect, repeat: 3, every: 30s}]`, true},
		{"repeat outside", `[{t: +5s, msg: retrying connect, repeat: 3, every: 31s}]`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := rule + "      - lines: " + tc.lines + "\n        expect: {}\n"
			set, err := rules.Load(fstest.MapFS{"t.yaml": {Data: []byte(src)}})
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			res := ruletest.Run(context.Background(), set)
			if len(res) != 1 || res[0].Passed != tc.pass {
				t.Errorf("%s: results %+v, want passed=%v", tc.name, res, tc.pass)
			}
		})
	}
}

func TestLintCount(t *testing.T) {
	set := countRules(t, "  - id: demo.r\n    match: 'worker lost'\n    count: {gte: 2, within: 1m}\n    verdict: engine_died\n"+
		"    tests: [{lines: [worker lost, worker lost], expect: {}}]\n"+
		"  - id: demo.one\n    match: 'worker gone'\n    count: {gte: 1}\n    verdict: engine_died\n"+
		"    tests: [{lines: [worker gone], expect: {}}]\n")
	lint := strings.Join(set.Lint(), "\n")
	for _, want := range []string{`demo.yaml:5: rule "demo.r" counts within 1m0s but no test line has a time`,
		`demo.yaml:10: rule "demo.one": count {gte: 1} without within or distinct`} {
		if !strings.Contains(lint, want) {
			t.Errorf("lint does not say %q:\n%s", want, lint)
		}
	}
}

// The shipped counting rule carries the tests the count needs.
func TestShippedCountRule(t *testing.T) {
	set, err := rules.LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range ruletest.Run(context.Background(), set) {
		if r.Rule == "tgi.shard_not_ready" {
			if !r.Passed {
				t.Errorf("%s: %v", r.Test, r.Problems)
			}
			names = append(names, r.Test)
		}
	}
	if len(names) < 4 {
		t.Errorf("tgi.shard_not_ready has tests %q; want positive, below the count, outside the window, another rank", names)
	}
}
