package rules

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/llmfleet/analyzer/domain"
)

// TestResult is the outcome of one embedded rule test.
type TestResult struct {
	Rule   string
	Test   string
	File   string
	Line   int
	Passed bool
	// Problems says what differed from the expectation.
	Problems []string
}

// RunTests runs every test embedded in the set's rule files. Each test gets
// a fresh attempt: the rule's engine profile (phases, shape, prefixes) is
// applied to the lines, and only the rule under test is judged, like
// `promtool test rules`.
func (s *Set) RunTests() []TestResult {
	var out []TestResult
	for _, r := range s.all {
		for i, t := range r.Tests {
			name := t.Name
			if name == "" {
				name = fmt.Sprintf("test %d", i+1)
			}
			res := TestResult{Rule: r.ID, Test: name, File: r.File, Line: t.line}
			if r.End {
				res.Problems = s.runEndTest(r, t)
			} else {
				res.Problems = s.runLineTest(r, t)
			}
			res.Passed = len(res.Problems) == 0
			out = append(out, res)
		}
	}
	return out
}

// testStart is the time of a rule test's first line; t: offsets count from
// it (not zero: a zero time is "no timestamp" to count windows).
var testStart = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func (s *Set) runLineTest(r *Rule, t TestSpec) []string {
	engine := t.Engine
	if engine == "" && len(r.Engines) > 0 {
		engine = r.Engines[0]
	}
	j := s.NewJudge(engine, JudgeOptions{Only: r})
	if t.Phase != "" {
		j.SetPhase(domain.Phase(t.Phase))
	}
	for k, v := range t.Shape {
		j.SetShape(k, v)
	}
	var first *Hit
	var probs []string
	j.OnHit = func(h Hit, phase domain.Phase) {
		if first != nil {
			return
		}
		first = &h
		note := r.RenderNote(NoteData{Rule: r.ID, Verdict: string(r.Verdict), Phase: string(phase),
			Engine: j.Engine(), Captures: h.Captures, Shape: j.a.Shape, Line: j.env.Line})
		probs = checkNote(t, note)
	}
	at := testStart
	for _, tl := range t.Lines {
		if tl.HasAt {
			at = testStart.Add(tl.At)
		}
		for i := 0; i < tl.Repeat; i++ {
			if i > 0 {
				at = at.Add(tl.Every)
			}
			j.Line(tl.Msg, domain.Evidence{Time: at, Message: tl.Msg})
			if len(probs) > 0 {
				return probs
			}
		}
	}
	if t.Expect.NoMatch {
		if first != nil {
			return []string{fmt.Sprintf("expected no match, but it fired with captures %v", first.Captures)}
		}
		return nil
	}
	if first == nil {
		return []string{"expected a match, got none"}
	}
	for k, want := range t.Expect.Captures {
		if got := first.Captures[k]; got != want {
			probs = append(probs, fmt.Sprintf("capture %s: want %q, got %q", k, want, got))
		}
	}
	return probs
}

func checkNote(t TestSpec, note string) []string {
	var probs []string
	for _, frag := range t.Expect.NoteContains {
		if !strings.Contains(note, frag) {
			probs = append(probs, fmt.Sprintf("note does not contain %q: %s", frag, note))
		}
	}
	return probs
}

func (s *Set) runEndTest(r *Rule, t TestSpec) []string {
	env := EndEnv{SecondsReadyToFailure: -1, SurvivableSeconds: 1800}
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
	for _, m := range s.MatchEnd(&env) {
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
	note := r.RenderNote(NoteData{Rule: r.ID, Verdict: env.Verdict, Phase: env.Phase, Engine: env.Engine,
		Unit: env.Unit, Captures: endCaptures(&env), Shape: domain.Shape(env.Shape)})
	return checkNote(t, note)
}

// endCaptures exposes an end rule's facts to its note template.
func endCaptures(env *EndEnv) map[string]string {
	c := map[string]string{
		"restart_counter_after": fmt.Sprint(env.RestartCounterAfter),
		"ended_by":              env.EndedBy,
	}
	if env.HasExit {
		c["exit_status"] = fmt.Sprint(env.ExitStatus)
	}
	if env.SecondsReadyToFailure >= 0 {
		c["seconds_ready_to_failure"] = fmt.Sprintf("%.0f", env.SecondsReadyToFailure)
	}
	return c
}

// EndCaptures is endCaptures for the tracker.
func EndCaptures(env *EndEnv) map[string]string { return endCaptures(env) }

// Lint returns warnings about rules that load but deserve a look: rules
// with no literal to prefilter on (they run on every line), rules without
// tests, counts that count nothing (gte 1 with no window and no distinct),
// and counts with a window that no test line gives a time (t:) to.
func (s *Set) Lint() []string {
	var out []string
	for _, r := range s.all {
		if !r.End && len(r.literals) == 0 {
			out = append(out, fmt.Sprintf("%s:%d: rule %q has no literal to prefilter on; it runs its regex on every line", r.File, r.Line, r.ID))
		}
		if len(r.Tests) == 0 {
			out = append(out, fmt.Sprintf("%s:%d: rule %q has no tests", r.File, r.Line, r.ID))
		}
		if k := r.count; k != nil {
			if k.gte == 1 && k.within == 0 && k.distinct == "" {
				out = append(out, fmt.Sprintf("%s:%d: rule %q: count {gte: 1} without within or distinct fires on the first line, as no count does", r.File, r.Line, r.ID))
			}
			if k.within > 0 && len(r.Tests) > 0 && !testsGiveTimes(r.Tests) {
				out = append(out, fmt.Sprintf("%s:%d: rule %q counts within %s but no test line has a time (t:), so no test checks the window", r.File, r.Line, r.ID, k.within))
			}
		}
	}
	return out
}

// testsGiveTimes reports whether any test line gives a time (t: or every:).
func testsGiveTimes(tests []TestSpec) bool {
	for _, t := range tests {
		for _, l := range t.Lines {
			if l.HasAt || l.Repeat > 1 {
				return true
			}
		}
	}
	return false
}
