// Package progress says, for a boot in progress, where it is and how long
// it should still take, from the earlier boots of its target (the same
// host and unit) as the tracker recorded them (each attempt's phase
// timeline); and whether it has stalled: stayed in its phase far longer
// than that phase took before, or, with no history, printed nothing for a
// quiet limit. It reads no journal: only attempts.
package progress

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/llmfleet/analyzer/domain"
)

// MaxBoots bounds the earlier boots kept per target (the newest): the
// estimate is about how this target boots now.
const MaxBoots = 50

// MinBasis is how many earlier boots an estimate or a stall limit needs:
// fewer say nothing reliable.
const MinBasis = 3

// DefaultQuiet is the quiet limit for a boot with no history: it has
// stalled when it printed nothing for this long (serve --stall-quiet).
const DefaultQuiet = 15 * time.Minute

// Stall limits: a boot has stalled in a phase when it has been in it for
// more than StallFactor times the phase's p90 in comparable earlier boots,
// and at least a floor more than that p90 (a phase of seconds must not
// stall on a scheduler hiccup): StallMargin unless Limits.Floor says
// otherwise (serve --stall-floor).
const (
	StallFactor = 3
	StallMargin = 2 * time.Minute
)

// Limits are the stall limits a deployment sets: Quiet, the limit for a
// boot with no history of its phase (<= 0: DefaultQuiet), and Floor, the
// least time over the phase's p90 before a boot with history stalls (<=
// 0: StallMargin).
type Limits struct{ Quiet, Floor time.Duration }

func (l Limits) withDefaults() Limits {
	if l.Quiet <= 0 {
		l.Quiet = DefaultQuiet
	}
	if l.Floor <= 0 {
		l.Floor = StallMargin
	}
	return l
}

// Target is a host's unit: what boots again and again.
type Target struct{ Host, Unit string }

// TargetOf is the target of an attempt.
func TargetOf(a *domain.Attempt) Target { return Target{a.Host, a.Unit} }

// shapeKey is the part of a shape that changes how long a boot takes: the
// context and sequence counts (KV size, graph capture sizes), the KV dtype,
// the tensor parallelism and the compile cache's state (warm or cold).
type shapeKey struct{ maxLen, seqs, tp, dtype, cache string }

func keyOf(s domain.Shape) shapeKey {
	return shapeKey{s.String(domain.ShapeMaxModelLen), s.String(domain.ShapeMaxNumSeqs), s.String(domain.ShapeTensorParallelSize),
		s.String(domain.ShapeKVCacheDtype), s.String(domain.ShapeCompileCache)}
}

// like reports whether an earlier boot of key k is of the shape of a boot
// in progress of key cur: a boot states its compile cache only once it
// compiles, so before that any cache state is alike.
func (k shapeKey) like(cur shapeKey) bool {
	if cur.cache == "" {
		k.cache = ""
	}
	return k == cur
}

// boot is an earlier boot as the model keeps it.
type boot struct {
	start time.Time
	shape shapeKey
	// ready is the time from the start to ready; < 0 when it never was.
	ready time.Duration
	// enter is when the boot entered each phase, from its start.
	enter map[domain.Phase]time.Duration
	// took is how long each phase it left lasted (to the next phase).
	took map[domain.Phase]time.Duration
}

func bootOf(a *domain.Attempt) boot {
	b := boot{start: a.StartedAt, shape: keyOf(a.Shape), ready: -1,
		enter: map[domain.Phase]time.Duration{domain.PhaseStart: 0}, took: map[domain.Phase]time.Duration{}}
	if !a.ReadyAt.IsZero() {
		b.ready = a.ReadyAt.Sub(a.StartedAt)
	}
	prev, prevAt := domain.PhaseStart, time.Duration(0)
	for _, m := range a.Timeline {
		at := m.Time.Sub(a.StartedAt)
		if m.Phase == prev || m.Time.IsZero() || at < prevAt {
			continue
		}
		if _, seen := b.took[prev]; !seen {
			b.took[prev] = at - prevAt
		}
		if _, seen := b.enter[m.Phase]; !seen {
			b.enter[m.Phase] = at
		}
		prev, prevAt = m.Phase, at
	}
	return b
}

