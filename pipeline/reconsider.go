package pipeline

import (
	"context"
	"fmt"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/judge"
	"github.com/llmfleet/analyzer/rules"
)

// StoredAttempts is what ReconsiderStored reads and saves (*store.DB has
// it).
type StoredAttempts interface {
	ListAttempts(ctx context.Context, f domain.AttemptFilter) ([]*domain.Attempt, error)
	SaveAttempts(ctx context.Context, attempts []*domain.Attempt, pos *domain.Position) error
}

// MaxReconsider bounds how many stored unknown failures, newest first, one
// ReconsiderStored reads: a rule written today is about today's failures,
// and a reload must not read a year of them.
const MaxReconsider = 5000

// ReconsiderStored re-decides the stored unknown failures (at most
// MaxReconsider, newest first) with the rules of set that use accepts
// (judge.Reconsider; nil: all) and,
// with save, stores the ones a rule now names, in one transaction. It
// returns those attempts (changed in memory either way) and how many were
// read. Errors are the store's.
func ReconsiderStored(ctx context.Context, db StoredAttempts, set *rules.Set, use func(*rules.Rule) bool, save bool) (changed []*domain.Attempt, read int, err error) {
	list, err := db.ListAttempts(ctx, domain.AttemptFilter{Verdict: string(domain.VerdictUnknownFailure), Limit: MaxReconsider})
	if err != nil {
		return nil, 0, fmt.Errorf("reconsider: %w", err)
	}
	for _, a := range list {
		if judge.Reconsider(set, a, use) {
			changed = append(changed, a)
		}
	}
	if save && len(changed) > 0 {
		if err := db.SaveAttempts(ctx, changed, nil); err != nil {
			return nil, len(list), fmt.Errorf("reconsider: %w", err)
		}
	}
	return changed, len(list), nil
}

// NewRules accepts the rules whose id prev (nil: none) does not hold: the
// rules a reload added.
func NewRules(prev *rules.Set) func(*rules.Rule) bool {
	old := map[string]bool{}
	if prev != nil {
		for _, r := range prev.Rules() {
			old[r.ID] = true
		}
	}
	return func(r *rules.Rule) bool { return !old[r.ID] }
}
