package domain

import (
	"fmt"
	"regexp"
	"strconv"
	"time"
)

// Journal timestamps (__REALTIME_TIMESTAMP) carry no time zone, but the
// spec wants times "with the offset of the source". Engines print local
// wall-clock stamps in their lines; comparing one with the entry's journal
// time gives the host's UTC offset.
var (
	// vLLM: "INFO 10-01 21:40:04 [api_server.py:1885] ..."
	vllmStamp = regexp.MustCompile(`\b(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) (\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)\b`)
	// SGLang: "[2026-10-01 09:12:00] ..." or "[2026-10-01 09:12:00 TP0] ..."
	sglangStamp = regexp.MustCompile(`\[(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)[\] ]`)
)

// ZoneOf infers the UTC offset of the host that wrote line at journal time
// at, from a local wall-clock stamp in the line (vLLM's "INFO MM-DD
// HH:MM:SS", SGLang's "[YYYY-MM-DD HH:MM:SS]"). The offset is rounded to a
// quarter hour; ok is false when the line has no stamp or the difference is
// not a plausible offset (over 14 h: the line was logged long after).
func ZoneOf(line string, at time.Time) (loc *time.Location, ok bool) {
	if at.IsZero() {
		return nil, false
	}
	u := at.UTC()
	var local time.Time
	if m := vllmStamp.FindStringSubmatch(line); m != nil {
		n := atoi(m[1:])
		local = time.Date(u.Year(), time.Month(n[0]), n[1], n[2], n[3], n[4], 0, time.UTC)
		// Around New Year the local date may lie in the other year.
		if d := local.Sub(u); d > 180*24*time.Hour {
			local = local.AddDate(-1, 0, 0)
		} else if d < -180*24*time.Hour {
			local = local.AddDate(1, 0, 0)
		}
	} else if m := sglangStamp.FindStringSubmatch(line); m != nil {
		n := atoi(m[1:])
		local = time.Date(n[0], time.Month(n[1]), n[2], n[3], n[4], n[5], 0, time.UTC)
	} else {
		return nil, false
	}
	const quarter = 15 * time.Minute
	off := local.Sub(u.Truncate(time.Second)).Round(quarter)
	if off > 14*time.Hour || off < -14*time.Hour {
		return nil, false
	}
	secs := int(off.Seconds())
	if secs == 0 {
		return time.UTC, true
	}
	sign, a := '+', secs
	if a < 0 {
		sign, a = '-', -a
	}
	return time.FixedZone(fmt.Sprintf("UTC%c%02d:%02d", sign, a/3600, a%3600/60), secs), true
}

func atoi(ss []string) []int {
	out := make([]int, len(ss))
	for i, s := range ss {
		out[i], _ = strconv.Atoi(s)
	}
	return out
}

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
