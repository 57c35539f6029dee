package ladder

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/llmfleet/analyzer/domain"
)

// Boundary kinds.
const (
	KindBoot    = "boot"
	KindSurvive = "survive"
)

// Boundary statuses.
const (
	StatusOpen         = "open"
	StatusFound        = "found"
	StatusInconsistent = "inconsistent"
	StatusNoFailure    = "no_failure"
	StatusNoPass       = "no_pass"
)

// dimension is a shape dimension boundaries are found for, with the keys
// held fixed while it varies.
type dimension struct {
	name  string
	unit  string
	value func(domain.Shape) (int64, bool)
	fixed []string
}

func intKey(k string) func(domain.Shape) (int64, bool) {
	return func(s domain.Shape) (int64, bool) { return s.Int(k) }
}

func contract(s domain.Shape) (int64, bool) {
	n, ok1 := s.Int(domain.ShapeMaxNumSeqs)
	m, ok2 := s.Int(domain.ShapeMaxModelLen)
	return n * m, ok1 && ok2
}

// dimensions are max_model_len at fixed max_num_seqs and KV dtype,
// max_num_seqs at fixed max_model_len and KV dtype, and the contract size
// at a fixed KV dtype. Memory knobs (kv_cache_memory_bytes,
// gpu_memory_utilization, max_num_batched_tokens) are not held fixed: when
// they differ between a boundary's pass and fail rungs the note says so.
var dimensions = []dimension{
	{domain.ShapeMaxModelLen, "tokens", intKey(domain.ShapeMaxModelLen), []string{domain.ShapeMaxNumSeqs, domain.ShapeKVCacheDtype}},
	{domain.ShapeMaxNumSeqs, "sequences", intKey(domain.ShapeMaxNumSeqs), []string{domain.ShapeMaxModelLen, domain.ShapeKVCacheDtype}},
	{DimContract, "tokens", contract, []string{domain.ShapeKVCacheDtype}},
}

// structuralKeys change what a shape costs; they are held fixed too, and
// shown in a boundary's At only when they vary within the ladder.
var structuralKeys = []string{
	domain.ShapeTensorParallelSize, domain.ShapeQuantization, domain.ShapeEnforceEager,
	domain.ShapeSpeculative, domain.ShapeModel,
}

// dimRank orders dimensions for suggestions and display.
func dimRank(d string) int {
	for i, x := range []string{domain.ShapeMaxModelLen, DimContract, domain.ShapeMaxNumSeqs} {
		if x == d {
			return i
		}
	}
	return 9
}

func classFor(r *Rung, kind string) Class {
	if kind == KindBoot {
		return r.Boot
	}
	return r.Survive
}

func boundaries(l *Ladder) []Boundary {
	var varying []string
	for _, k := range structuralKeys {
		for i := 1; i < len(l.Rungs); i++ {
			if l.Rungs[i].Shape.String(k) != l.Rungs[0].Shape.String(k) {
				varying = append(varying, k)
				break
			}
		}
	}
	// max_model_len is not suggested above the largest value tried: the
	// model's own limit is not in the journal.
	var mmlCap int64
	for _, r := range l.Rungs {
		if v, ok := r.Shape.Int(domain.ShapeMaxModelLen); ok && v > mmlCap {
			mmlCap = v
		}
	}
	out := []Boundary{}
	for _, d := range dimensions {
		keys := append(append([]string{}, d.fixed...), varying...)
		type group struct {
			at    map[string]string
			rungs []*Rung
		}
		groups := map[string]*group{}
		var order []string
		for i := range l.Rungs {
			r := &l.Rungs[i]
			if _, ok := d.value(r.Shape); !ok {
				continue
			}
			at := map[string]string{}
			var parts []string
			for _, k := range keys {
				v := r.Shape.String(k)
				parts = append(parts, v)
				if v != "" {
					at[k] = v
				}
			}
			gk := strings.Join(parts, "\x00")
			if groups[gk] == nil {
				groups[gk] = &group{at: at}
				order = append(order, gk)
			}
			groups[gk].rungs = append(groups[gk].rungs, r)
		}
		for _, gk := range order {
			g := groups[gk]
			for _, kind := range []string{KindBoot, KindSurvive} {
				if b, ok := boundaryOf(l, d, kind, keys, g.at, g.rungs, mmlCap); ok {
					out = append(out, b)
				}
			}
		}
	}
	return out
}

