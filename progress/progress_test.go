package progress_test

import (
	"context"
	"testing"
	"time"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/pipeline"
	"github.com/llmfleet/analyzer/progress"
	"github.com/llmfleet/analyzer/rules"
)

// TestNightLadderTimeToReady: the bundled night ladder replayed in time
// order; at each rung's start, the expected time to ready from the rungs
// of its target before it. For the rungs that reached ready with at least
// MinBasis earlier ready boots, the real time must lie in [p50, p90] for
// at least 80 % (the target); the table is printed.
func TestNightLadderTimeToReady(t *testing.T) {
	set, err := rules.LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	as, _, err := pipeline.Analyze(context.Background(), set, pipeline.FileInputs([]string{"../examples/dankserver-night-ladder.journal.json"}), pipeline.BatchOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := progress.New()
	scored, inside, under := 0, 0, 0
	t.Logf("%-28s %-22s %8s %8s %8s %5s %s", "unit", "verdict", "actual", "p50", "p90", "basis", "")
	for _, a := range as {
		start := &domain.Attempt{Host: a.Host, Unit: a.Unit, StartedAt: a.StartedAt, Phase: domain.PhaseStart, Shape: a.Shape}
		e := m.Estimate(start, a.StartedAt, a.StartedAt, 0)
		actual := "-"
		mark := ""
		if !a.ReadyAt.IsZero() {
			d := a.ReadyAt.Sub(a.StartedAt)
			actual = d.Round(time.Second).String()
			if !e.NoHistory() {
				scored++
				mark = "outside"
				if e.ETA50 <= d && d <= e.ETA90 {
					inside++
					mark = "inside"
				}
				if d <= e.ETA90 {
					under++
				}
			}
		}
		t.Logf("%-28s %-22s %8s %8s %8s %5d %s", a.Unit, a.Verdict, actual, e.ETA50.Round(time.Second), e.ETA90.Round(time.Second), e.Basis, mark)
		m.Add(a)
	}
	t.Logf("rungs scored %d: inside [p50, p90] %d, at most p90 %d", scored, inside, under)
	if scored == 0 || inside*100 < 80*scored {
		t.Errorf("inside [p50, p90] for %d of %d rungs, want at least 80 %%", inside, scored)
	}
}

// at is a time of a synthetic boot: minute m of 2026-10-01.
func at(m float64) time.Time {
	return time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(m * float64(time.Minute)))
}

// boot is an ended boot of host h unit u starting at minute s that spends
// graph capture from minute s+3 for capture minutes, then is ready.
func boot(s, capture float64, seqs int) *domain.Attempt {
	return &domain.Attempt{Host: "h", Unit: "u", StartedAt: at(s), ReadyAt: at(s + 4 + capture), EndedAt: at(s + 30),
		Phase: domain.PhaseReady, Verdict: domain.VerdictReady, Shape: domain.Shape{domain.ShapeMaxNumSeqs: seqs},
		Timeline: []domain.PhaseMark{{Phase: domain.PhaseWeights, Time: at(s + 1)}, {Phase: domain.PhaseGraphCapture, Time: at(s + 3)},
			{Phase: domain.PhaseWarmup, Time: at(s + 3 + capture)}, {Phase: domain.PhaseReady, Time: at(s + 4 + capture)}}}
}

// TestStall: a boot in graph capture far longer than it took before is
// stalled, one inside its usual time is not; with no history of the
// target, only the quiet limit counts.
func TestStall(t *testing.T) {
	m := progress.New()
	for i, c := range []float64{2, 3, 4, 3, 2, 4, 3, 3, 2} {
		m.Add(boot(float64(i*60), c, 8))
	}
	running := func(s float64) *domain.Attempt {
		return &domain.Attempt{Host: "h", Unit: "u", StartedAt: at(s), Phase: domain.PhaseGraphCapture, Shape: domain.Shape{domain.ShapeMaxNumSeqs: 8},
			Timeline: []domain.PhaseMark{{Phase: domain.PhaseWeights, Time: at(s + 1)}, {Phase: domain.PhaseGraphCapture, Time: at(s + 3)}}}
	}
	a := running(1000)
	for _, c := range []struct {
		in      float64 // minutes in graph capture
		stalled bool
	}{{1, false}, {4, false}, {11.9, false}, {12.1, true}, {40, true}} {
		e := m.Estimate(a, at(1003+c.in), at(1003), 0)
		if e.Stalled != c.stalled || e.PhaseBasis != 9 || e.PhaseP50 != 3*time.Minute || e.PhaseP90 != 4*time.Minute || e.StallLimit != 12*time.Minute || !e.Comparable {
			t.Errorf("%v min in graph capture: %+v, want stalled %v after 12m (3 × p90 4m)", c.in, e, c.stalled)
		}
	}
	// 1 min into graph capture: ready came 1 min after the capture ended,
	// so the rest is capture - 1 + 1 min: p50 3m, p90 4m.
	if e := m.Estimate(a, at(1004), at(1004), 0); e.ETA50 != 3*time.Minute || e.ETA90 != 4*time.Minute || e.Basis != 9 {
		t.Errorf("ETA 1 min into graph capture: p50 %v p90 %v basis %d, want 3m, 4m, 9", e.ETA50, e.ETA90, e.Basis)
	}
	// Another shape with no boots of its own: the target's boots answer,
	// not as comparable.
	other := running(1000)
	other.Shape = domain.Shape{domain.ShapeMaxNumSeqs: 64}
	if e := m.Estimate(other, at(1004), at(1004), 0); e.Comparable || e.Basis != 9 {
		t.Errorf("another shape: %+v", e)
	}
	// No history: the quiet limit, counted from the last line.
	fresh := running(1000)
	fresh.Unit = "new"
	for _, c := range []struct {
		quiet   time.Duration
		last    float64
		stalled bool
	}{{15 * time.Minute, 1003, true}, {15 * time.Minute, 1030, false}, {60 * time.Minute, 1003, false}} {
		e := m.Estimate(fresh, at(1040), at(c.last), c.quiet)
		if e.Stalled != c.stalled || !e.NoHistory() || e.StallLimit != c.quiet {
			t.Errorf("no history, last line at %v, quiet %v: %+v, want stalled %v", c.last, c.quiet, e, c.stalled)
		}
	}
}

// TestModelKeepsTheNewestBoots: at most MaxBoots per target.
func TestModelKeepsTheNewestBoots(t *testing.T) {
	m := progress.New()
	for i := range progress.MaxBoots + 20 {
		c := 2.0
		if i < 20 {
			c = 30 // the oldest boots were slow; they fall out
		}
		m.Add(boot(float64(i*60), c, 8))
	}
	a := &domain.Attempt{Host: "h", Unit: "u", StartedAt: at(1e5), Phase: domain.PhaseStart, Shape: domain.Shape{domain.ShapeMaxNumSeqs: 8}}
	e := m.Estimate(a, at(1e5), at(1e5), 0)
	if e.Basis != progress.MaxBoots || e.ETA90 != 6*time.Minute {
		t.Errorf("%+v: want %d boots, p90 6m", e, progress.MaxBoots)
	}
}
