// Package ruletest runs the tests embedded in rule files (`analyzer rules
// test`) through the one path every entry point takes: a test's lines
// become entries (plain-text output of one source, each line at its t:
// time), pipeline.Analyze cuts them into an attempt with the tracker and
// judges it with only the rule under test (judge.Options.Only, like
// `promtool test rules`) from the test's engine, phase and shape
// (judge.Options.Preset), and the test's expectations are checked
// against the finding of that rule in the attempt: the finding the
// tracker's judge keeps after reconsidering the decisive line, withdrawing
// what the boot went on after, and rendering the note with the final
// shape, as explain, replay and serve show it.
//
// Tests of end rules state the ended attempt's facts instead of lines;
// they are checked against the end-rule stage the judge runs on every
// attempt (rules.Set.MatchEnd), with the note rendered as the judge does.
//
// rules is core and cannot import pipeline; this package sits above both.
package ruletest

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/ingest"
	"github.com/llmfleet/analyzer/judge"
	"github.com/llmfleet/analyzer/pipeline"
	"github.com/llmfleet/analyzer/rules"
)

// Result is the outcome of one embedded rule test.
type Result struct {
	Rule   string
	Test   string
	File   string
	Line   int
	Passed bool
	// Problems says what differed from the expectation.
	Problems []string
}

// Start is the time of a rule test's first line; t: offsets count from it
// (not zero: a zero time is "no timestamp" to count windows).
var Start = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// Run runs every test embedded in the set's rule files, rule by rule in
// file order, each rule's tests in order.
func Run(ctx context.Context, set *rules.Set) []Result {
	var out []Result
	for _, r := range set.Rules() {
		out = append(out, RunRule(ctx, set, r)...)
	}
	return out
}

// RunRule runs the tests of one rule of set, in order.
func RunRule(ctx context.Context, set *rules.Set, r *rules.Rule) []Result {
	var out []Result
	for i, t := range r.Tests {
		name := t.Name
		if name == "" {
			name = fmt.Sprintf("test %d", i+1)
		}
		res := Result{Rule: r.ID, Test: name, File: r.File, Line: t.FileLine()}
		if r.End {
			res.Problems = endTest(set, r, t)
		} else {
			res.Problems = lineTest(ctx, set, r, t)
		}
		res.Passed = len(res.Problems) == 0
		out = append(out, res)
	}
	return out
}

// Source is the source name of the entries of test t of rule r: the
// test's place in its rule file.
func Source(r *rules.Rule, t rules.TestSpec) string {
	return r.File + ":" + strconv.Itoa(t.FileLine())
}

// Entries returns the entries test t's lines are, as plain-text output of
// source: one entry per line (repeat: N gives N), the first at Start, each
// at its t: offset from Start, or at the previous line's time (plus every:
// within a repeat).
func Entries(source string, t rules.TestSpec) []domain.Entry {
	var out []domain.Entry
	at := Start
	for _, tl := range t.Lines {
		if tl.HasAt {
			at = Start.Add(tl.At)
		}
		for i := 0; i < tl.Repeat; i++ {
			if i > 0 {
				at = at.Add(tl.Every)
			}
			out = append(out, domain.Entry{Source: source, Cursor: source + ":" + strconv.Itoa(len(out)),
				Time: at, Message: tl.Msg})
		}
	}
	return out
}

// Engine is the engine test t of rule r runs with: the test's, else the
// rule's first, else none (the lines tell).
func Engine(r *rules.Rule, t rules.TestSpec) string {
	if t.Engine != "" {
		return t.Engine
	}
	if r != nil && len(r.Engines) > 0 {
		return r.Engines[0]
	}
	return ""
}

