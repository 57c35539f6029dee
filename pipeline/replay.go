package pipeline

import (
	"context"
	"path/filepath"
	"time"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/rules"
)

// ReplayStore is what Replay needs of the database (*store.DB has it).
type ReplayStore interface {
	OpenAttempts(ctx context.Context) ([]*domain.Attempt, error)
	HostZones(ctx context.Context) (map[string]*time.Location, error)
	DropPartial(ctx context.Context, attempts []*domain.Attempt) (kept []*domain.Attempt, dropped int, err error)
	SaveAttempts(ctx context.Context, attempts []*domain.Attempt, pos *domain.Position) error
}

// ReplayOptions configure Replay.
type ReplayOptions struct {
	// Progress and Warn are BatchOptions'.
	Progress func(name string) (update func(bytesRead int64), done func())
	Warn     func(msg string)
	// Sinks are offered the findings of every saved attempt (root-cause
	// notes, a Loki pusher); a true Offer counts as sent.
	Sinks []FindingSink
	// NoPosition: the inputs are no files a later follower could go on
	// from (a Loki query); no position is saved.
	NoPosition bool
}

// ReplayTally is what a replay did.
type ReplayTally struct {
	Inputs []InputResult
	// Attempts and Failed count the attempts saved; Tails the stored
	// attempts kept because the inputs held only their end.
	Attempts, Failed, Tails int
	// Offered counts the findings each sink took, by the sinks' order.
	Offered []int
}

// saveBatch is how many ended attempts a replay saves per transaction;
// saveEvery how long ended attempts wait at most (a slow pipe).
const (
	saveBatch = 256
	saveEvery = 2 * time.Second
)

// Replay analyzes the inputs (Analyze) on top of what db holds from earlier
// replays (attempts left open, hosts' offsets) and saves the attempts as
// they end, in transactions of saveBatch, the rest and the position of the
// last file read in the last one: memory holds the open attempts, not the
// input's history. A crash in between leaves attempts saved whole; a rerun
// saves them again unchanged.
func Replay(ctx context.Context, db ReplayStore, set *rules.Set, inputs []Input, opt ReplayOptions) (ReplayTally, error) {
	tally := ReplayTally{Offered: make([]int, len(opt.Sinks))}
	var prior Prior
	var err error
	if prior.Open, err = db.OpenAttempts(ctx); err != nil {
		return tally, err
	}
	if prior.Zones, err = db.HostZones(ctx); err != nil {
		return tally, err
	}
	var batch []*domain.Attempt
	saved := time.Now()
	save := func(pos *domain.Position) error {
		kept, tails, err := db.DropPartial(ctx, batch)
		if err != nil {
			return err
		}
		if err := db.SaveAttempts(ctx, kept, pos); err != nil {
			return err
		}
		tally.Tails += tails
		for _, a := range kept {
			tally.Attempts++
			if a.Verdict.IsFailure() {
				tally.Failed++
			}
			for _, f := range a.Findings {
				for i, s := range opt.Sinks {
					if s.Offer(a, f) {
						tally.Offered[i]++
					}
				}
			}
		}
		batch = batch[:0]
		return nil
	}
	bopt := BatchOptions{KeepLog: true, Prior: &prior, Progress: opt.Progress, Warn: opt.Warn}
	_, results, err := Analyze(ctx, set, inputs, bopt, func(a *domain.Attempt, _ int) error {
		if batch = append(batch, a); len(batch) >= saveBatch || time.Since(saved) >= saveEvery {
			saved = time.Now()
			return save(nil)
		}
		return nil
	})
	tally.Inputs = results
	if err != nil {
		return tally, err
	}
	var pos *domain.Position
	if n := len(results); n > 0 && results[n-1].Name != "-" && !opt.NoPosition {
		last := results[n-1]
		src, _ := filepath.Abs(last.Name)
		pos = &domain.Position{Source: src, Cursor: last.Last, Offset: last.Stats.Bytes}
	}
	return tally, save(pos)
}