func boundaryOf(l *Ladder, d dimension, kind string, keys []string, at map[string]string, rungs []*Rung, mmlCap int64) (Boundary, bool) {
	values := map[int64]bool{}
	var pass, fail *Rung
	var pv, fv int64
	var excluded, overridden []int
	// For surviving, dying under traffic outweighs staying up: a pass at a
	// value where another rung died (a probe that was stopped after boot,
	// then production died at the same shape) does not count.
	died := map[int64]bool{}
	if kind == KindSurvive {
		for _, r := range rungs {
			if v, _ := d.value(r.Shape); r.Survive == ClassCapacityFail && r.Boot == ClassPass {
				died[v] = true
			}
		}
	}
	for _, r := range rungs {
		v, _ := d.value(r.Shape)
		switch classFor(r, kind) {
		case ClassPass:
			if died[v] {
				overridden = append(overridden, r.N)
				continue
			}
			values[v] = true
			if pass == nil || v > pv {
				pass, pv = r, v
			}
		case ClassCapacityFail:
			values[v] = true
			if fail == nil || v < fv {
				fail, fv = r, v
			}
		default:
			excluded = append(excluded, r.N)
		}
	}
	if len(values) < 2 {
		return Boundary{}, false
	}
	b := Boundary{Dimension: d.name, Kind: kind, At: at, AtText: atText(keys, at), Excluded: excluded,
		Overridden: overridden, Granularity: l.Granularity}
	if d.name == domain.ShapeMaxNumSeqs {
		b.Granularity = 1
	}
	if pass != nil {
		b.Pass, b.PassRung = &pv, pass.N
	}
	if fail != nil {
		b.Fail, b.FailRung, b.FailVerdict = &fv, fail.N, fail.Verdict
	}
	switch {
	case pass == nil:
		b.Status = StatusNoPass
	case fail == nil:
		b.Status = StatusNoFailure
	case fv <= pv:
		b.Status = StatusInconsistent
	default:
		b.Status = StatusFound
		mid := pv + (fv-pv)/2
		if d.name == DimContract {
			if v, shape, ok := splitContract(pv, fv, mid, b.Granularity, mmlCap, pass, fail); ok {
				b.Status, b.Next, b.NextShape, b.nextRung = StatusOpen, &v, shortSummary(shape), shape
			} else {
				b.Reason = fmt.Sprintf("no contract of the pass or fail rung's max_num_seqs with max_model_len in blocks of %d (up to %d, the largest tried) lies between", b.Granularity, mmlCap)
			}
		} else if v, ok := gridBetween(pv, fv, mid, b.Granularity); ok {
			s := domain.Shape{}
			for k, x := range pass.Shape {
				if slices.Contains(keys, k) || k == d.name {
					s[k] = x
				}
			}
			s[d.name] = v
			b.Status, b.Next, b.NextShape, b.nextRung = StatusOpen, &v, shortSummary(s), s
		} else {
			b.Reason = fmt.Sprintf("step %d, no multiple of the granularity %d lies between", fv-pv, b.Granularity)
		}
	}
	b.Note = boundaryNote(l, d, b, pass, fail)
	return b, true
}

// floorTo rounds v down to a multiple of g.
func floorTo(v, g int64) int64 {
	if g <= 1 {
		return v
	}
	return v / g * g
}

// gridBetween returns the multiple of g strictly between pv and fv that is
// nearest the midpoint mid, the one below it first: the bisection midpoint
// rounded down to the granularity, or up when rounding down lands on pv.
func gridBetween(pv, fv, mid, g int64) (int64, bool) {
	down := floorTo(mid, g)
	for _, v := range []int64{down, down + max(g, 1)} {
		if v > pv && v < fv {
			return v, true
		}
	}
	return 0, false
}

