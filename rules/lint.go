package rules

import "fmt"

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

// EndCaptures is endCaptures for the judge's callers: an end rule's note
// sees these captures (the rule-test runner renders them too).
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