// Model holds the earlier boots of each target. It is not safe for
// concurrent use.
type Model struct {
	byTarget map[Target][]boot
}

// New returns an empty model.
func New() *Model { return &Model{byTarget: map[Target][]boot{}} }

// Add records an ended attempt as an earlier boot of its target (running
// attempts, and attempts with no start time, are ignored), keeping the
// MaxBoots newest per target.
func (m *Model) Add(a *domain.Attempt) {
	if a == nil || a.EndedAt.IsZero() || a.StartedAt.IsZero() {
		return
	}
	t := TargetOf(a)
	bs := append(m.byTarget[t], bootOf(a))
	sort.SliceStable(bs, func(i, j int) bool { return bs[i].start.Before(bs[j].start) })
	if len(bs) > MaxBoots {
		bs = bs[len(bs)-MaxBoots:]
	}
	m.byTarget[t] = bs
}

// Estimate is where a boot in progress is and how long it should still
// take.
type Estimate struct {
	Phase      domain.Phase
	PhaseStart time.Time
	// Elapsed is the time since the boot started; InPhase since it
	// entered Phase.
	Elapsed, InPhase time.Duration
	// ETA50 and ETA90 are the expected time from now to ready, median and
	// 90 % upper bound, over Basis earlier boots that reached ready (0
	// when Basis < MinBasis: no history). Comparable: they are boots of
	// the same shape.
	ETA50, ETA90 time.Duration
	Basis        int
	Comparable   bool
	// PhaseP50 and PhaseP90 are how long Phase took in the earlier boots
	// that left it (PhaseBasis of them); StallLimit is the time in Phase
	// after which the boot has stalled (the quiet limit when there are
	// fewer than MinBasis).
	PhaseP50, PhaseP90 time.Duration
	PhaseBasis         int
	StallLimit         time.Duration
	// Stalled: InPhase passed StallLimit, or, with no history of the
	// phase, the boot printed nothing for the quiet limit.
	Stalled bool
}

// NoHistory reports whether the estimate rests on too few earlier boots.
func (e Estimate) NoHistory() bool { return e.Basis < MinBasis }

// Estimate tells where attempt a (in progress) is at now: lastLine is the
// time of its newest line (zero: unknown), lim the stall limits.
func (m *Model) Estimate(a *domain.Attempt, now, lastLine time.Time, lim Limits) Estimate {
	lim = lim.withDefaults()
	quiet := lim.Quiet
	e := Estimate{Phase: a.Phase, PhaseStart: a.StartedAt}
	if !e.Phase.Valid() {
		e.Phase = domain.PhaseStart
	}
	for _, mk := range a.Timeline {
		if mk.Phase == e.Phase && !mk.Time.IsZero() {
			e.PhaseStart = mk.Time
			break
		}
	}
	e.Elapsed, e.InPhase = nonNeg(now.Sub(a.StartedAt)), nonNeg(now.Sub(e.PhaseStart))
	basis, comparable := m.basis(a)
	e.Comparable = comparable
	var remaining []time.Duration
	for _, b := range basis {
		if b.ready < 0 {
			continue
		}
		r := b.ready - e.Elapsed
		if at, ok := b.enter[e.Phase]; ok {
			r = b.ready - at - e.InPhase
		}
		remaining = append(remaining, nonNeg(r))
	}
	e.Basis = len(remaining)
	if e.Basis >= MinBasis {
		e.ETA50, e.ETA90 = quantile(remaining, 0.5), quantile(remaining, 0.9)
	}
	var took []time.Duration
	for _, b := range basis {
		if d, ok := b.took[e.Phase]; ok {
			took = append(took, d)
		}
	}
	e.PhaseBasis = len(took)
	if e.PhaseBasis >= MinBasis {
		e.PhaseP50, e.PhaseP90 = quantile(took, 0.5), quantile(took, 0.9)
		e.StallLimit = max(StallFactor*e.PhaseP90, e.PhaseP90+lim.Floor)
		e.Stalled = e.InPhase > e.StallLimit
	} else {
		e.StallLimit = quiet
		if !lastLine.IsZero() {
			e.Stalled = now.Sub(lastLine) > quiet
		}
	}
	return e
}