// Attempts runs test t's lines through pipeline.Analyze and returns the
// attempts they give (one, unless a start banner after a failure opens
// another): judged with only rule r when r is not nil, with every rule of
// set otherwise, each attempt starting in the test's engine, phase and
// shape.
func Attempts(ctx context.Context, set *rules.Set, r *rules.Rule, t rules.TestSpec) ([]*domain.Attempt, error) {
	source := "rule test"
	if r != nil {
		source = Source(r, t)
	}
	entries := Entries(source, t)
	in := pipeline.Input{Name: source, NoProgress: true,
		Read: func(ctx context.Context, _ ingest.Options, fn func(domain.Entry) error) (ingest.Stats, error) {
			st := ingest.Stats{Format: ingest.FormatText}
			for _, e := range entries {
				st.Records++
				if err := fn(e); err != nil {
					return st, err
				}
				st.Entries++
			}
			return st, nil
		}}
	preset := &judge.Preset{Engine: Engine(r, t), Phase: domain.Phase(t.Phase), Shape: t.Shape}
	as, _, err := pipeline.Analyze(ctx, set, []pipeline.Input{in},
		pipeline.BatchOptions{Tracker: judge.Options{Only: r, Preset: preset}}, nil)
	return as, err
}

// lineTest runs a line rule's test and says what differs from its
// expectation.
func lineTest(ctx context.Context, set *rules.Set, r *rules.Rule, t rules.TestSpec) []string {
	as, err := Attempts(ctx, set, r, t)
	if err != nil {
		return []string{err.Error()}
	}
	f := ruleFinding(as, r.ID)
	if t.Expect.NoMatch {
		if f != nil {
			return []string{fmt.Sprintf("expected no match, but it fired with captures %v", f.Captures)}
		}
		return nil
	}
	if f == nil {
		return []string{"expected a match, got none (" + describe(as) + ")"}
	}
	var probs []string
	for k, want := range t.Expect.Captures {
		if got := f.Captures[k]; got != want {
			probs = append(probs, fmt.Sprintf("capture %s: want %q, got %q", k, want, got))
		}
	}
	return append(probs, checkNote(t, f.Note)...)
}

// ruleFinding is the first finding rule id set in the attempts.
func ruleFinding(as []*domain.Attempt, id string) *domain.Finding {
	for _, a := range as {
		for i := range a.Findings {
			if a.Findings[i].Rule == id {
				return &a.Findings[i]
			}
		}
	}
	return nil
}

// describe says what the attempts were judged instead.
func describe(as []*domain.Attempt) string {
	if len(as) == 0 {
		return "no attempt"
	}
	var parts []string
	for _, a := range as {
		s := "the attempt: " + string(a.Verdict) + " in " + string(a.Phase)
		if ids := a.FindingIDs(); len(ids) > 0 {
			s += ", findings " + strings.Join(ids, ",")
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

func checkNote(t rules.TestSpec, note string) []string {
	var probs []string
	for _, frag := range t.Expect.NoteContains {
		if !strings.Contains(note, frag) {
			probs = append(probs, fmt.Sprintf("note does not contain %q: %s", frag, note))
		}
	}
	return probs
}

// endTest runs an end rule's test: the attempt facts it states go through
// the end-rule stage.
func endTest(set *rules.Set, r *rules.Rule, t rules.TestSpec) []string {
	env := rules.EndEnv{SecondsReadyToFailure: -1, SurvivableSeconds: 1800}
	if t.Attempt != nil {
		b, _ := json.Marshal(t.Attempt)
		if err := json.Unmarshal(b, &env); err != nil {
			return []string{fmt.Sprintf("attempt: %v", err)}
		}
	}
	if env.Shape == nil {
		env.Shape = map[string]any{}
	}
	fired := false
	for _, m := range set.MatchEnd(&env) {
		if m == r {
			fired = true
		}
	}
	if t.Expect.NoMatch {
		if fired {
			return []string{"expected no match, but it fired"}
		}
		return nil
	}
	if !fired {
		return []string{"expected a match, got none"}
	}
	note := r.RenderNote(rules.NoteData{Rule: r.ID, Verdict: env.Verdict, Phase: env.Phase, Engine: env.Engine,
		Unit: env.Unit, Captures: rules.EndCaptures(&env), Shape: domain.Shape(env.Shape)})
	return checkNote(t, note)
}
