package fixturetest

import (
	"fmt"
	"time"

	"github.com/llmfleet/analyzer/domain"
)

// ReadyBoots are ended vLLM boots of host's unit that reached ready, one
// per capture duration: boot i starts 10-i hours before t0, enters graph
// capture 3 min in, spends its capture duration there, warms up for a
// minute, is ready and is stopped an hour after its start. Their ids are
// UNIT-earlierI, their invocations UNIT-eI.
func ReadyBoots(host, unit string, t0 time.Time, captures ...time.Duration) []*domain.Attempt {
	var out []*domain.Attempt
	for i, capture := range captures {
		s := t0.Add(-time.Duration(10-i) * time.Hour)
		out = append(out, &domain.Attempt{ID: fmt.Sprintf("%s-earlier%d", unit, i), Host: host, Unit: unit,
			InvocationID: fmt.Sprintf("%s-e%d", unit, i), Engine: "vllm",
			StartedAt: s, ReadyAt: s.Add(4*time.Minute + capture), EndedAt: s.Add(time.Hour), EndedBy: domain.EndedByStop,
			Phase: domain.PhaseReady, Verdict: domain.VerdictReady, Shape: domain.Shape{},
			Timeline: []domain.PhaseMark{{Phase: domain.PhaseGraphCapture, Time: s.Add(3 * time.Minute)},
				{Phase: domain.PhaseWarmup, Time: s.Add(3*time.Minute + capture)}, {Phase: domain.PhaseReady, Time: s.Add(4*time.Minute + capture)}}})
	}
	return out
}
