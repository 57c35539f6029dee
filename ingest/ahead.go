package ingest

import (
	"context"
	"runtime"

	"github.com/llmfleet/analyzer/domain"
)

// aheadBatch is how many entries ReadAhead hands over at once, and
// aheadDepth how many batches may wait: enough to keep both sides busy,
// little enough to bound memory (a few MiB). Until fn has taken
// aheadStartDepth batches, more may wait, when a second core can read
// them: the caller's first fn call may first wait for something else (the
// rule set to compile, pipeline.Analyze), and the reader goes on meanwhile.
const (
	aheadBatch      = 512
	aheadDepth      = 4
	aheadStartDepth = 16
)

// ReadAhead is ReadFile with the reading (decompression, JSON or export
// parsing, reassembly, entry building) on a goroutine of its own, so that it
// runs on one core while fn (the tracker, the judge, the store) runs on
// another. fn sees the same entries in the same order as with ReadFile, on
// the caller's goroutine. An error from fn stops the reading and is
// returned; otherwise ReadFile's.
func ReadAhead(ctx context.Context, path string, opt Options, fn func(domain.Entry) error) (Stats, error) {
	return Ahead(ctx, func(ctx context.Context, emit func(domain.Entry) error) (Stats, error) {
		return ReadFile(ctx, path, opt, emit)
	}, fn)
}

// Ahead runs read (a reader such as ReadFile, calling emit per entry) on a
// goroutine of its own and hands its entries to fn in order on the
// caller's, as ReadAhead does for a file.
func Ahead(ctx context.Context, read func(ctx context.Context, emit func(domain.Entry) error) (Stats, error), fn func(domain.Entry) error) (Stats, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The reader sends a batch for a token; fn's side gives a token back
	// per batch taken, less those that bring the tokens down from the
	// start depth to aheadDepth.
	tokens := aheadDepth
	if runtime.GOMAXPROCS(0) > 1 {
		tokens = aheadStartDepth
	}
	credit := make(chan struct{}, tokens)
	for range tokens {
		credit <- struct{}{}
	}
	full := make(chan []domain.Entry, tokens)
	free := make(chan []domain.Entry, aheadDepth+2)
	var (
		stats Stats
		rerr  error
	)
	go func() {
		defer close(full)
		batch := make([]domain.Entry, 0, aheadBatch)
		send := func() error {
			select {
			case <-credit:
			case <-ctx.Done():
				return ctx.Err()
			}
			full <- batch // never blocks: a token per place
			select {
			case batch = <-free:
			default:
				batch = make([]domain.Entry, 0, aheadBatch)
			}
			return nil
		}
		stats, rerr = read(ctx, func(e domain.Entry) error {
			if batch = append(batch, e); len(batch) == aheadBatch {
				return send()
			}
			return nil
		})
		if rerr == nil && len(batch) > 0 {
			rerr = send()
		}
	}()
	var ferr error
	for batch := range full {
		for i := range batch {
			if ferr == nil {
				if ferr = fn(batch[i]); ferr != nil {
					cancel() // the reader stops; the loop drains what it sent
				}
			}
		}
		clear(batch)
		if tokens > aheadDepth {
			tokens--
		} else {
			credit <- struct{}{} // never blocks: the token this batch took
		}
		select {
		case free <- batch[:0]:
		default:
		}
	}
	if ferr != nil {
		return stats, ferr
	}
	return stats, rerr
}