// splitContract turns a contract-size midpoint into a shape: max_num_seqs
// of the pass or the fail rung, max_model_len a multiple of the
// granularity and at most mmlCap. Of the contracts strictly between the
// pass and the fail value, the largest at or below the midpoint wins (the
// midpoint rounded down); failing that, the smallest above it.
func splitContract(pv, fv, mid, g, mmlCap int64, pass, fail *Rung) (int64, domain.Shape, bool) {
	var best int64
	var bestShape domain.Shape
	for _, r := range []*Rung{pass, fail} {
		n, ok := r.Shape.Int(domain.ShapeMaxNumSeqs)
		if !ok || n <= 0 {
			continue
		}
		down := floorTo(mid/n, g)
		for _, m := range []int64{down, down + max(g, 1)} {
			if m <= 0 || (mmlCap > 0 && m > mmlCap) {
				continue
			}
			c := n * m
			if c <= pv || c >= fv {
				continue
			}
			better := best == 0 ||
				(c <= mid && (best > mid || c > best)) || // rounded down, as high as possible
				(c > mid && best > mid && c < best) // else rounded up, as low as possible
			if better {
				best = c
				bestShape = domain.Shape{domain.ShapeMaxNumSeqs: n, domain.ShapeMaxModelLen: m}
				if dt := pass.Shape.String(domain.ShapeKVCacheDtype); dt != "" {
					bestShape[domain.ShapeKVCacheDtype] = dt
				}
			}
		}
	}
	if best == 0 {
		return 0, nil, false
	}
	return best, bestShape, true
}

// shortSummary is the sizing part of Shape.Summary: "5 × 233472 fp8".
func shortSummary(s domain.Shape) string {
	t := domain.Shape{}
	for _, k := range []string{domain.ShapeMaxNumSeqs, domain.ShapeMaxModelLen, domain.ShapeKVCacheDtype} {
		if v, ok := s[k]; ok {
			t[k] = v
		}
	}
	out := t.Summary()
	if _, ok := t[domain.ShapeMaxModelLen]; !ok {
		if n, ok := t.Int(domain.ShapeMaxNumSeqs); ok {
			out = strings.TrimSpace(fmt.Sprintf("%d seqs %s", n, out))
		}
	}
	return out
}

func atText(keys []string, at map[string]string) string {
	var parts []string
	for _, k := range keys {
		if v, ok := at[k]; ok {
			parts = append(parts, k+"="+v)
		}
	}
	if len(parts) == 0 {
		return "any shape"
	}
	return strings.Join(parts, ", ")
}

// dimValue renders a dimension's value; a contract size also gets its
// split: "1310720 = 5 × 262144".
func dimValue(d string, v int64, r *Rung) string {
	if d == DimContract && r != nil {
		n, _ := r.Shape.Int(domain.ShapeMaxNumSeqs)
		m, _ := r.Shape.Int(domain.ShapeMaxModelLen)
		return fmt.Sprintf("%d = %d × %d", v, n, m)
	}
	return fmt.Sprint(v)
}

func kindWord(kind string) string {
	if kind == KindSurvive {
		return "surviving"
	}
	return "booting"
}

func boundaryNote(l *Ladder, d dimension, b Boundary, pass, fail *Rung) string {
	head := fmt.Sprintf("%s at %s, %s", d.name, b.AtText, kindWord(b.Kind))
	var body string
	switch b.Status {
	case StatusNoPass:
		body = fmt.Sprintf("fails down to %s (rung %d, %s); no rung passed yet", dimValue(d.name, *b.Fail, fail), fail.N, fail.Verdict)
	case StatusNoFailure:
		body = fmt.Sprintf("passes up to %s (rung %d); no capacity failure yet", dimValue(d.name, *b.Pass, pass), pass.N)
	case StatusInconsistent:
		body = fmt.Sprintf("inconsistent: rung %d failed (%s) at %s, at or below rung %d's pass at %s",
			fail.N, fail.Verdict, dimValue(d.name, *b.Fail, fail), pass.N, dimValue(d.name, *b.Pass, pass))
	default:
		body = fmt.Sprintf("passes at %s (rung %d), fails at %s (rung %d, %s)",
			dimValue(d.name, *b.Pass, pass), pass.N, dimValue(d.name, *b.Fail, fail), fail.N, fail.Verdict)
		if b.Status == StatusFound {
			body += ": boundary found (" + b.Reason + ")"
		} else {
			body += fmt.Sprintf(": next rung %s (%s %d, the bisection midpoint on the grid of %d)", b.NextShape, d.name, *b.Next, b.Granularity)
		}
	}
	if pass != nil && fail != nil {
		skip := map[string]bool{d.name: true, domain.ShapeServedModelName: true}
		if d.name == DimContract {
			skip[domain.ShapeMaxNumSeqs], skip[domain.ShapeMaxModelLen] = true, true
		}
		var diffs []string
		for _, c := range shapeDiff(pass.Shape, fail.Shape, skip) {
			diffs = append(diffs, c.String())
		}
		if len(diffs) > 0 {
			body += "; the pass and fail rungs also differ in " + strings.Join(diffs, ", ") + " (pass → fail)"
		}
	}
	if len(b.Overridden) > 0 {
		body += "; " + rungList(b.Overridden) + " stayed up at a value where another rung died under traffic: not counted as surviving"
	}
	if len(b.Excluded) > 0 {
		body += "; not counted: " + rungList(b.Excluded) + " (" + otherVerdicts(l, b.Excluded) + ")"
	}
	return head + ": " + body + "."
}

