package rules

import (
	"strings"
	"testing"
)

// TestOtherPhaseAfterAgrees: otherPhaseAfter's words answer as a walk
// over the later markers does, for every marker of every built-in engine
// (an engine extending another and the shared frames included), on the
// example journals' messages and on lines made of each marker's literals.
func TestOtherPhaseAfterAgrees(t *testing.T) {
	s, err := LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	lines := bundledMessages(t)
	for _, e := range s.engines {
		for _, m := range e.phases {
			lines = append(lines, strings.Join(m.lits, " "))
		}
	}
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
