package judge

import (
	"strconv"
	"testing"

	"github.com/llmfleet/analyzer/domain"
)

// TestEvidenceRing: the ring holds the last lines, oldest first, across
// wrap-arounds and a reset, and holds nothing with no room.
func TestEvidenceRing(t *testing.T) {
	msgs := func(evs []domain.Evidence) string {
		s := ""
		for _, e := range evs {
			s += e.Message
		}
		return s
	}
	var r evidenceRing
	if got := r.appendTo([]domain.Evidence{}); got == nil || len(got) != 0 {
		t.Fatalf("empty ring: %v", got)
	}
	for i := range 7 {
		r.push(domain.Evidence{Message: strconv.Itoa(i)}, 3)
		want := ""
		for k := max(0, i-2); k <= i; k++ {
			want += strconv.Itoa(k)
		}
		if got := msgs(r.appendTo(nil)); got != want {
			t.Fatalf("after %d pushes: %q, want %q", i+1, got, want)
		}
	}
	r.reset()
	r.push(domain.Evidence{Message: "x"}, 3)
	if got := msgs(r.appendTo(nil)); got != "x" {
		t.Errorf("after reset: %q", got)
	}
	var none evidenceRing
	none.push(domain.Evidence{Message: "y"}, 0)
	if got := none.appendTo(nil); len(got) != 0 {
		t.Errorf("no room: %v", got)
	}
}