// basis is the earlier boots an estimate of a rests on: those of its
// shape when MinBasis of them reached ready (comparable), else all of its
// target's.
func (m *Model) basis(a *domain.Attempt) (basis []boot, comparable bool) {
	all := m.byTarget[TargetOf(a)]
	key := keyOf(a.Shape)
	var same []boot
	for _, b := range all {
		if b.shape.like(key) {
			same = append(same, b)
		}
	}
	if readyCount(same) >= MinBasis {
		return same, true
	}
	return all, false
}

// Segment is one phase of a boot's course to ready, as a progress bar
// segmented by phase draws it.
type Segment struct {
	Phase domain.Phase
	// Expected is the phase's part of the expected time to ready: what
	// it took for a phase the boot left; for the current phase the time
	// in it so far and what it usually still takes; for a later phase its
	// median in the earlier boots. Done is the part behind the boot.
	Expected, Done time.Duration
	Current        bool
}

// Course is boot a's way to ready as estimated by e (Estimate of m at
// the same now): the phases it left, the current one, and the later
// phases its earlier boots went through, in that order; the parts ahead
// (current phase's rest and later phases) add up to e.ETA50. Nil with no
// history.
func (m *Model) Course(a *domain.Attempt, e Estimate) []Segment {
	if e.NoHistory() {
		return nil
	}
	var out []Segment
	prev, prevAt := domain.PhaseStart, a.StartedAt
	for _, mk := range a.Timeline {
		if mk.Time.IsZero() || mk.Phase == prev || mk.Time.Before(prevAt) || !mk.Time.Before(e.PhaseStart) {
			continue
		}
		d := mk.Time.Sub(prevAt)
		out = append(out, Segment{Phase: prev, Expected: d, Done: d})
		prev, prevAt = mk.Phase, mk.Time
	}
	if prev != e.Phase && e.PhaseStart.After(prevAt) {
		d := e.PhaseStart.Sub(prevAt)
		out = append(out, Segment{Phase: prev, Expected: d, Done: d})
	}
	// What is ahead, in the earlier boots' medians, then scaled to ETA50
	// (the medians of parts do not add up to the median of the whole).
	rest := time.Duration(0)
	if e.PhaseBasis >= MinBasis {
		rest = nonNeg(e.PhaseP50 - e.InPhase)
	}
	basis, _ := m.basis(a)
	type later struct {
		phase domain.Phase
		d     time.Duration
	}
	var ahead []later
	sum := rest
	for _, p := range bootPhases {
		if p.Rank() <= e.Phase.Rank() {
			continue
		}
		var took []time.Duration
		for _, b := range basis {
			if b.ready >= 0 {
				took = append(took, b.took[p]) // 0 for a boot that skipped it
			}
		}
		if len(took) == 0 {
			continue
		}
		if d := quantile(took, 0.5); d > 0 {
			ahead = append(ahead, later{p, d})
			sum += d
		}
	}
	scale := func(d time.Duration) time.Duration {
		return time.Duration(float64(e.ETA50) * float64(d) / float64(sum))
	}
	if sum == 0 {
		rest, sum = e.ETA50, 1
		scale = func(d time.Duration) time.Duration { return d }
	}
	out = append(out, Segment{Phase: e.Phase, Expected: e.InPhase + scale(rest), Done: e.InPhase, Current: true})
	for _, l := range ahead {
		if d := scale(l.d); d > 0 {
			out = append(out, Segment{Phase: l.phase, Expected: d})
		}
	}
	return out
}

