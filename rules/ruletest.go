package rules

import (
	"encoding/json"
	"fmt"
	"strings"

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

func (s *Set) runLineTest(r *Rule, t TestSpec) []string {
	engine := t.Engine
	if engine == "" && len(r.Engines) > 0 {
		engine = r.Engines[0]
	}
	eng := s.byName[engine]
	phase := domain.PhaseStart
	if t.Phase != "" {
		phase = domain.Phase(t.Phase)
	}
	shape := domain.Shape{}
	for k, v := range t.Shape {
		shape.Set(k, normalizeValue(k, v))
	}
	ready := phase.Rank() >= domain.PhaseReady.Rank() && phase.Rank() <= domain.PhaseServing.Rank()
	seq := SeqState{}
	var first *Hit
	for _, raw := range t.Lines {
		line := eng.Strip(raw)
		if p, fwd, ok := eng.Phase(line, ready); ok && !(fwd && p.Rank() <= phase.Rank()) {
			phase = p
			if p == domain.PhaseReady {
				ready = true
			}
		}
		eng.UpdateShape(line, shape)
		env := &LineEnv{Line: line, Phase: string(phase), Engine: engine, ReachedReady: ready, Shape: shape}
		if r.after != nil {
			if r.until != nil && seq[r.ID] && r.until.MatchString(line) {
				seq[r.ID] = false
			}
			if r.after.MatchString(line) {
				seq[r.ID] = true
				continue
			}
			if !seq[r.ID] {
				continue
			}
		}
		if !hasAny(line, r.literals) {
			continue
		}
		if h, ok := r.matchLine(nil, env, &matchCache{}); ok && first == nil {
			h := h
			first = &h
			if r.Phase != "" {
				phase = r.Phase
			}
			firstNote := r.RenderNote(NoteData{Rule: r.ID, Verdict: string(r.Verdict), Phase: string(phase),
				Engine: engine, Captures: h.Captures, Shape: shape, Line: line})
			if probs := checkNote(t, firstNote); len(probs) > 0 {
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
	var probs []string
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
// with no literal to prefilter on (they run on every line) and rules
// without tests.
func (s *Set) Lint() []string {
	var out []string
	for _, r := range s.all {
		if !r.End && len(r.literals) == 0 {
			out = append(out, fmt.Sprintf("%s:%d: rule %q has no literal to prefilter on; it runs its regex on every line", r.File, r.Line, r.ID))
		}
		if len(r.Tests) == 0 {
			out = append(out, fmt.Sprintf("%s:%d: rule %q has no tests", r.File, r.Line, r.ID))
		}
	}
	return out
}
