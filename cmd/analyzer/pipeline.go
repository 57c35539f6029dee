package main

import (
	"context"
	"fmt"
	"os"
	"runtime/debug"
	"time"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/ingest"
	"github.com/llmfleet/analyzer/rules"
	"github.com/llmfleet/analyzer/tracker"
)

func loadRules(dir string) (*rules.Set, error) {
	if dir == "" {
		return rules.LoadBuiltin()
	}
	return rules.LoadDir(dir)
}

// batchGC bounds a file replay's heap with a soft limit instead of a GC
// percentage, unless GOGC or GOMEMLIMIT is set: the heap may grow to 5x
// the live data (GOGC=400; a replay keeps little alive but allocates per
// line, and collecting less often is faster) but never past 48 MiB, so
// memory does not follow the size of the input.
func batchGC() {
	if os.Getenv("GOGC") == "" && os.Getenv("GOMEMLIMIT") == "" {
		debug.SetGCPercent(400)
		debug.SetMemoryLimit(48 << 20)
	}
}

// drainEvery is how many entries are read between two Tracker.Drain calls;
// drainSlack how long (log time) an attempt must have ended before it is
// handed over: records of its end may arrive late in another stream.
const (
	drainEvery = 4096
	drainSlack = 10 * time.Minute
)

// fileResult is what one input file contributed.
type fileResult struct {
	path  string
	stats ingest.Stats
	last  string // last cursor read
}

// analyze reads every file through one tracker (a host's journal may be
// split over several files) and returns the judged attempts.
func analyze(ctx context.Context, paths []string, set *rules.Set, progress bool) ([]*domain.Attempt, error) {
	attempts, _, err := analyzeFiles(ctx, paths, set, progress, nil, nil)
	return attempts, err
}

// earlierRuns is what a database holds from earlier replays that the next
// files build on: attempts their input left open (tracker.Resume) and each
// host's UTC offset (tracker.KnowZone).
type earlierRuns struct {
	open  []*domain.Attempt
	zones map[string]*time.Location
}

// analyzeFiles is analyze that also reports what each file contributed,
// continuing from earlier runs when prior is not nil. With emit set, the
// attempts go to emit instead of the result: each as soon as nothing later
// in the input can change it (Tracker.Drain), the rest at the end, with
// their creation number (Tracker.Each): memory then holds only the
// attempts still open, not the input's history.
func analyzeFiles(ctx context.Context, paths []string, set *rules.Set, progress bool, prior *earlierRuns,
	emit func(a *domain.Attempt, seq int) error) ([]*domain.Attempt, []fileResult, error) {
	return analyzeInputs(ctx, fileInputs(paths), set, progress, prior, emit)
}

// fileInputs are files ("-" standard input) as inputs.
func fileInputs(paths []string) []input {
	inputs := make([]input, len(paths))
	for i, p := range paths {
		inputs[i] = input{name: p, read: func(ctx context.Context, opt ingest.Options, fn func(domain.Entry) error) (ingest.Stats, error) {
			return ingest.ReadFile(ctx, p, opt, fn)
		}}
	}
	return inputs
}

// input is one source of journal entries: a file, or a Loki query.
type input struct {
	name string // the path, or what the progress bar and errors call it
	// read calls fn with each entry, in order, and returns what it read.
	read func(ctx context.Context, opt ingest.Options, fn func(domain.Entry) error) (ingest.Stats, error)
	// noProgress: the input has no size to show progress against.
	noProgress bool
}

// analyzeInputs is analyzeFiles for any inputs.
func analyzeInputs(ctx context.Context, inputs []input, set *rules.Set, progress bool, prior *earlierRuns,
	emit func(a *domain.Attempt, seq int) error) ([]*domain.Attempt, []fileResult, error) {
	batchGC()
	// Compiling the rules leaves ~20 MiB of garbage: give it back before
	// the input is read.
	debug.FreeOSMemory()
	// replay, the caller that passes prior, stores the attempts: it keeps
	// their own lines for the log viewer; explain and ladder need none.
	tr := tracker.New(set, tracker.Options{KeepLog: prior != nil})
	if prior != nil {
		for host, loc := range prior.zones {
			tr.KnowZone(host, loc)
		}
		for _, a := range prior.open {
			tr.Resume(a)
		}
	}
	var results []fileResult
	var newest time.Time // of the entries read
	var emitErr error
	n := 0
	hand := func(a *domain.Attempt, seq int) {
		if emitErr == nil {
			emitErr = emit(a, seq)
		}
	}
	for _, in := range inputs {
		p := in.name
		res := fileResult{path: p}
		opt := ingest.Options{Fields: tracker.Fields}
		var bar *progressBar
		if progress && !in.noProgress {
			bar = newProgressBar(p)
			if bar != nil {
				opt.Progress = bar.set
			}
		}
		// Read ahead: the input is parsed on one core while the tracker
		// and the store work on another.
		stats, err := ingest.Ahead(ctx, func(ctx context.Context, fn func(domain.Entry) error) (ingest.Stats, error) {
			return in.read(ctx, opt, fn)
		}, func(e domain.Entry) error {
			res.last = e.Cursor
			if end := e.Field(ingest.FieldEndCursor); end != "" {
				res.last = end // a reassembled line ends at its last piece
			}
			tr.Add(e)
			if e.Time.After(newest) {
				newest = e.Time
			}
			if n++; emit != nil && n%drainEvery == 0 {
				tr.Drain(newest.Add(-drainSlack), hand)
				return emitErr
			}
			return nil
		})
		bar.finish()
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", p, err)
		}
		res.stats = stats
		if stats.Malformed > 0 {
			fmt.Fprintf(os.Stderr, "analyzer: %s: skipped %d malformed records\n", p, stats.Malformed)
			for _, e := range stats.Errors {
				fmt.Fprintf(os.Stderr, "  %s\n", e)
			}
		}
		results = append(results, res)
	}
	tr.Finish()
	if emit == nil {
		return tr.Attempts(), results, nil
	}
	tr.Each(hand)
	return nil, results, emitErr
}
