package progress_test

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/pipeline"
	"github.com/llmfleet/analyzer/progress"
	"github.com/llmfleet/analyzer/rules"
)

// TestNightLadderTimeToReady: the bundled night ladder replayed in time
// order (all targets interleaved by start); at each rung's start, the
// expected time to ready from the ended rungs of its target before it.
// Scored are the rungs that reached ready and had at least MinBasis
// earlier boots of their target (any verdict, as the issue counts them);
// of those, the ones with an estimate (MinBasis earlier boots that reached
// ready), and how often the real time lay in [p50, p90] and at most p90.
// The table is printed; the counts asserted are the ones measured on the
// fixture (not a target tuned to): the ladder's ready rungs all take
// 5m24.4s, so the interval is a point and a hit is exact. With iid
// durations, P(p50 <= X <= p90) is 40 % by construction; this fixture
// cannot tell a model from a constant.
func TestNightLadderTimeToReady(t *testing.T) {
	set, err := rules.LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	as, _, err := pipeline.Analyze(context.Background(), set, pipeline.FileInputs([]string{"../examples/dankserver-night-ladder.journal.json"}), pipeline.BatchOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	sort.SliceStable(as, func(i, j int) bool { return as[i].StartedAt.Before(as[j].StartedAt) })
	m := progress.New()
	earlier := map[progress.Target]int{}
	var scored, estimated, inside, under, rungs int
	t.Logf("%-8s %-28s %-28s %8s %8s %8s %7s %5s %s", "start", "unit", "verdict", "actual", "p50", "p90", "earlier", "basis", "")
	for _, a := range as {
		rungs++
		tg := progress.TargetOf(a)
		start := &domain.Attempt{Host: a.Host, Unit: a.Unit, StartedAt: a.StartedAt, Phase: domain.PhaseStart, Shape: a.Shape}
		e := m.Estimate(start, a.StartedAt, a.StartedAt, progress.Limits{})
		actual, mark := "-", ""
		if !a.ReadyAt.IsZero() {
			d := a.ReadyAt.Sub(a.StartedAt)
			actual = d.Round(time.Second).String()
			if earlier[tg] >= progress.MinBasis {
				scored++
				mark = "no estimate"
				if !e.NoHistory() {
					estimated++
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
		}
		t.Logf("%-8s %-28s %-28s %8s %8s %8s %7d %5d %s", a.StartedAt.UTC().Format("15:04:05"), a.Unit, a.Verdict, actual,
			e.ETA50.Round(time.Second), e.ETA90.Round(time.Second), earlier[tg], e.Basis, mark)
		m.Add(a)
		earlier[tg]++
	}
	t.Logf("%d rungs; reached ready with >= %d earlier boots: %d; with an estimate: %d; p50 <= actual <= p90: %d; actual <= p90: %d",
		rungs, progress.MinBasis, scored, estimated, inside, under)
	if rungs != 16 || scored != 3 || estimated != 1 || inside != 1 || under != 1 {
		t.Errorf("measured %d rungs, %d scored, %d estimated, %d inside, %d under p90; the fixture gave 16, 3, 1, 1, 1", rungs, scored, estimated, inside, under)
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
		e := m.Estimate(a, at(1003+c.in), at(1003), progress.Limits{})
		if e.Stalled != c.stalled || e.PhaseBasis != 9 || e.PhaseP50 != 3*time.Minute || e.PhaseP90 != 4*time.Minute || e.StallLimit != 12*time.Minute || !e.Comparable {
			t.Errorf("%v min in graph capture: %+v, want stalled %v after 12m (3 × p90 4m)", c.in, e, c.stalled)
		}
	}
	// 1 min into graph capture: ready came 1 min after the capture ended,
	// so the rest is capture - 1 + 1 min: p50 3m, p90 4m.
	if e := m.Estimate(a, at(1004), at(1004), progress.Limits{}); e.ETA50 != 3*time.Minute || e.ETA90 != 4*time.Minute || e.Basis != 9 {
		t.Errorf("ETA 1 min into graph capture: p50 %v p90 %v basis %d, want 3m, 4m, 9", e.ETA50, e.ETA90, e.Basis)
	}
	// Another shape with no boots of its own: the target's boots answer,
	// not as comparable.
	other := running(1000)
	other.Shape = domain.Shape{domain.ShapeMaxNumSeqs: 64}
	if e := m.Estimate(other, at(1004), at(1004), progress.Limits{}); e.Comparable || e.Basis != 9 {
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
		e := m.Estimate(fresh, at(1040), at(c.last), progress.Limits{Quiet: c.quiet})
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
	e := m.Estimate(a, at(1e5), at(1e5), progress.Limits{})
	if e.Basis != progress.MaxBoots || e.ETA90 != 6*time.Minute {
		t.Errorf("%+v: want %d boots, p90 6m", e, progress.MaxBoots)
	}
}

// TestQuietCountsEveryLine: with no history, a boot that keeps printing
// lines that mark no phase (a weight loader's progress for half an hour)
// has not stalled; the quiet limit runs from its newest line
// (Attempt.LastLineAt), not from its last phase mark.
func TestQuietCountsEveryLine(t *testing.T) {
	a := &domain.Attempt{ID: "x", Host: "h", Unit: "fresh.service", StartedAt: at(0), Phase: domain.PhaseWeights,
		Timeline: []domain.PhaseMark{{Phase: domain.PhaseWeights, Time: at(1)}}, LastLineAt: at(35)}
	if got := progress.LastLine(a); !got.Equal(at(35)) {
		t.Fatalf("LastLine %v, want minute 35", got)
	}
	for _, c := range []struct {
		now     float64
		stalled bool
	}{{40, false}, {49.9, false}, {50.1, true}} {
		e := progress.ForAttempt(nil, a, at(c.now), progress.LastLine(a), progress.Limits{})
		if e.Stalled != c.stalled || e.InPhase != time.Duration((c.now-1)*float64(time.Minute)) || e.StallLimit != progress.DefaultQuiet {
			t.Errorf("minute %v, last line at 35: %+v, want stalled %v", c.now, e, c.stalled)
		}
	}
	// The stall's own line (the analyzer's) is no line of the boot.
	stall := domain.Evidence{Time: at(50.1), Message: "weights for 49m; nothing printed for 15m"}
	a.Findings = []domain.Finding{{ID: domain.FindingBootStalled, Evidence: []domain.Evidence{stall}}}
	a.Evidence = []domain.Evidence{stall}
	if got := progress.LastLine(a); !got.Equal(at(35)) {
		t.Errorf("LastLine with a stall raised %v, want minute 35", got)
	}
	// Stored before LastLineAt was kept: the phase marks, context and the
	// lines other findings cite tell.
	a.LastLineAt = time.Time{}
	a.Findings = append(a.Findings, domain.Finding{ID: domain.FindingLogLoss, Evidence: []domain.Evidence{{Time: at(7), Message: "Suppressed 1000 messages"}}})
	if got := progress.LastLine(a); !got.Equal(at(7)) {
		t.Errorf("LastLine without LastLineAt %v, want minute 7", got)
	}
}

// TestDescribe: the stall in words, as the boot_stalled note says it.
func TestDescribe(t *testing.T) {
	for _, c := range []struct {
		e    progress.Estimate
		want string
	}{
		{progress.Estimate{Phase: domain.PhaseGraphCapture, InPhase: 14 * time.Minute, PhaseP50: 2 * time.Minute, PhaseP90: 4 * time.Minute, PhaseBasis: 9, Comparable: true},
			"graph_capture for 14m0s; it took 2m0s-4m0s in the last 9 boots of this shape"},
		{progress.Estimate{Phase: domain.PhaseWeights, InPhase: 20 * time.Minute},
			"weights for 20m0s, and nothing printed for 15m0s; no earlier boot of this unit tells how long weights takes"},
		{progress.Estimate{Phase: domain.PhaseCompile, InPhase: 20 * time.Minute, PhaseBasis: 2},
			"compile for 20m0s, and nothing printed for 15m0s; 2 earlier boots of this unit left it, too few (3) to tell how long compile takes"},
	} {
		if got := c.e.Describe(15 * time.Minute); got != c.want {
			t.Errorf("got  %q\nwant %q", got, c.want)
		}
	}
}

// TestCourse: the phases of a boot in graph capture, as the segmented
// bar draws them: the ones it left as they took, graph capture as long as
// it has been in it plus what it usually still takes, and warmup as the
// earlier boots had it; the parts ahead add up to the expected time.
func TestCourse(t *testing.T) {
	var earlier []*domain.Attempt
	for i, c := range []float64{2, 3, 4, 3, 2, 4, 3, 3, 2} {
		earlier = append(earlier, boot(float64(i*60), c, 8))
	}
	a := &domain.Attempt{ID: "now", Host: "h", Unit: "u", StartedAt: at(1000), Phase: domain.PhaseGraphCapture, Shape: domain.Shape{domain.ShapeMaxNumSeqs: 8},
		Timeline: []domain.PhaseMark{{Phase: domain.PhaseWeights, Time: at(1001)}, {Phase: domain.PhaseGraphCapture, Time: at(1003)}}}
	e, course := progress.CourseFor(earlier, a, at(1004), at(1004), progress.Limits{})
	m := time.Minute
	want := []progress.Segment{{Phase: domain.PhaseStart, Expected: m, Done: m}, {Phase: domain.PhaseWeights, Expected: 2 * m, Done: 2 * m},
		{Phase: domain.PhaseGraphCapture, Expected: 3 * m, Done: m, Current: true}, {Phase: domain.PhaseWarmup, Expected: m}}
	if e.ETA50 != 3*m || len(course) != len(want) {
		t.Fatalf("ETA %v, course %+v", e.ETA50, course)
	}
	for i := range want {
		if course[i] != want[i] {
			t.Errorf("segment %d: %+v, want %+v", i, course[i], want[i])
		}
	}
	// 2.5 min in graph capture (usually 3): half a minute of it left by
	// the median, then warmup, in the 1.5 min the estimate gives.
	e, course = progress.CourseFor(earlier, a, at(1005.5), at(1005.5), progress.Limits{})
	if len(course) != 4 || course[2].Expected != 3*m || course[2].Done != 150*time.Second || course[3].Expected != m || e.ETA50 != 90*time.Second {
		t.Errorf("late: ETA %v, course %+v", e.ETA50, course)
	}
	// Overdue (5 min; the earlier boots were all ready by then): the
	// estimate says 0 left, so the bar is graph capture, full.
	e, course = progress.CourseFor(earlier, a, at(1008), at(1008), progress.Limits{})
	if len(course) != 3 || course[2].Expected != 5*m || course[2].Done != 5*m || e.ETA50 != 0 {
		t.Errorf("overdue: ETA %v, course %+v", e.ETA50, course)
	}
	// No history: no course.
	a.Unit = "new"
	if _, course := progress.CourseFor(earlier, a, at(1004), at(1004), progress.Limits{}); course != nil {
		t.Errorf("no history: %+v", course)
	}
}

// TestTimeToReady: a shape's expected time to ready from the boots of the
// same shape; with too few, the nearest shapes join; failed boots count
// for nothing.
func TestTimeToReady(t *testing.T) {
	var earlier []*domain.Attempt
	for i, c := range []float64{2, 3, 4, 3} { // 8 seqs: ready after 6, 7, 8, 7 min
		earlier = append(earlier, boot(float64(i*60), c, 8))
	}
	for i, c := range []float64{10, 12} { // 64 seqs: 14, 16 min
		earlier = append(earlier, boot(float64(300+i*60), c, 64))
	}
	failed := boot(500, 1, 64)
	failed.ReadyAt = time.Time{}
	earlier = append(earlier, failed)
	m := time.Minute
	for _, c := range []struct {
		seqs int
		want progress.ReadyTime
		text string
	}{
		{8, progress.ReadyTime{P50: 7 * m, P90: 8 * m, Basis: 4, SameShape: true}, "ready in ~7m0s (p90 8m0s), from 4 boots of this shape"},
		// 64: its two boots, too few, and all four 8-seq ones (three
		// doublings away, tied): 6, 7, 7, 8, 14, 16 min.
		{64, progress.ReadyTime{P50: 7 * m, P90: 16 * m, Basis: 6}, "ready in ~7m0s (p90 16m0s), from 6 boots of the nearest shapes"},
		// 32: the two 64-seq boots are one doubling away, the 8-seq ones two.
		{32, progress.ReadyTime{P50: 7 * m, P90: 16 * m, Basis: 6}, "ready in ~7m0s (p90 16m0s), from 6 boots of the nearest shapes"},
	} {
		got := progress.TimeToReady(earlier, domain.Shape{domain.ShapeMaxNumSeqs: c.seqs})
		if got != c.want || got.String() != c.text {
			t.Errorf("%d seqs: %+v %q, want %+v %q", c.seqs, got, got, c.want, c.text)
		}
	}
	if got := progress.TimeToReady(earlier[4:], domain.Shape{domain.ShapeMaxNumSeqs: 64}); !got.NoHistory() || got.String() != "no history" || got.Basis != 2 {
		t.Errorf("two ready boots: %+v", got)
	}
}

// TestStallFloor: a phase of seconds stalls only at least the floor past
// its p90 (2 min by default); a shorter floor (serve --stall-floor) brings
// the limit down to 3 × p90.
func TestStallFloor(t *testing.T) {
	var earlier []*domain.Attempt
	for i, c := range []float64{0.1, 0.15, 0.2} { // graph capture 6-12 s
		earlier = append(earlier, boot(float64(i*60), c, 8))
	}
	a := &domain.Attempt{ID: "now", Host: "h", Unit: "u", StartedAt: at(1000), Phase: domain.PhaseGraphCapture, Shape: domain.Shape{domain.ShapeMaxNumSeqs: 8},
		Timeline: []domain.PhaseMark{{Phase: domain.PhaseWeights, Time: at(1001)}, {Phase: domain.PhaseGraphCapture, Time: at(1003)}}}
	p90 := 12 * time.Second
	for _, c := range []struct {
		floor, limit time.Duration
	}{{0, p90 + 2*time.Minute}, {time.Second, 3 * p90}, {time.Minute, p90 + time.Minute}} {
		e := progress.ForAttempt(earlier, a, at(1003).Add(c.limit+time.Second), at(1003), progress.Limits{Floor: c.floor})
		if e.PhaseP90 != p90 || e.StallLimit != c.limit || !e.Stalled {
			t.Errorf("floor %v: p90 %v limit %v stalled %v, want limit %v and stalled a second past it", c.floor, e.PhaseP90, e.StallLimit, e.Stalled, c.limit)
		}
		if e := progress.ForAttempt(earlier, a, at(1003).Add(c.limit-time.Second), at(1003), progress.Limits{Floor: c.floor}); e.Stalled {
			t.Errorf("floor %v: stalled a second before the limit %v", c.floor, c.limit)
		}
	}
}

// TestCompileCacheState: boots are compared within one compile cache
// state once the boot in progress states its own; before it compiles,
// any state is alike.
func TestCompileCacheState(t *testing.T) {
	boot := func(i int, cache string, ready time.Duration) *domain.Attempt {
		s := time.Date(2026, 11, 20+i, 10, 0, 0, 0, time.UTC)
		return &domain.Attempt{Host: "h", Unit: "u", StartedAt: s, ReadyAt: s.Add(ready), Verdict: domain.VerdictReady,
			Shape: domain.Shape{domain.ShapeMaxModelLen: int64(8192), domain.ShapeCompileCache: cache}}
	}
	var earlier []*domain.Attempt
	for i := range 3 {
		earlier = append(earlier, boot(i, "warm", 2*time.Minute), boot(i+3, "cold", 6*time.Minute))
	}
	warm := domain.Shape{domain.ShapeMaxModelLen: int64(8192), domain.ShapeCompileCache: "warm"}
	if r := progress.TimeToReady(earlier, warm); r.P50 != 2*time.Minute || r.Basis != 3 || !r.SameShape {
		t.Errorf("warm: %+v, want p50 2m of 3 warm boots", r)
	}
	cold := domain.Shape{domain.ShapeMaxModelLen: int64(8192), domain.ShapeCompileCache: "cold"}
	if r := progress.TimeToReady(earlier, cold); r.P50 != 6*time.Minute || r.Basis != 3 {
		t.Errorf("cold: %+v, want p50 6m of 3 cold boots", r)
	}
	// not yet compiled: all six are of its shape
	unknown := domain.Shape{domain.ShapeMaxModelLen: int64(8192)}
	if r := progress.TimeToReady(earlier, unknown); r.Basis != 6 || !r.SameShape {
		t.Errorf("cache unknown: %+v, want all 6 boots", r)
	}
}