// bootPhases are the phases before ready, in order.
var bootPhases = []domain.Phase{domain.PhaseStart, domain.PhaseArgs, domain.PhaseInit, domain.PhaseWeights, domain.PhaseCompile,
	domain.PhaseProfile, domain.PhaseKVAlloc, domain.PhaseGraphCapture, domain.PhaseWarmup}

func readyCount(bs []boot) int {
	n := 0
	for _, b := range bs {
		if b.ready >= 0 {
			n++
		}
	}
	return n
}

// quantile is the nearest-rank q-quantile of ds (which it sorts).
func quantile(ds []time.Duration, q float64) time.Duration {
	slices.Sort(ds)
	i := int(q*float64(len(ds))+0.999999) - 1
	return ds[min(max(i, 0), len(ds)-1)]
}

func nonNeg(d time.Duration) time.Duration { return max(d, 0) }

// ForAttempt estimates boot a at now from the attempts of its target that
// started before it (others are ignored), with lastLine the time of its
// newest line and lim the stall limits.
func ForAttempt(earlier []*domain.Attempt, a *domain.Attempt, now, lastLine time.Time, lim Limits) Estimate {
	return modelFor(earlier, a).Estimate(a, now, lastLine, lim)
}

// CourseFor is ForAttempt with the boot's course to ready (Course).
func CourseFor(earlier []*domain.Attempt, a *domain.Attempt, now, lastLine time.Time, lim Limits) (Estimate, []Segment) {
	m := modelFor(earlier, a)
	e := m.Estimate(a, now, lastLine, lim)
	return e, m.Course(a, e)
}

// modelFor is the model of the attempts of a's target that started
// before it.
func modelFor(earlier []*domain.Attempt, a *domain.Attempt) *Model {
	m := New()
	t := TargetOf(a)
	for _, b := range earlier {
		if b.ID != a.ID && TargetOf(b) == t && b.StartedAt.Before(a.StartedAt) {
			m.Add(b)
		}
	}
	return m
}

// InProgress reports whether a is a boot still in progress that an
// estimate is about: not ended, not ready, started, and from a journal
// (pasted text has no host, and no "now").
func InProgress(a *domain.Attempt) bool {
	return a.EndedAt.IsZero() && a.ReadyAt.IsZero() && !a.StartedAt.IsZero() && a.Host != ""
}

// LastLine is the time of the newest line an attempt is known to have
// printed: the tracker's LastLineAt (and its phase marks), or, for an
// attempt stored before LastLineAt was kept, its start, phase marks,
// context and the lines its findings cite. The boot_stalled finding's own
// line is the analyzer's, not the boot's: counting it would end the
// silence it reports, and the finding would flap.
func LastLine(a *domain.Attempt) time.Time {
	last := a.StartedAt
	later := func(t time.Time) {
		if t.After(last) {
			last = t
		}
	}
	later(a.LastLineAt)
	for _, m := range a.Timeline {
		later(m.Time)
	}
	if !a.LastLineAt.IsZero() {
		return last
	}
	for _, f := range a.Findings {
		if f.ID == domain.FindingBootStalled {
			continue
		}
		for _, e := range f.Evidence {
			later(e.Time)
		}
	}
	for _, e := range a.Context {
		later(e.Time)
	}
	return last
}

// MaxBootAge bounds how old a boot in progress may be (from its start):
// an attempt that began longer ago and never ended is a lost end (a
// journal cut, a backfill), not a boot anyone waits for.
const MaxBootAge = 24 * time.Hour

// Lister is what Boots reads (*store.DB has it).
type Lister interface {
	OpenAttempts(ctx context.Context) ([]*domain.Attempt, error)
	ListAttempts(ctx context.Context, f domain.AttemptFilter) ([]*domain.Attempt, error)
}

