package store

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/llmfleet/analyzer/domain"
)

// UnknownExamples bounds the example attempt ids of an UnknownGroup.
const UnknownExamples = 5

// UnknownGroup is the attempts with verdict unknown_failure that share a
// fingerprint (domain.Attempt.Fingerprint: "hash masked-text"; "" when the
// attempt had no error-looking line).
type UnknownGroup struct {
	Fingerprint string
	Count       int
	// FirstSeen and LastSeen are the earliest and latest start (the end
	// when the start is unknown) of the group's attempts, with the offset
	// of their source; zero when none is known.
	FirstSeen, LastSeen time.Time
	// AttemptIDs are up to UnknownExamples ids, newest first; the first is
	// the newest attempt of the group.
	AttemptIDs []string
	// Hosts and Units are the distinct hosts and units, sorted.
	Hosts, Units []string
}

// UnknownGroups groups the attempts with verdict unknown_failure that f
// matches (f.Verdict is ignored) by fingerprint, most attempts first (ties:
// most recently seen first, then fingerprint). f.Limit > 0 keeps that many
// groups; counts, first and last seen cover only the matching attempts.
func (d *DB) UnknownGroups(ctx context.Context, f Filter) ([]UnknownGroup, error) {
	limit := f.Limit
	f.Verdict, f.Limit = string(domain.VerdictUnknownFailure), 0
	where, args := filterWhere(f)
	// Newest first, so the first id seen per group is its newest attempt.
	rows, err := d.db.QueryContext(ctx, `SELECT fingerprint, id, host, unit, started_at_text, ended_at_text
		FROM attempts`+where+` ORDER BY COALESCE(started_at, ended_at) DESC, id DESC`, args...)
	if err != nil {
		return nil, fmt.Errorf("store: unknown groups: %w", err)
	}
	defer rows.Close()
	type acc struct {
		g            *UnknownGroup
		hosts, units map[string]bool
	}
	byFP := map[string]*acc{}
	var order []*acc
	for rows.Next() {
		var fp, id, host, unit, started, ended string
		if err := rows.Scan(&fp, &id, &host, &unit, &started, &ended); err != nil {
			return nil, fmt.Errorf("store: unknown groups: %w", err)
		}
		when, err := parseTimeText(started)
		if err == nil && when.IsZero() {
			when, err = parseTimeText(ended)
		}
		if err != nil {
			return nil, fmt.Errorf("store: unknown groups: attempt %s: %w", id, err)
		}
		a := byFP[fp]
		if a == nil {
			a = &acc{g: &UnknownGroup{Fingerprint: fp}, hosts: map[string]bool{}, units: map[string]bool{}}
			byFP[fp] = a
			order = append(order, a)
		}
		g := a.g
		g.Count++
		if len(g.AttemptIDs) < UnknownExamples {
			g.AttemptIDs = append(g.AttemptIDs, id)
		}
		if !when.IsZero() {
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
		return nil, fmt.Errorf("store: unknown groups: %w", err)
	}
	out := make([]UnknownGroup, 0, len(order))
	for _, a := range order {
		sort.Strings(a.g.Hosts)
		sort.Strings(a.g.Units)
		out = append(out, *a.g)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		if !out[i].LastSeen.Equal(out[j].LastSeen) {
			return out[i].LastSeen.After(out[j].LastSeen)
		}
		return out[i].Fingerprint < out[j].Fingerprint
	})
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}
