package rules

import (
	"sync"
	"testing"
)

// TestMemoOnlyDuringLoad: Loads running at once share the memo, get sets
// that judge alike, and leave nothing in it when the last one ends.
func TestMemoOnlyDuringLoad(t *testing.T) {
	var wg sync.WaitGroup
	sets := make([]*Set, 3)
	for i := range sets {
		wg.Go(func() {
			s, err := LoadBuiltin()
			if err != nil {
				t.Error(err)
			}
			sets[i] = s
		})
	}
	wg.Wait()
	if memo.trees != nil || memo.res != nil || memo.loads != 0 {
		t.Fatalf("memo after the loads: %d loads, %d trees, %d regexps", memo.loads, len(memo.trees), len(memo.res))
	}
	line := "ERROR:    Application startup failed. Exiting."
	for _, s := range sets[1:] {
		if a, b := len(s.all), len(sets[0].all); a != b {
			t.Fatalf("%d rules, then %d", b, a)
		}
		if _, ok := s.FatalLine(s.NewLine(line)); !ok {
			t.Fatalf("a set of the concurrent loads misses %q", line)
		}
	}
	if _, err := parsePattern("a(b"); err == nil {
		t.Fatal("a bad pattern parsed")
	}
}
