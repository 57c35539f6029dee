package ruletest_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/rules"
	"github.com/llmfleet/analyzer/rules/ruletest"
)

// TestEmbeddedRuleTests runs every test written in the shipped rule files,
// as `analyzer rules test` does: each one passes, and every test of every
// rule is reported once.
func TestEmbeddedRuleTests(t *testing.T) {
	set, err := rules.LoadBuiltin()
	if err != nil {
		t.Fatalf("builtin rules do not load:\n%v", err)
	}
	want := 0
	for _, r := range set.Rules() {
		want += len(r.Tests)
	}
	results := ruletest.Run(context.Background(), set)
	if len(results) != want || want < 100 {
		t.Fatalf("%d results for %d rule tests", len(results), want)
	}
	for _, r := range results {
		if !r.Passed {
			t.Errorf("%s:%d rule %s, test %q: %s", r.File, r.Line, r.Rule, r.Test, strings.Join(r.Problems, "; "))
		}
	}
}

// demoEngine is an engine with two phase markers and a shape line.
const demoEngine = `engines:
  - engine: demo
    detect: ['^demo-engine starting']
    phases:
      - {phase: weights, match: 'loading weights'}
      - {phase: ready, match: 'ready to serve'}
    shape:
      - match: 'context (?P<max_model_len>\d+)'
        keys: {max_model_len: max_model_len}
rules:
`

func load(t *testing.T, rulesYAML string) *rules.Set {
	t.Helper()
	set, err := rules.Load(fstest.MapFS{"demo.yaml": {Data: []byte(demoEngine + rulesYAML)}})
	if err != nil {
		t.Fatalf("rules do not load:\n%v", err)
	}
	return set
}

func results(t *testing.T, set *rules.Set) map[string]ruletest.Result {
	t.Helper()
	out := map[string]ruletest.Result{}
	for _, r := range ruletest.Run(context.Background(), set) {
		out[r.Test] = r
	}
	return out
}

// A rule test checks the attempt the pipeline makes of its lines, not the
// rule's first hit: a failure the boot went on after (a later phase
// marker) is withdrawn by the judge, as explain and serve withdraw it, so
// a test expecting it fails and says what the attempt became.
func TestTestsSeeTheJudgedAttempt(t *testing.T) {
	set := load(t, `  - id: demo.bad_arg
    engines: [demo]
    match: 'bad value for (?P<arg>\w+)'
    verdict: config_error
    note: 'The engine rejected {{.Captures.arg}}.'
    tests:
      - name: boot stops
        lines: ["ValueError: bad value for max_model_len"]
        expect: {captures: {arg: max_model_len}, note_contains: [rejected max_model_len]}
      - name: boot goes on
        lines: ["ValueError: bad value for max_model_len", "loading weights", "ready to serve"]
        expect: {captures: {arg: max_model_len}}
      - name: boot goes on, expected
        lines: ["ValueError: bad value for max_model_len", "loading weights", "ready to serve"]
        expect: {no_match: true}
      - name: wrong note
        lines: ["ValueError: bad value for max_num_seqs"]
        expect: {captures: {arg: max_model_len}, note_contains: [rejected max_model_len]}
`)
	res := results(t, set)
	if r := res["boot stops"]; !r.Passed || r.File != "demo.yaml" || r.Line != 17 || r.Rule != "demo.bad_arg" {
		t.Errorf("boot stops: %+v, want passed, demo.yaml:17 demo.bad_arg", r)
	}
	if r := res["boot goes on"]; r.Passed || strings.Join(r.Problems, "; ") != "expected a match, got none (the attempt: ready in ready)" {
		t.Errorf("boot goes on: passed %v, problems %q; want the withdrawn failure reported", r.Passed, r.Problems)
	}
	if r := res["boot goes on, expected"]; !r.Passed {
		t.Errorf("boot goes on, expected: %v", r.Problems)
	}
	r := res["wrong note"]
	want := []string{`capture arg: want "max_model_len", got "max_num_seqs"`,
		`note does not contain "rejected max_model_len": The engine rejected max_num_seqs. Decisive line: "ValueError: bad value for max_num_seqs"`}
	if r.Passed || strings.Join(r.Problems, "\n") != strings.Join(want, "\n") {
		t.Errorf("wrong note: problems\n%s\nwant\n%s", strings.Join(r.Problems, "\n"), strings.Join(want, "\n"))
	}
}

