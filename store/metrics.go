package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/llmfleet/analyzer/domain"
)

// The snapshot types are domain's: the metrics collector reads them
// without importing the store.
type (
	AttemptCount    = domain.AttemptCount
	FindingCount    = domain.FindingCount
	UnitStatus      = domain.UnitStatus
	MetricsSnapshot = domain.MetricsSnapshot
)

// MetricsSnapshot aggregates the stored attempts for the Prometheus
// collector, in one read transaction (one consistent snapshot). Attempts
// without a unit (plain-text logs) count in Attempts and Findings but have no
// UnitStatus.
func (d *DB) MetricsSnapshot(ctx context.Context) (*MetricsSnapshot, error) {
	tx, err := d.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("store: metrics: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // read-only

	snap := &MetricsSnapshot{}
	rows, err := tx.QueryContext(ctx, `SELECT host, unit, engine, verdict, count(*), count(NULLIF(ended_by, '')),
			max(CASE WHEN ended_by <> '' THEN ended_at END), id
		FROM attempts GROUP BY host, unit, engine, verdict ORDER BY host, unit, engine, verdict`)
	if err != nil {
		return nil, fmt.Errorf("store: metrics: attempts: %w", err)
	}
	for rows.Next() {
		var (
			c         AttemptCount
			lastEnded sql.NullInt64
		)
		// id is a bare column beside the query's one max(): SQLite takes it
		// from the row holding the max, the newest ended attempt.
		var id string
		if err := rows.Scan(&c.Host, &c.Unit, &c.Engine, &c.Verdict, &c.N, &c.Ended, &lastEnded, &id); err != nil {
			rows.Close()
			return nil, fmt.Errorf("store: metrics: attempts: %w", err)
		}
		if lastEnded.Valid && lastEnded.Int64 > 0 {
			c.LastEnded, c.LastEndedID = time.UnixMicro(lastEnded.Int64), id
		}
		snap.Attempts = append(snap.Attempts, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: metrics: attempts: %w", err)
	}

	rows, err = tx.QueryContext(ctx, `SELECT a.host, a.unit, f.finding_id, count(DISTINCT f.attempt_id)
		FROM findings f JOIN attempts a ON a.id = f.attempt_id
		GROUP BY a.host, a.unit, f.finding_id ORDER BY a.host, a.unit, f.finding_id`)
	if err != nil {
		return nil, fmt.Errorf("store: metrics: findings: %w", err)
	}
	for rows.Next() {
		var c FindingCount
		if err := rows.Scan(&c.Host, &c.Unit, &c.Finding, &c.N); err != nil {
			rows.Close()
			return nil, fmt.Errorf("store: metrics: findings: %w", err)
		}
		snap.Findings = append(snap.Findings, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: metrics: findings: %w", err)
	}

	// The latest attempt of each unit (ties on the start time go to the
	// attempt recorded last), with the unit's aggregates beside it.
	rows, err = tx.QueryContext(ctx, `WITH ranked AS (
			SELECT host, unit, engine, verdict, phase, ended_by, restart_counter, restart_counter_after,
				row_number() OVER (PARTITION BY host, unit ORDER BY started_at DESC, rowid DESC) AS rn
			FROM attempts WHERE unit <> ''
		), agg AS (
			SELECT host, unit, max(ready_at) AS last_ready, count(restart_counter_after) AS restarts
			FROM attempts WHERE unit <> '' GROUP BY host, unit
		)
		SELECT r.host, r.unit, r.engine, r.verdict, r.phase, r.ended_by,
			coalesce(r.restart_counter_after, r.restart_counter), g.last_ready, g.restarts
		FROM ranked r JOIN agg g ON g.host = r.host AND g.unit = r.unit
		WHERE r.rn = 1 ORDER BY r.host, r.unit`)
	if err != nil {
		return nil, fmt.Errorf("store: metrics: units: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			u         UnitStatus
			counter   sql.NullInt64
			lastReady sql.NullInt64
		)
		if err := rows.Scan(&u.Host, &u.Unit, &u.Engine, &u.Verdict, &u.Phase, &u.EndedBy,
			&counter, &lastReady, &u.Restarts); err != nil {
			return nil, fmt.Errorf("store: metrics: units: %w", err)
		}
		u.RestartCounter = intPtr(counter)
		if lastReady.Valid {
			u.LastReady = time.UnixMicro(lastReady.Int64)
		}
		snap.Units = append(snap.Units, u)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: metrics: units: %w", err)
	}
	return snap, nil
}
