package web

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"slices"
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
	p, _, err := s.courseOf(ctx, a, now)
	return p, err
}

// courseOf is progressOf with the boot's course to ready by phase
// (progress.Course), for the segmented bars of the pages.
func (s *server) courseOf(ctx context.Context, a *domain.Attempt, now time.Time) (*progressJSON, []progress.Segment, error) {
	if !progress.InProgress(a) {
		return nil, nil, nil
	}
	earlier, err := progress.Earlier(ctx, s.db, a)
	if err != nil {
		return nil, nil, err
	}
	e, course := progress.CourseFor(earlier, a, now, progress.LastLine(a), progress.Limits{Quiet: s.opts.StallQuiet, Floor: s.opts.StallFloor})
	sec := func(d time.Duration) *float64 { v := d.Seconds(); return &v }
	p := &progressJSON{Phase: e.Phase, PhaseStart: formatTime(e.PhaseStart), Elapsed: e.Elapsed.Seconds(), InPhase: e.InPhase.Seconds(),
		Basis: e.Basis, Comparable: e.Comparable, NoHistory: e.NoHistory(), StallLimit: e.StallLimit.Seconds(), Stalled: e.Stalled, PhaseBasis: e.PhaseBasis}
	if !e.NoHistory() {
		p.ETAP50, p.ETAP90 = sec(e.ETA50), sec(e.ETA90)
	}
	if e.PhaseBasis >= progress.MinBasis {
		p.PhaseP50, p.PhaseP90 = sec(e.PhaseP50), sec(e.PhaseP90)
	}
	return p, course, nil
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
	now := s.opts.Now()
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
	// Segments is the bar segmented by phase (none with no history), ETA
	// its caption: "ready in ~2m10s (p90 3m40s), from 7 boots" or "no
	// history".
	Segments []segmentView
	ETA      string
}

// segmentView is one phase of the segmented bar, drawn in SVG (the CSP
// allows no inline style): X and W place it on a 1000-unit bar by its
// share of the expected time to ready, Fill is the part of W behind the
// boot.
type segmentView struct {
	Phase      domain.Phase
	X, W, Fill float64
	State      string // done, current or later (the CSS class)
	Title      string
}

// segmentsOf draws a course as bar segments.
func segmentsOf(course []progress.Segment) []segmentView {
	var total time.Duration
	for _, sg := range course {
		total += sg.Expected
	}
	if total <= 0 {
		return nil
	}
	units := func(d time.Duration) float64 { return math.Round(10000*float64(d)/float64(total)) / 10 }
	var out []segmentView
	x := time.Duration(0)
	for _, sg := range course {
		v := segmentView{Phase: sg.Phase, X: units(x), W: units(sg.Expected), State: "later",
			Title: fmt.Sprintf("%s ~%s", sg.Phase, sg.Expected.Round(time.Second))}
		x += sg.Expected
		switch {
		case sg.Current:
			v.State, v.Fill = "current", units(min(sg.Done, sg.Expected))
			v.Title = fmt.Sprintf("%s %s of ~%s", sg.Phase, sg.Done.Round(time.Second), sg.Expected.Round(time.Second))
		case sg.Done > 0:
			v.State, v.Fill = "done", v.W
			v.Title = fmt.Sprintf("%s %s", sg.Phase, sg.Done.Round(time.Second))
		}
		out = append(out, v)
	}
	return out
}

// viewOf is p for the pages, with its course.
func viewOf(p *progressJSON, course []progress.Segment) *progressView {
	if p == nil {
		return nil
	}
	d := func(s float64) string { return time.Duration(s * float64(time.Second)).Round(time.Second).String() }
	v := &progressView{Phase: p.Phase, InPhase: d(p.InPhase), Elapsed: d(p.Elapsed), Basis: p.Basis, SameShape: p.Comparable, Stalled: p.Stalled,
		Segments: segmentsOf(course), ETA: "no history"}
	if p.ETAP50 != nil && p.ETAP90 != nil {
		v.HasETA, v.ETA50, v.ETA90 = true, d(*p.ETAP50), d(*p.ETAP90)
		v.ETA = fmt.Sprintf("ready in ~%s (p90 %s), from %d boots", v.ETA50, v.ETA90, p.Basis)
		if total := p.Elapsed + *p.ETAP50; total > 0 {
			v.Percent = min(int(100*p.Elapsed/total+0.5), 100)
		}
	}
	if p.PhaseP50 != nil && p.PhaseP90 != nil {
		v.Usual = d(*p.PhaseP50) + "-" + d(*p.PhaseP90)
	}
	return v
}

// bootRow is a boot in progress on the attempts page.
type bootRow struct {
	A    *domain.Attempt
	View *progressView
}

// bootsOf are the boots in progress among the attempts f selects (its
// first page: a later page has none), newest first, with their progress,
// for the attempts page; the verdict filter keeps them only when it
// allows running.
func (s *server) bootsOf(ctx context.Context, f domain.AttemptFilter, zone pageZone, now time.Time) ([]bootRow, error) {
	if f.Cursor != nil || f.Failed || f.Verdict != "" && f.Verdict != string(domain.VerdictRunning) ||
		len(f.Verdicts) > 0 && !slices.Contains(f.Verdicts, string(domain.VerdictRunning)) {
		return nil, nil
	}
	f.Verdicts, f.Verdict, f.Limit, f.Brief = nil, string(domain.VerdictRunning), maxBoots, true
	running, err := s.db.ListAttempts(ctx, f)
	if err != nil {
		return nil, err
	}
	var out []bootRow
	for _, b := range running {
		if !progress.InProgress(b) || now.Sub(b.StartedAt) > progress.MaxBootAge {
			continue
		}
		a, err := s.db.GetAttempt(ctx, b.ID) // with its timeline
		if err != nil {
			return nil, err
		}
		p, course, err := s.courseOf(ctx, a, now)
		if err != nil {
			return nil, err
		}
		out = append(out, bootRow{A: zone.localize(a), View: viewOf(p, course)})
	}
	return out, nil
}