// The test's engine, phase and shape are the attempt's from its first
// line; t: offsets are the lines' times.
func TestAttemptsStartFromTheTest(t *testing.T) {
	set := load(t, `  - id: demo.oom
    engines: [demo]
    match: 'out of memory'
    when: 'phase == "weights" && shape.max_num_seqs == 8'
    verdict: oom_weights
    tests:
      - phase: weights
        shape: {max_num_seqs: 8}
        lines: [{t: +2s, msg: "context 4096"}, {t: +5s, msg: "CUDA out of memory"}]
        expect: {}
`)
	r := set.Rules()[0]
	as, err := ruletest.Attempts(context.Background(), set, r, r.Tests[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(as) != 1 {
		t.Fatalf("%d attempts, want 1", len(as))
	}
	a := as[0]
	if a.Engine != "demo" || a.Phase != domain.PhaseWeights || a.Verdict != domain.VerdictOOMWeights || a.Rule != "demo.oom" {
		t.Errorf("attempt %s %s %s %s, want demo weights oom_weights demo.oom", a.Engine, a.Phase, a.Verdict, a.Rule)
	}
	if got, _ := a.Shape.Int("max_num_seqs"); got != 8 {
		t.Errorf("max_num_seqs %d, want 8 (the test's shape)", got)
	}
	if got, _ := a.Shape.Int("max_model_len"); got != 4096 {
		t.Errorf("max_model_len %d, want 4096 (the shape line)", got)
	}
	if !a.StartedAt.Equal(ruletest.Start.Add(2*time.Second)) || len(a.Findings) != 1 ||
		!a.Findings[0].Time.Equal(ruletest.Start.Add(5*time.Second)) {
		t.Errorf("started %v, findings %+v; want start at +2s, the finding at +5s", a.StartedAt, a.Findings)
	}
	// Without the test's phase the rule does not fire.
	tc := r.Tests[0]
	tc.Phase = ""
	as, err = ruletest.Attempts(context.Background(), set, r, tc)
	if err != nil {
		t.Fatal(err)
	}
	if len(as) != 1 || len(as[0].Findings) != 0 {
		t.Errorf("without the phase: %d attempts, %+v", len(as), as)
	}
}

// End rules' tests state the ended attempt; the end-rule stage judges it.
func TestEndRuleTests(t *testing.T) {
	set := load(t, `  - id: demo.loop
    on: end
    when: 'failed && restart_counter_after >= 3'
    finding: crash_loop
    note: 'Restarted {{.Captures.restart_counter_after}} times.'
    tests:
      - name: loops
        attempt: {failed: true, restart_counter_after: 4}
        expect: {note_contains: [Restarted 4 times]}
      - name: once
        attempt: {failed: true, restart_counter_after: 1}
        expect: {no_match: true}
      - name: wrong
        attempt: {failed: true, restart_counter_after: 1}
        expect: {}
`)
	res := results(t, set)
	if !res["loops"].Passed || !res["once"].Passed {
		t.Errorf("loops %v, once %v", res["loops"].Problems, res["once"].Problems)
	}
	if r := res["wrong"]; r.Passed || strings.Join(r.Problems, "; ") != "expected a match, got none" {
		t.Errorf("wrong: passed %v, %q", r.Passed, r.Problems)
	}
}

// FuzzRunTests runs the tests of arbitrary rule files that load (an
// operator's --rules directory under `analyzer rules test`): it must end,
// never panic.
func FuzzRunTests(f *testing.F) {
	names, _ := filepath.Glob("../*.yaml")
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	f.Fuzz(func(t *testing.T, file string) {
		set, err := rules.Load(fstest.MapFS{"site.yaml": &fstest.MapFile{Data: []byte(file)}})
		if err == nil {
			ruletest.Run(context.Background(), set)
		}
	})
}
