package store

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/llmfleet/analyzer/domain"
)

// UnknownExamples bounds the example attempt ids of an UnknownGroup.
const UnknownExamples = domain.GroupExamples

// UnknownGroup is a failure group of verdict unknown_failure (kept for the
// callers of UnknownGroups).
type UnknownGroup = domain.FailureGroup

// UnknownGroups groups the attempts with verdict unknown_failure that f
// matches (f.Verdict and f.Verdicts are ignored) by rule and fingerprint;
// see FailureGroups.
func (d *DB) UnknownGroups(ctx context.Context, f Filter) ([]UnknownGroup, error) {
	f.Verdict, f.Verdicts = string(domain.VerdictUnknownFailure), nil
	return d.FailureGroups(ctx, f)
}

// FailureGroups groups the failed attempts (domain.Verdict.IsFailure) that
// f matches by verdict, rule and fingerprint, most attempts first (ties:
// most recently seen first, then group id). f.Limit > 0 keeps that many
// groups; counts, first and last seen and regressions cover only the
// matching attempts; f.Cursor is ignored.
func (d *DB) FailureGroups(ctx context.Context, f Filter) ([]domain.FailureGroup, error) {
	limit := f.Limit
	f.Failed, f.Limit, f.Cursor = true, 0, nil
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("store: failure groups: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // read-only
	where, args, err := filterWhere(ctx, tx, f)
	if err != nil {
		return nil, fmt.Errorf("store: failure groups: %w", err)
	}
	// Newest first, so the first id seen per group is its newest attempt.
	rows, err := tx.QueryContext(ctx, `SELECT verdict, rule, fingerprint, id, host, unit, started_at_text, ended_at_text
		FROM attempts`+where+` ORDER BY COALESCE(started_at, ended_at) DESC, id DESC`, args...)
	if err != nil {
		return nil, fmt.Errorf("store: failure groups: %w", err)
	}
	defer rows.Close()
	type acc struct {
		g            *domain.FailureGroup
		hosts, units map[string]bool
		times        []time.Time // newest first
	}
	byID := map[string]*acc{}
	var order []*acc
	for rows.Next() {
		var verdict, rule, fp, id, host, unit, started, ended string
		if err := rows.Scan(&verdict, &rule, &fp, &id, &host, &unit, &started, &ended); err != nil {
			return nil, fmt.Errorf("store: failure groups: %w", err)
		}
		when, err := parseTimeText(started)
		if err == nil && when.IsZero() {
			when, err = parseTimeText(ended)
		}
		if err != nil {
			return nil, fmt.Errorf("store: failure groups: attempt %s: %w", id, err)
		}
		gid := domain.GroupID(domain.Verdict(verdict), rule, fp)
		a := byID[gid]
		if a == nil {
			a = &acc{g: &domain.FailureGroup{ID: gid, Verdict: domain.Verdict(verdict), Rule: rule, Fingerprint: fp},
				hosts: map[string]bool{}, units: map[string]bool{}}
			byID[gid] = a
			order = append(order, a)
		}
		g := a.g
		g.Count++
		if len(g.AttemptIDs) < domain.GroupExamples {
			g.AttemptIDs = append(g.AttemptIDs, id)
		}
		if !when.IsZero() {
			a.times = append(a.times, when)
			if g.LastSeen.IsZero() || when.After(g.LastSeen) {
				g.LastSeen = when
			}
			if g.FirstSeen.IsZero() || when.Before(g.FirstSeen) {
				g.FirstSeen = when
			}
		}
		if host != "" && !a.hosts[host] {
			a.hosts[host] = true
			g.Hosts = append(g.Hosts, host)
		}
		if unit != "" && !a.units[unit] {
			a.units[unit] = true
			g.Units = append(g.Units, unit)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: failure groups: %w", err)
	}
	out := make([]domain.FailureGroup, 0, len(order))
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
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// regressions sets g's Regressions, CameBackAt and CameBackAfter from the
// times of its attempts: a gap of more than domain.RegressionGap between
// two consecutive attempts is a regression.
func regressions(g *domain.FailureGroup, times []time.Time) {
	sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
	for i := 1; i < len(times); i++ {
		if gap := times[i].Sub(times[i-1]); gap > domain.RegressionGap {
			g.Regressions++
			g.CameBackAt, g.CameBackAfter = times[i], gap
		}
	}
}
