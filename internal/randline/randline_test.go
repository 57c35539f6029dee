package randline

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestJoin: lines are made of the parts only, up to max of them, and both
// ends of the range occur.
func TestJoin(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	seen := map[int]bool{}
	for range 1000 {
		line := Join(r, []string{"ab", "c"}, 3)
		n := strings.Count(line, "ab") + strings.Count(line, "c")
		if strings.ReplaceAll(strings.ReplaceAll(line, "ab", ""), "c", "") != "" || n > 3 {
			t.Fatalf("Join made %q from ab and c, up to 3", line)
		}
		seen[n] = true
	}
	if !seen[0] || !seen[3] {
		t.Errorf("pieces per line seen: %v, want 0 through 3", seen)
	}
}
