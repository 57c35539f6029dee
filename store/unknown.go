package store

import (
	"context"
	"fmt"

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
	// In domain.SortFailureRows' order: newest first, so the first id seen
	// per group is its newest attempt.
	rows, err := tx.QueryContext(ctx, `SELECT verdict, rule, fingerprint, id, host, unit, started_at_text, ended_at_text
		FROM attempts`+where+` ORDER BY COALESCE(started_at, ended_at) DESC, id DESC`, args...)
	if err != nil {
		return nil, fmt.Errorf("store: failure groups: %w", err)
	}
	defer rows.Close()
	var list []domain.FailureRow
	for rows.Next() {
		var r domain.FailureRow
		var verdict, started, ended string
		if err := rows.Scan(&verdict, &r.Rule, &r.Fingerprint, &r.ID, &r.Host, &r.Unit, &started, &ended); err != nil {
			return nil, fmt.Errorf("store: failure groups: %w", err)
		}
		r.Verdict = domain.Verdict(verdict)
		r.When, err = parseTimeText(started)
		if err == nil && r.When.IsZero() {
			r.When, err = parseTimeText(ended)
		}
		if err != nil {
			return nil, fmt.Errorf("store: failure groups: attempt %s: %w", r.ID, err)
		}
		list = append(list, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: failure groups: %w", err)
	}
	out := domain.GroupFailures(list)
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}
