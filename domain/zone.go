package domain

import (
	"time"
)

// In returns a copy of the attempt with every time shown in loc (the same
// instants): start, end, readiness, timeline, evidence, context and findings.
func (a *Attempt) In(loc *time.Location) *Attempt {
	if loc == nil {
		return a
	}
	b := *a
	in := func(t time.Time) time.Time {
		if t.IsZero() {
			return t
		}
		return t.In(loc)
	}
	evs := func(es []Evidence) []Evidence {
		if es == nil {
			return nil
		}
		out := make([]Evidence, len(es))
		for i, e := range es {
			e.Time = in(e.Time)
			out[i] = e
		}
		return out
	}
	b.StartedAt, b.EndedAt, b.ReadyAt = in(a.StartedAt), in(a.EndedAt), in(a.ReadyAt)
	b.Evidence, b.Context = evs(a.Evidence), evs(a.Context)
	if a.Timeline != nil {
		b.Timeline = make([]PhaseMark, len(a.Timeline))
		for i, m := range a.Timeline {
			m.Time = in(m.Time)
			b.Timeline[i] = m
		}
	}
	if a.Findings != nil {
		b.Findings = make([]Finding, len(a.Findings))
		for i, f := range a.Findings {
			f.Time = in(f.Time)
			f.Evidence = evs(f.Evidence)
			b.Findings[i] = f
		}
	}
	return &b
}
