package web

import (
	"context"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

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

// bootJSON is one boot of GET /api/v1/boots.
type bootJSON struct {
	ID        string        `json:"id"`
	Host      string        `json:"host"`
	Unit      string        `json:"unit"`
	Engine    string        `json:"engine,omitempty"`
	StartedAt string        `json:"started_at"`
	Shape     domain.Shape  `json:"shape"`
	Progress  *progressJSON `json:"progress"`
}

// maxBoots bounds the boots GET /api/v1/boots estimates (newest first).
const maxBoots = 200

// apiBoots is GET /api/v1/boots: {"boots": [bootJSON...]}, the boots in
// progress (progress.InProgress, started within progress.MaxBootAge),
// newest first, each with its progress; what `analyzer watch` shows.
func (s *server) apiBoots(c *gin.Context) {
	ctx := c.Request.Context()
	now := time.Now()
	running, err := s.db.ListAttempts(ctx, domain.AttemptFilter{Verdict: string(domain.VerdictRunning), Limit: maxBoots, Brief: true})
	if err != nil {
		s.serverError(c, err, true)
		return
	}
	out := []bootJSON{}
	for _, b := range running {
		if !progress.InProgress(b) || now.Sub(b.StartedAt) > progress.MaxBootAge {
			continue
		}
		a, err := s.db.GetAttempt(ctx, b.ID) // with its timeline
		if err != nil {
			s.serverError(c, err, true)
			return
		}
		p, err := s.progressOf(ctx, a, now)
		if err != nil {
			s.serverError(c, err, true)
			return
		}
		out = append(out, bootJSON{ID: a.ID, Host: a.Host, Unit: a.Unit, Engine: a.Engine, StartedAt: formatTime(a.StartedAt), Shape: a.Shape, Progress: p})
	}
	c.JSON(http.StatusOK, gin.H{"boots": out})
}

// progressView is a boot in progress as the attempt page shows it.
type progressView struct {
	Phase            domain.Phase
	InPhase, Elapsed string
	HasETA           bool
	ETA50, ETA90     string
	Basis            int
	SameShape        bool
	// Percent is the time elapsed against the expected time to ready.
	Percent int
	Stalled bool
	// Usual is the phase's usual duration ("2m0s-4m0s"); "" with no history.
	Usual string
}

// viewOf is p for the attempt page.
func viewOf(p *progressJSON) *progressView {
	if p == nil {
		return nil
	}
	d := func(s float64) string { return time.Duration(s * float64(time.Second)).Round(time.Second).String() }
	v := &progressView{Phase: p.Phase, InPhase: d(p.InPhase), Elapsed: d(p.Elapsed), Basis: p.Basis, SameShape: p.Comparable, Stalled: p.Stalled}
	if p.ETAP50 != nil && p.ETAP90 != nil {
		v.HasETA, v.ETA50, v.ETA90 = true, d(*p.ETAP50), d(*p.ETAP90)
		if total := p.Elapsed + *p.ETAP50; total > 0 {
			v.Percent = min(int(100*p.Elapsed/total+0.5), 100)
		}
	}
	if p.PhaseP50 != nil && p.PhaseP90 != nil {
		v.Usual = d(*p.PhaseP50) + "-" + d(*p.PhaseP90)
	}
	return v
}
