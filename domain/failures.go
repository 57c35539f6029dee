package domain

import (
	"sort"
	"time"
)

// FailureRow is one failed attempt as GroupFailures counts it.
type FailureRow struct {
	ID, Host, Unit, Rule, Fingerprint string
	Verdict                           Verdict
	// When is the attempt's start, or its end when the start is unknown,
	// with its source's offset; zero when neither is known.
	When time.Time
}

// FailureRowOf is a's row: its start, else its end, as When.
func FailureRowOf(a *Attempt) FailureRow {
	when := a.StartedAt
	if when.IsZero() {
		when = a.EndedAt
	}
	return FailureRow{ID: a.ID, Host: a.Host, Unit: a.Unit, Rule: a.Rule, Fingerprint: a.Fingerprint, Verdict: a.Verdict, When: when}
}

// SortFailureRows puts rows in the order GroupFailures reads them: newest
// When first (unknown last), ties by ID descending.
func SortFailureRows(rows []FailureRow) {
	sort.Slice(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if a.When.IsZero() != b.When.IsZero() {
			return !a.When.IsZero()
		}
		if !a.When.Equal(b.When) {
			return a.When.After(b.When)
		}
		return a.ID > b.ID
	})
}

// GroupFailures groups rows (in SortFailureRows' order, so a group's first
// example is its newest attempt) by verdict, rule and fingerprint: most
// attempts first, ties by the latest LastSeen, then by group id. The store
// and the web server's in-memory view both count with it.
func GroupFailures(rows []FailureRow) []FailureGroup {
	type acc struct {
		g            *FailureGroup
		hosts, units map[string]bool
		times        []time.Time
	}
	type key struct {
		v        Verdict
		rule, fp string
	}
	byKey := map[key]*acc{}
	var order []*acc
	for _, r := range rows {
		k := key{r.Verdict, r.Rule, r.Fingerprint}
		a := byKey[k]
		if a == nil {
			a = &acc{g: &FailureGroup{ID: GroupID(r.Verdict, r.Rule, r.Fingerprint), Verdict: r.Verdict, Rule: r.Rule,
				Fingerprint: r.Fingerprint}, hosts: map[string]bool{}, units: map[string]bool{}}
			byKey[k] = a
			order = append(order, a)
		}
		g := a.g
		g.Count++
		if len(g.AttemptIDs) < GroupExamples {
			g.AttemptIDs = append(g.AttemptIDs, r.ID)
		}
		if when := r.When; !when.IsZero() {
			a.times = append(a.times, when)
			if g.LastSeen.IsZero() || when.After(g.LastSeen) {
				g.LastSeen = when
			}
			if g.FirstSeen.IsZero() || when.Before(g.FirstSeen) {
				g.FirstSeen = when
			}
		}
		if r.Host != "" && !a.hosts[r.Host] {
			a.hosts[r.Host] = true
			g.Hosts = append(g.Hosts, r.Host)
		}
		if r.Unit != "" && !a.units[r.Unit] {
			a.units[r.Unit] = true
			g.Units = append(g.Units, r.Unit)
		}
	}
	out := make([]FailureGroup, 0, len(order))
	for _, a := range order {
		sort.Strings(a.g.Hosts)
		sort.Strings(a.g.Units)
		regressions(a.g, a.times)
		out = append(out, *a.g)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		if !out[i].LastSeen.Equal(out[j].LastSeen) {
			return out[i].LastSeen.After(out[j].LastSeen)
		}
		return out[i].ID < out[j].ID
	})
	return out
}

// regressions sets g's Regressions, CameBackAt and CameBackAfter from the
// times of its attempts: a gap of more than RegressionGap between two
// consecutive attempts is a regression.
func regressions(g *FailureGroup, times []time.Time) {
	sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
	for i := 1; i < len(times); i++ {
		if gap := times[i].Sub(times[i-1]); gap > RegressionGap {
			g.Regressions++
			g.CameBackAt, g.CameBackAfter = times[i], gap
		}
	}
}
