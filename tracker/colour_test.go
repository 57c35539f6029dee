package tracker

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"github.com/llmfleet/analyzer/internal/randline"
)

// TestStripColour: colour codes that lost their ESC byte go; brackets that
// hold other digits stay, and such a line is returned without a copy.
func TestStripColour(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"[1;36m(EngineCore pid=1)[0m INFO ready", "(EngineCore pid=1) INFO ready"},
		{"x [0m", "x "},
		{"[2025-08-13 14:29:40 TP0] Load weight end.", "[2025-08-13 14:29:40 TP0] Load weight end."},
		{"[multiproc_executor.py:523] [31mERROR", "[multiproc_executor.py:523] ERROR"},
		{"[1234m four digits", "[1234m four digits"},
		{"[1;2;3", "[1;2;3"},
		{"[", "["},
	} {
		if got := stripColour(c.in); got != c.want {
			t.Errorf("stripColour(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	dated := "[2025-08-13 14:29:40 TP0] Capture cuda graph end."
	if n := testing.AllocsPerRun(100, func() { stripColour(dated) }); n != 0 {
		t.Errorf("stripColour of a line without colour codes: %v allocations, want 0", n)
	}
}

// TestStripColourAsRegexp: colourAt finds what colourRemnant finds at the
// start of a line, and stripColour removes what its ReplaceAllString
// removes, on lines made of brackets, digits, ';' and 'm' (where the two
// could part).
func TestStripColourAsRegexp(t *testing.T) {
	anchored := regexp.MustCompile("^(?:" + colourRemnant.String() + ")")
	r := rand.New(rand.NewPCG(1, 2))
	parts := strings.Split("[[[0123456789;;mmx]", "")
	for range 200000 {
		line := randline.Join(r, parts, 15)
		if got, want := colourAt(line), anchored.MatchString(line); got != want {
			t.Fatalf("colourAt(%q) = %v, regexp %v", line, got, want)
		}
		if got, want := stripColour(line), colourRemnant.ReplaceAllString(line, ""); got != want {
			t.Fatalf("stripColour(%q) = %q, regexp %q", line, got, want)
		}
	}
}
