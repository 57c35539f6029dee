package rules

import (
	"strings"
	"testing"
)

// TestOtherPhaseAfterAgrees: otherPhaseAfter's words answer as a walk
// over the later markers does, for every marker of every built-in engine
// (an engine extending another and the shared frames included), on the
// example journals' messages and on lines made of each matcher's literals.
func TestOtherPhaseAfterAgrees(t *testing.T) {
	s, lines := builtinAndLiteralLines(t)
	walk := func(e *Engine, l *Line, i int) bool {
		for _, o := range e.phases[i+1:] {
			if l.may(o.id) && o.phase != e.phases[i].phase {
				return true
			}
		}
		return false
	}
	yes, extended := 0, 0
	var l Line
	for _, text := range lines {
		s.Prepare(&l, text)
		for _, e := range s.engines {
			if e.Extends != "" {
				extended++
			}
			for i := range e.phases {
				got, want := e.otherPhaseAfter(&l, i), walk(e, &l, i)
				if got != want {
					t.Fatalf("engine %s, marker %d (%s), line %q: %v, want %v", e.Name, i, e.phases[i].phase, text, got, want)
				}
				if want {
					yes++
				}
			}
		}
	}
	if yes < 1000 || extended == 0 {
		t.Errorf("%d answers true, %d engine lines of an extending engine: the test does not exercise otherPhaseAfter", yes, extended)
	}
}

// TestIDSetsAgree: each loop's idSet says a line has a candidate exactly
// when a walk over the loop's matchers finds one, for the phase markers
// and shape lines of every built-in engine, for the fatal lines and for
// the engines' detection patterns.
func TestIDSetsAgree(t *testing.T) {
	s, lines := builtinAndLiteralLines(t)
	walk := func(l *Line, ids []int) bool {
		for _, id := range ids {
			if l.may(id) {
				return true
			}
		}
		return false
	}
	var fatal, detect []int
	for _, f := range s.fatal {
		fatal = append(fatal, f.id)
	}
	for _, e := range s.engines {
		detect = append(detect, e.detectIDs...)
	}
	yes := map[string]int{}
	var l Line
	for _, text := range lines {
		s.Prepare(&l, text)
		if got, want := l.anyOf(s.fatalIDs), walk(&l, fatal); got != want {
			t.Fatalf("fatal, line %q: %v, want %v", text, got, want)
		} else if want {
			yes["fatal"]++
		}
		if got, want := l.anyOf(s.detectIDs), walk(&l, detect); got != want {
			t.Fatalf("detect, line %q: %v, want %v", text, got, want)
		} else if want {
			yes["detect"]++
		}
		for _, e := range s.engines {
			var phases, shape []int
			for _, m := range e.phases {
				phases = append(phases, m.id)
			}
			for _, sl := range e.shape {
				shape = append(shape, sl.id)
			}
			if got, want := l.anyOf(e.phaseIDs), walk(&l, phases); got != want {
				t.Fatalf("engine %s phases, line %q: %v, want %v", e.Name, text, got, want)
			} else if want {
				yes["phases"]++
			}
			if got, want := l.anyOf(e.shapeIDs), walk(&l, shape); got != want {
				t.Fatalf("engine %s shape, line %q: %v, want %v", e.Name, text, got, want)
			} else if want {
				yes["shape"]++
			}
		}
	}
	for _, k := range []string{"fatal", "detect", "phases", "shape"} {
		if yes[k] < 10 {
			t.Errorf("%s: %d lines with a candidate: the test does not exercise its idSet", k, yes[k])
		}
	}
}

// builtinAndLiteralLines returns the built-in set and the example journals'
// messages, with a line made of the literals of each phase marker, shape
// line and fatal line.
func builtinAndLiteralLines(t *testing.T) (*Set, []string) {
	t.Helper()
	s, err := LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	lines := bundledMessages(t)
	for _, e := range s.engines {
		for _, m := range e.phases {
			lines = append(lines, strings.Join(m.lits, " "))
		}
		for _, sl := range e.shape {
			lines = append(lines, strings.Join(sl.lits, " "))
		}
	}
	for _, f := range s.fatal {
		lines = append(lines, strings.Join(f.lits, " "))
	}
	return s, lines
}
