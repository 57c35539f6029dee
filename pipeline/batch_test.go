package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/pipeline"
	"github.com/llmfleet/analyzer/rules"
	"github.com/llmfleet/analyzer/tracker"
)

// TestAnalyzeTrackerOptions: BatchOptions.Tracker reaches every judge of
// the run (rule tests judge with one rule, Only), and KeepLog is added to
// it. The night ladder judged by its graph-capture OOM rule alone gets no
// finding of another line rule, and the six attempts that rule decides
// among all rules keep their verdict, phase and captures.
func TestAnalyzeTrackerOptions(t *testing.T) {
	set := ruleSet(t)
	var only *rules.Rule
	lineRules := map[string]bool{}
	for _, r := range set.Rules() {
		if r.ID == "common.oom_graph_capture" {
			only = r
		}
		if !r.End {
			lineRules[r.ID] = true
		}
	}
	if only == nil {
		t.Fatal("no rule common.oom_graph_capture")
	}
	as, _, err := pipeline.Analyze(context.Background(), set, pipeline.FileInputs(fixtures[:1]),
		pipeline.BatchOptions{KeepLog: true, Tracker: tracker.Options{Only: only}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(as) != 16 {
		t.Fatalf("%d attempts, want 16", len(as))
	}
	full, _, err := pipeline.Analyze(context.Background(), set, pipeline.FileInputs(fixtures[:1]), pipeline.BatchOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(full) != len(as) {
		t.Fatalf("%d attempts with every rule, %d with one", len(full), len(as))
	}
	decided := 0
	for i, a := range as {
		for _, f := range a.Findings {
			if lineRules[f.Rule] && f.Rule != only.ID {
				t.Errorf("attempt %s: finding %s of rule %s, which does not judge", a.ID, f.ID, f.Rule)
			}
		}
		if a.Log == nil || a.Log.Total != a.Lines || a.Lines == 0 {
			t.Errorf("attempt %s: log %+v for %d lines; KeepLog must reach the tracker", a.ID, a.Log, a.Lines)
		}
		w := full[i]
		if w.ID != a.ID {
			t.Fatalf("attempt %d: %s, the run with every rule has %s", i, a.ID, w.ID)
		}
		if w.Rule != only.ID {
			continue
		}
		decided++
		if got, want := summary(a), summary(w); got != want {
			t.Errorf("attempt %s: %s, with every rule %s", a.ID, got, want)
		}
	}
	if decided != 6 {
		t.Errorf("the rule decides %d attempts, want 6", decided)
	}
}

// summary is an attempt's verdict, phase, rule and first finding's captures.
func summary(a *domain.Attempt) string {
	s := fmt.Sprintf("%s %s %s", a.Verdict, a.Phase, a.Rule)
	if len(a.Findings) > 0 {
		s += fmt.Sprintf(" %v", a.Findings[0].Captures)
	}
	return s
}

// TestAnalyzeLoadsRulesWhileReading: without a set, Analyze judges with
// BatchOptions.Rules' (called once) exactly as with the set itself; a
// load that fails ends the run with its own error, not one of the input;
// with neither, Analyze refuses.
func TestAnalyzeLoadsRulesWhileReading(t *testing.T) {
	set := ruleSet(t)
	in := pipeline.FileInputs(fixtures[:1])
	want, _, err := pipeline.Analyze(context.Background(), set, in, pipeline.BatchOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	got, _, err := pipeline.Analyze(context.Background(), nil, in, pipeline.BatchOptions{Rules: func() (*rules.Set, error) {
		calls++
		return set, nil
	}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if calls != 1 {
		t.Errorf("Rules called %d times, want 1", calls)
	}
	if len(got) != len(want) || len(got) == 0 {
		t.Fatalf("%d attempts, want %d", len(got), len(want))
	}
	for i := range got {
		if got[i].ID != want[i].ID || got[i].Verdict != want[i].Verdict || got[i].Phase != want[i].Phase {
			t.Errorf("attempt %d: %s %s/%s, want %s %s/%s", i, got[i].ID, got[i].Verdict, got[i].Phase, want[i].ID, want[i].Verdict, want[i].Phase)
		}
	}
	bad := errors.New("rules: x.yaml:1: bad")
	_, _, err = pipeline.Analyze(context.Background(), nil, in, pipeline.BatchOptions{Rules: func() (*rules.Set, error) { return nil, bad }}, nil)
	if err != bad {
		t.Errorf("err = %v, want the load's own", err)
	}
	if _, _, err := pipeline.Analyze(context.Background(), nil, in, pipeline.BatchOptions{}, nil); err == nil {
		t.Error("no set and no Rules: no error")
	}
}
