package web

import (
	"context"
	"time"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/progress"
)

// progressJSON is the "progress" of a boot in progress in GET
// /api/v1/attempts/:id (progress.Estimate): durations in seconds; the
// ETAs are absent with fewer than progress.MinBasis earlier ready boots of
// the target ("no history").
type progressJSON struct {
	Phase      domain.Phase `json:"phase"`
	PhaseStart string       `json:"phase_start,omitempty"`
	Elapsed    float64      `json:"elapsed_s"`
	InPhase    float64      `json:"in_phase_s"`
	ETAP50     *float64     `json:"eta_p50_s,omitempty"`
	ETAP90     *float64     `json:"eta_p90_s,omitempty"`
	Basis      int          `json:"basis"`
	Comparable bool         `json:"same_shape"`
	NoHistory  bool         `json:"no_history,omitempty"`
	PhaseP50   *float64     `json:"phase_p50_s,omitempty"`
	PhaseP90   *float64     `json:"phase_p90_s,omitempty"`
	StallLimit float64      `json:"stall_limit_s"`
	Stalled    bool         `json:"stalled"`
	PhaseBasis int          `json:"phase_basis"`
}

// progressOf estimates a boot in progress (progress.InProgress) at now
// from the earlier boots of its target; nil for other attempts.
func (s *server) progressOf(ctx context.Context, a *domain.Attempt, now time.Time) (*progressJSON, error) {
	if !progress.InProgress(a) {
		return nil, nil
	}
	earlier, err := s.db.ListAttempts(ctx, domain.AttemptFilter{Host: a.Host, Unit: a.Unit, Limit: progress.MaxBoots + 1})
	if err != nil {
		return nil, err
	}
	e := progress.ForAttempt(earlier, a, now, progress.LastLine(a), s.opts.StallQuiet)
	sec := func(d time.Duration) *float64 { v := d.Seconds(); return &v }
	p := &progressJSON{Phase: e.Phase, PhaseStart: formatTime(e.PhaseStart), Elapsed: e.Elapsed.Seconds(), InPhase: e.InPhase.Seconds(),
		Basis: e.Basis, Comparable: e.Comparable, NoHistory: e.NoHistory(), StallLimit: e.StallLimit.Seconds(), Stalled: e.Stalled, PhaseBasis: e.PhaseBasis}
	if !e.NoHistory() {
		p.ETAP50, p.ETAP90 = sec(e.ETA50), sec(e.ETA90)
	}
	if e.PhaseBasis >= progress.MinBasis {
		p.PhaseP50, p.PhaseP90 = sec(e.PhaseP50), sec(e.PhaseP90)
	}
	return p, nil
}
