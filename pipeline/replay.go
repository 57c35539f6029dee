package pipeline

import (
	"context"
	"errors"
	"path/filepath"
	"runtime"
	"sync/atomic"
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
	// Checkpoint moves saved pages from the write-ahead log into the
	// database file, concurrently with a save.
	Checkpoint(ctx context.Context) error
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
	// Rules is BatchOptions': the rule set, when Replay is given none.
	Rules func() (*rules.Set, error)
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

// A replay saves ended attempts in transactions of at most saveBatchSize
// attempts or saveBatchLines of their lines (what they hold in memory
// until saved: their kept log, evidence and context), and lets them wait
// at most saveEvery (a slow pipe).
const (
	saveBatchSize  = 256
	saveBatchLines = 8192
	saveEvery      = 2 * time.Second
)

// Replay analyzes the inputs (Analyze) on top of what db holds from earlier
// replays (attempts left open, hosts' offsets) and saves the attempts as
// they end, in bounded transactions (saveBatchSize, saveBatchLines) on a
// goroutine of its own, the rest and the position of the last file read
// in the last one: memory holds the open attempts and one batch being
// filled, one queued and one being saved, not the input's history. A crash in between leaves attempts saved whole; a rerun
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
	// One goroutine saves while the tracker goes on: on a journal of short
	// boots the store is a third of the work.
	type job struct {
		batch []*domain.Attempt
		pos   *domain.Position
	}
	jobs := make(chan job, 1)
	saverDone := make(chan error, 1)
	committed := make(chan struct{}, 1) // a batch was saved since the last look
	var failed atomic.Bool
	go func() {
		var err error
		for j := range jobs {
			if err == nil {
				if err = saveBatch(ctx, db, j.batch, j.pos, opt.Sinks, &tally); err != nil {
					failed.Store(true)
				}
				select {
				case committed <- struct{}{}:
				default:
				}
			}
		}
		saverDone <- err
	}()
	var batch []*domain.Attempt
	lines := 0
	saved := time.Now()
	bopt := BatchOptions{KeepLog: true, Prior: &prior, Progress: opt.Progress, Warn: opt.Warn, Rules: opt.Rules}
	_, results, err := Analyze(ctx, set, inputs, bopt, func(a *domain.Attempt, _ int) error {
		if failed.Load() {
			return errSaveFailed
		}
		batch = append(batch, a)
		lines += heldLines(a)
		if len(batch) >= saveBatchSize || lines >= saveBatchLines || time.Since(saved) >= saveEvery {
			saved = time.Now()
			jobs <- job{batch: batch}
			batch, lines = nil, 0
		}
		return nil
	})
	tally.Inputs = results
	var pos *domain.Position
	if n := len(results); err == nil && n > 0 && results[n-1].Name != "-" && !opt.NoPosition {
		last := results[n-1]
		src, _ := filepath.Abs(last.Name)
		pos = &domain.Position{Source: src, Cursor: last.Last, Offset: last.Stats.Bytes}
	}
	if err == nil {
		jobs <- job{batch: batch, pos: pos}
	}
	close(jobs)
	var serr error
	if err == nil && runtime.GOMAXPROCS(0) > 1 {
		serr = checkpointUntil(ctx, db, committed, saverDone)
	} else {
		serr = <-saverDone
	}
	if err != nil && !(errors.Is(err, errSaveFailed) && serr != nil) {
		return tally, err
	}
	return tally, serr
}

// checkpointUntil moves the pages the saver has stored into the database
// file (ReplayStore.Checkpoint) while it saves the last batches, once and
// again after each batch it commits, and returns the saver's result: the
// input is read and judged by then, so this runs on the core the reader
// and the tracker have left, and closing the database copies only the
// last batch's pages instead of every page since the last automatic
// checkpoint (a 43.5k-line night ladder: 18 ms on one core at the end of
// the run, all of its 5 MB database).
//
// With one core (GOMAXPROCS 1: a one-CPU container, taskset) there is no
// core left for it: each checkpoint is then work and fsyncs before the
// saver's next batch, and Replay leaves the copying to Close, once. One
// core, interleaved rounds against checkpointing: a one-entry replay 15-17 %
// faster, the 43.5k-line serving and night journals 5 % and 1 %, the 1M
// night journal 4 %.
func checkpointUntil(ctx context.Context, db ReplayStore, committed <-chan struct{}, saverDone <-chan error) error {
	for {
		_ = db.Checkpoint(ctx) // Close checkpoints what this leaves
		select {
		case err := <-saverDone:
			return err
		case <-committed:
		}
	}
}

// errSaveFailed stops the analysis when the saver has failed; Replay
// returns the saver's error instead.
var errSaveFailed = errors.New("pipeline: saving failed")

// saveBatch stores batch (the attempts the inputs hold only the end of
// dropped, see DropPartial) with pos, counts them in t and offers their
// findings to the sinks.
func saveBatch(ctx context.Context, db ReplayStore, batch []*domain.Attempt, pos *domain.Position, sinks []FindingSink, t *ReplayTally) error {
	kept, tails, err := db.DropPartial(ctx, batch)
	if err != nil {
		return err
	}
	if err := db.SaveAttempts(ctx, kept, pos); err != nil {
		return err
	}
	t.Tails += tails
	for _, a := range kept {
		t.Attempts++
		if a.Verdict.IsFailure() {
			t.Failed++
		}
		for _, f := range a.Findings {
			for i, s := range sinks {
				if s.Offer(a, f) {
					t.Offered[i]++
				}
			}
		}
	}
	return nil
}

// heldLines is how many lines an ended attempt holds until it is saved.
func heldLines(a *domain.Attempt) int {
	n := len(a.Evidence) + len(a.Context) + len(a.Timeline)
	if a.Log != nil {
		n += len(a.Log.Lines)
	}
	return n
}