// Boot is a boot in progress with its estimate.
type Boot struct {
	Attempt  *domain.Attempt
	Estimate Estimate
}

// Earlier reads the attempts an estimate of a rests on: the newest
// MaxBoots+1 of its target (a itself may be one of them; ForAttempt skips
// it). Errors are db's.
func Earlier(ctx context.Context, db interface {
	ListAttempts(ctx context.Context, f domain.AttemptFilter) ([]*domain.Attempt, error)
}, a *domain.Attempt) ([]*domain.Attempt, error) {
	return db.ListAttempts(ctx, domain.AttemptFilter{Host: a.Host, Unit: a.Unit, Limit: MaxBoots + 1})
}

// Boots estimates every boot in progress of db at now (InProgress,
// started within MaxBootAge) from the MaxBoots earlier attempts of its
// target, with the stall limits lim. Errors are db's.
func Boots(ctx context.Context, db Lister, now time.Time, lim Limits) ([]Boot, error) {
	open, err := db.OpenAttempts(ctx)
	if err != nil {
		return nil, err
	}
	var out []Boot
	for _, a := range open {
		if !InProgress(a) || now.Sub(a.StartedAt) > MaxBootAge {
			continue
		}
		earlier, err := Earlier(ctx, db, a)
		if err != nil {
			return nil, err
		}
		out = append(out, Boot{a, ForAttempt(earlier, a, now, LastLine(a), lim)})
	}
	return out, nil
}

// Describe says a stall in words, for the boot_stalled finding and its
// note: "graph_capture for 14m0s; it took 2m0s-4m0s in the last 9 boots
// of this shape", or, with no history, how long the boot printed nothing.
func (e Estimate) Describe(silent time.Duration) string {
	if e.PhaseBasis >= MinBasis {
		of := "of this unit"
		if e.Comparable {
			of = "of this shape"
		}
		return fmt.Sprintf("%s for %s; it took %s-%s in the last %d boots %s", e.Phase, e.InPhase.Round(time.Second),
			e.PhaseP50.Round(time.Second), e.PhaseP90.Round(time.Second), e.PhaseBasis, of)
	}
	known := "no earlier boot of this unit tells"
	if e.PhaseBasis > 0 {
		known = fmt.Sprintf("%d earlier boots of this unit left it, too few (%d) to tell", e.PhaseBasis, MinBasis)
	}
	return fmt.Sprintf("%s for %s, and nothing printed for %s; %s how long %s takes",
		e.Phase, e.InPhase.Round(time.Second), silent.Round(time.Second), known, e.Phase)
}

// ReadyTime is the expected time to ready of a shape not yet booted, from
// earlier boots of its target: P50 and P90 of the time from start to
// ready of the Basis boots of the nearest shapes (SameShape: all of the
// shape asked about). Basis < MinBasis: no history.
type ReadyTime struct {
	P50, P90  time.Duration
	Basis     int
	SameShape bool
}

// NoHistory reports whether too few earlier boots reached ready.
func (r ReadyTime) NoHistory() bool { return r.Basis < MinBasis }

// String is the expected time in words: "ready in ~5m24s (p90 6m0s),
// from 4 boots of this shape" (or "of the nearest shapes"), or "no
// history".
func (r ReadyTime) String() string {
	if r.NoHistory() {
		return "no history"
	}
	of := "of the nearest shapes"
	if r.SameShape {
		of = "of this shape"
	}
	return fmt.Sprintf("ready in ~%s (p90 %s), from %d boots %s", r.P50.Round(time.Second), r.P90.Round(time.Second), r.Basis, of)
}

