package report

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// TestBootLine: a boot's line says phase, bar and ETA, or the stall, and
// is never wider than asked (80 columns keeps host, unit and phase).
func TestBootLine(t *testing.T) {
	d := func(x time.Duration) *time.Duration { return &x }
	ok := BootView{Host: "gpu1", Unit: "vllm-qwen3-235b-a22b-fp8.service", Phase: "graph_capture", Elapsed: 4 * time.Minute, InPhase: time.Minute,
		ETA50: d(3 * time.Minute), ETA90: d(4 * time.Minute), Basis: 9}
	if got := BootLine(ok, 0); got != "gpu1 vllm-qwen3-235b-a22b-fp8.service  graph_capture 1m00s  [#######-----] 4m00s  ready in ~3m00s (<=4m00s, 9 boots)" {
		t.Errorf("healthy: %q", got)
	}
	stalled := ok
	stalled.Stalled, stalled.InPhase, stalled.PhaseP50, stalled.PhaseP90 = true, 20*time.Minute, d(2*time.Minute), d(4*time.Minute)
	if got := BootLine(stalled, 0); !strings.HasSuffix(got, "STALLED: graph_capture for 20m00s, usually 2m00s-4m00s") {
		t.Errorf("stalled: %q", got)
	}
	for _, w := range []int{60, 80} {
		got := BootLine(stalled, w)
		if utf8.RuneCountInString(got) > w || !strings.HasPrefix(got, "gpu1 vllm-qwen3-235b-a22b-fp8.service  graph_capture") {
			t.Errorf("at %d columns: %q", w, got)
		}
	}
}