// shapeDiff lists the set keys that differ between two shapes, skipping
// outcome keys and skip.
func shapeDiff(a, b domain.Shape, skip map[string]bool) []Change {
	var out []Change
	for _, k := range orderedKeys(a, b) {
		if outcomeKeys[k] || skip[k] {
			continue
		}
		av, aok := a[k]
		bv, bok := b[k]
		if aok && bok && a.String(k) == b.String(k) {
			continue
		}
		c := Change{Key: k}
		if aok {
			c.From = av
		}
		if bok {
			c.To = bv
		}
		out = append(out, c)
	}
	return out
}

func otherVerdicts(l *Ladder, ns []int) string {
	seen := map[string]bool{}
	var vs []string
	for _, n := range ns {
		v := string(l.Rung(n).Verdict)
		if !seen[v] {
			seen[v] = true
			vs = append(vs, v)
		}
	}
	return strings.Join(vs, ", ")
}

// rungList renders rung numbers with ranges: "rungs 10–13, 15", "rung 4".
func rungList(ns []int) string {
	if len(ns) == 0 {
		return ""
	}
	ns = append([]int{}, ns...)
	sort.Ints(ns)
	var parts []string
	for i := 0; i < len(ns); {
		j := i
		for j+1 < len(ns) && ns[j+1] == ns[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d–%d", ns[i], ns[j]))
		} else {
			parts = append(parts, fmt.Sprint(ns[i]))
		}
		i = j + 1
	}
	if len(ns) == 1 {
		return "rung " + parts[0]
	}
	return "rungs " + strings.Join(parts, ", ")
}

// suggest picks the next rung: an open boundary in the context of the
// latest rung first, the survivable boundary before the boot one,
// max_model_len before the contract size before max_num_seqs, the most
// recently touched boundary first.
func suggest(l *Ladder) *Suggestion {
	if len(l.Boundaries) == 0 {
		return &Suggestion{Text: "no boundary yet: no shape dimension varied, with the others fixed, across a pass and a capacity failure"}
	}
	last := &l.Rungs[len(l.Rungs)-1]
	rank := func(b *Boundary) []int {
		ctx := 0
		for k, v := range b.At {
			if last.Shape.String(k) != v {
				ctx = 1
			}
		}
		kind := 1
		if b.Kind == KindSurvive {
			kind = 0
		}
		return []int{ctx, kind, dimRank(b.Dimension), -max(b.PassRung, b.FailRung)}
	}
	pick := func(status string) *Boundary {
		var best *Boundary
		var br []int
		for i := range l.Boundaries {
			b := &l.Boundaries[i]
			if b.Status != status {
				continue
			}
			r := rank(b)
			if best == nil || less(r, br) {
				best, br = b, r
			}
		}
		return best
	}
	if b := pick(StatusOpen); b != nil {
		return &Suggestion{Dimension: b.Dimension, Kind: b.Kind, At: b.AtText, Value: b.Next, Shape: b.NextShape,
			Rung: b.nextRung, Flags: EngineFlags(l.Engine, b.nextRung),
			Text: fmt.Sprintf("%s (%s %d), the midpoint of the %s boundary at %s between %d and %d, on the grid of %d",
				b.NextShape, b.Dimension, *b.Next, kindWord(b.Kind), b.AtText, *b.Pass, *b.Fail, b.Granularity)}
	}
	if b := pick(StatusFound); b != nil {
		return &Suggestion{Found: true, Dimension: b.Dimension, Kind: b.Kind, At: b.AtText,
			Text: fmt.Sprintf("%s at %s passes %s at %d and fails at %d (%s)",
				b.Dimension, b.AtText, kindWord(b.Kind), *b.Pass, *b.Fail, b.Reason)}
	}
	return &Suggestion{Text: "no boundary to bisect: every boundary lacks a pass or a capacity failure, or is inconsistent"}
}

func less(a, b []int) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}
