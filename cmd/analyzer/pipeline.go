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

// batchGC lets the heap grow to 5x the live data (GOGC=400) unless GOGC is
// set: a file replay keeps little alive (the attempts and their evidence)
// but allocates per line, and collecting 4x less often made replay ~12 %
// faster on one core for ~20 MiB more memory (make bench's journal).
func batchGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
}

// fileResult is what one input file contributed.
type fileResult struct {
	path  string
	stats ingest.Stats
	last  string // last cursor read
}

// analyze reads every file through one tracker (a host's journal may be
// split over several files) and returns the judged attempts.
func analyze(ctx context.Context, paths []string, set *rules.Set, progress bool) ([]*domain.Attempt, error) {
	attempts, _, err := analyzeFiles(ctx, paths, set, progress, nil)
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
// continuing from earlier runs when prior is not nil.
func analyzeFiles(ctx context.Context, paths []string, set *rules.Set, progress bool, prior *earlierRuns) ([]*domain.Attempt, []fileResult, error) {
	batchGC()
	tr := tracker.New(set, tracker.Options{})
	if prior != nil {
		for host, loc := range prior.zones {
			tr.KnowZone(host, loc)
		}
		for _, a := range prior.open {
			tr.Resume(a)
		}
	}
	var results []fileResult
	for _, p := range paths {
		res := fileResult{path: p}
		opt := ingest.Options{Fields: tracker.Fields}
		var bar *progressBar
		if progress {
			bar = newProgressBar(p)
			if bar != nil {
				opt.Progress = bar.set
			}
		}
		stats, err := ingest.ReadFile(ctx, p, opt, func(e domain.Entry) error {
			res.last = e.Cursor
			if end := e.Field(ingest.FieldEndCursor); end != "" {
				res.last = end // a reassembled line ends at its last piece
			}
			tr.Add(e)
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
	return tr.Attempts(), results, nil
}