// TimeToReady is the expected time to ready of shape s from the earlier
// boots that reached ready (others are ignored): those of the nearest
// shape by the keys that change how long a boot takes (keyOf), and, while
// they are fewer than MinBasis, those of the next nearest. Nearness counts
// doublings of max_model_len and max_num_seqs, a dtype change as one,
// another compile cache state as two and another tensor parallelism as four.
func TimeToReady(earlier []*domain.Attempt, s domain.Shape) ReadyTime {
	type ready struct {
		d    time.Duration
		dist float64
		same bool
	}
	want := keyOf(s)
	var rs []ready
	for _, a := range earlier {
		if a.StartedAt.IsZero() || a.ReadyAt.IsZero() || a.ReadyAt.Before(a.StartedAt) {
			continue
		}
		rs = append(rs, ready{a.ReadyAt.Sub(a.StartedAt), shapeDistance(s, a.Shape), keyOf(a.Shape).like(want)})
	}
	sort.SliceStable(rs, func(i, j int) bool { return rs[i].dist < rs[j].dist })
	n := 0
	for n < len(rs) && (n < MinBasis || rs[n].dist == rs[n-1].dist) {
		n++
	}
	if n < MinBasis {
		return ReadyTime{Basis: n}
	}
	ds := make([]time.Duration, n)
	same := true
	for i, r := range rs[:n] {
		ds[i] = r.d
		same = same && r.same
	}
	return ReadyTime{P50: quantile(ds, 0.5), P90: quantile(ds, 0.9), Basis: n, SameShape: same}
}

// shapeDistance is how far apart two shapes are for how long they take
// to boot (TimeToReady).
func shapeDistance(a, b domain.Shape) float64 {
	d := 0.0
	for _, k := range []string{domain.ShapeMaxModelLen, domain.ShapeMaxNumSeqs} {
		x, okx := a.Int(k)
		y, oky := b.Int(k)
		switch {
		case okx && oky && x > 0 && y > 0:
			d += math.Abs(math.Log2(float64(x) / float64(y)))
		case okx != oky:
			d++
		}
	}
	if a.String(domain.ShapeKVCacheDtype) != b.String(domain.ShapeKVCacheDtype) {
		d++
	}
	if a.String(domain.ShapeTensorParallelSize) != b.String(domain.ShapeTensorParallelSize) {
		d += 4
	}
	if x, y := a.String(domain.ShapeCompileCache), b.String(domain.ShapeCompileCache); x != "" && y != "" && x != y {
		d += 2 // a cold compile takes minutes a warm cache skips
	}
	return d
}

// ReadyTimeJSON is a ReadyTime in `analyzer fit -o json` and the what-if
// API: seconds, absent with no history.
type ReadyTimeJSON struct {
	P50       *float64 `json:"p50_s,omitempty"`
	P90       *float64 `json:"p90_s,omitempty"`
	Basis     int      `json:"basis"`
	SameShape bool     `json:"same_shape"`
	NoHistory bool     `json:"no_history,omitempty"`
	Text      string   `json:"text"`
}

// JSON is r as ReadyTimeJSON.
func (r ReadyTime) JSON() ReadyTimeJSON {
	j := ReadyTimeJSON{Basis: r.Basis, SameShape: r.SameShape, NoHistory: r.NoHistory(), Text: r.String()}
	if !r.NoHistory() {
		p50, p90 := r.P50.Seconds(), r.P90.Seconds()
		j.P50, j.P90 = &p50, &p90
	}
	return j
}

// ProposedShape is the shape a what-if proposes (max_num_seqs,
// max_model_len, the KV dtype) with the tensor parallelism of like (the
// latest boot's): the keys TimeToReady compares.
func ProposedShape(seqs, mml int64, dtype string, like domain.Shape) domain.Shape {
	s := domain.Shape{domain.ShapeMaxNumSeqs: seqs, domain.ShapeMaxModelLen: mml}
	if dtype != "" {
		s[domain.ShapeKVCacheDtype] = dtype
	}
	if tp, ok := like[domain.ShapeTensorParallelSize]; ok {
		s[domain.ShapeTensorParallelSize] = tp
	}
	return s
}
