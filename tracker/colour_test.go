package tracker

import "testing"

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
