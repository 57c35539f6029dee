package pipeline

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/ingest"
	"github.com/llmfleet/analyzer/rules"
	"github.com/llmfleet/analyzer/tracker"
)

// Input is one source of journal entries for Analyze: a file, standard
// input ("-"), or a Loki query.
type Input struct {
	// Name is the path, or what progress and errors call the input.
	Name string
	// Read calls fn with each entry, in order, and returns what it read.
	Read func(ctx context.Context, opt ingest.Options, fn func(domain.Entry) error) (ingest.Stats, error)
	// NoProgress: the input has no size to show progress against.
	NoProgress bool
}

// FileInputs are files ("-": standard input) as inputs, read by
// ingest.ReadFile, in the order given, except that binary journal files
// take the places they hold among the paths in the order of their first
// entries (ingest.JournalFileHead): a rotated journal's files, however a
// shell lists them.
func FileInputs(paths []string) []Input {
	paths = journalsInOrder(paths)
	inputs := make([]Input, len(paths))
	for i, p := range paths {
		inputs[i] = Input{Name: p, Read: func(ctx context.Context, opt ingest.Options, fn func(domain.Entry) error) (ingest.Stats, error) {
			return ingest.ReadFile(ctx, p, opt, fn)
		}}
	}
	return inputs
}

// journalsInOrder returns paths with its binary journal files sorted by
// their first entry's time, in the slots they occupied.
func journalsInOrder(paths []string) []string {
	type journal struct {
		slot int
		head uint64
	}
	var js []journal
	for i, p := range paths {
		if head, ok := ingest.JournalFileHead(p); ok {
			js = append(js, journal{i, head})
		}
	}
	if len(js) < 2 {
		return paths
	}
	sorted := slices.Clone(js)
	slices.SortStableFunc(sorted, func(a, b journal) int { return cmp.Compare(a.head, b.head) })
	out := slices.Clone(paths)
	for k, j := range js {
		out[j.slot] = paths[sorted[k].slot]
	}
	return out
}

// InputResult is what one input contributed to Analyze.
type InputResult struct {
	Name  string
	Stats ingest.Stats
	Last  string // cursor of the last entry read (of a reassembled line: its last piece)
}

// Prior is what a database holds from earlier runs that the next inputs
// build on: attempts their input left open (tracker.Resume) and each host's
// UTC offset (tracker.KnowZone).
type Prior struct {
	Open  []*domain.Attempt
	Zones map[string]*time.Location
}

// BatchOptions configure Analyze. The zero value analyzes without
// progress, keeping no attempt logs.
type BatchOptions struct {
	// KeepLog keeps each attempt's own lines (tracker.Options.KeepLog):
	// set when the attempts are stored.
	KeepLog bool
	// Tracker tunes the tracker's judges (KeepLog above is added to it):
	// rule tests judge with only the rule under test (Only) from the
	// test's engine, phase and shape (Preset).
	Tracker tracker.Options
	// Prior, when set, continues earlier runs.
	Prior *Prior
	// Progress, when set, is called per input with a size (NoProgress
	// inputs excepted) and returns the ingest progress callback and a
	// function called when the input is read; either may be nil.
	Progress func(name string) (update func(bytesRead int64), done func())
	// Warn, when set, receives one message per input with malformed
	// records (and the first errors).
	Warn func(msg string)
	// Rules, when Analyze is given no set, returns it (rules.LoadSource):
	// Analyze calls it once, on the caller's goroutine, when the first
	// input's reader has started or, with no entries, at the end. So
	// compiling the rules and parsing the input share two cores. Its error
	// ends the run and is returned as it is.
	Rules func() (*rules.Set, error)
}

// drainEvery is how many entries are read between two Tracker.Drain calls;
// drainSlack how long (log time) an attempt must have ended before it is
// handed over: records of its end may arrive late in another stream.
const (
	drainEvery = 4096
	drainSlack = 10 * time.Minute
)

// Analyze reads the inputs in order through one tracker (a host's journal
// may be split over several files) and judges their attempts with set (nil:
// opt.Rules' set): the path `analyzer explain`, `replay`, `ladder` and `fit`
// share. Each input is read ahead (ingest.Ahead): parsed on one core while
// the tracker works on another.
//
// Without emit it returns every attempt. With emit, the attempts go to emit
// instead: each as soon as nothing later in the input can change it
// (Tracker.Drain), the rest at the end (Tracker.Each), with their creation
// number; memory then holds the open attempts, not the input's history. An
// error of emit or of an input stops the run and is returned.
func Analyze(ctx context.Context, set *rules.Set, inputs []Input, opt BatchOptions,
	emit func(a *domain.Attempt, seq int) error) ([]*domain.Attempt, []InputResult, error) {
	if set == nil && opt.Rules == nil {
		return nil, nil, errors.New("pipeline: no rule set")
	}
	topt := opt.Tracker
	topt.KeepLog = topt.KeepLog || opt.KeepLog
	var tr *tracker.Tracker
	var loadErr error
	start := func() error { // once, while tr is nil
		if set == nil {
			if set, loadErr = opt.Rules(); loadErr != nil {
				return loadErr
			}
		}
		tr = tracker.New(set, topt)
		if p := opt.Prior; p != nil {
			for host, loc := range p.Zones {
				tr.KnowZone(host, loc)
			}
			for _, a := range p.Open {
				tr.Resume(a)
			}
		}
		return nil
	}
	var results []InputResult
	var newest time.Time // of the entries read
	var emitErr error
	n := 0
	hand := func(a *domain.Attempt, seq int) {
		if emitErr == nil {
			emitErr = emit(a, seq)
		}
	}
	for _, in := range inputs {
		res := InputResult{Name: in.Name}
		iopt := ingest.Options{Fields: tracker.Fields}
		var done func()
		if opt.Progress != nil && !in.NoProgress {
			iopt.Progress, done = opt.Progress(in.Name)
		}
		stats, err := ingest.Ahead(ctx, func(ctx context.Context, fn func(domain.Entry) error) (ingest.Stats, error) {
			return in.Read(ctx, iopt, fn)
		}, func(e domain.Entry) error {
			if tr == nil {
				if err := start(); err != nil {
					return err
				}
			}
			res.Last = e.Cursor
			if end := e.Field(ingest.FieldEndCursor); end != "" {
				res.Last = end // a reassembled line ends at its last piece
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
		if done != nil {
			done()
		}
		if loadErr != nil {
			return nil, nil, loadErr // the rules', not the input's
		}
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", in.Name, err)
		}
		res.Stats = stats
		if stats.Malformed > 0 && opt.Warn != nil {
			msg := fmt.Sprintf("%s: skipped %d malformed records", in.Name, stats.Malformed)
			for _, e := range stats.Errors {
				msg += "\n  " + e
			}
			opt.Warn(msg)
		}
		if stats.Repaired > 0 && opt.Warn != nil {
			opt.Warn(fmt.Sprintf("%s: %d export records had lost the empty line that ends them; kept", in.Name, stats.Repaired))
		}
		results = append(results, res)
	}
	if tr == nil { // no entries
		if err := start(); err != nil {
			return nil, nil, err
		}
	}
	tr.Finish()
	if emit == nil {
		return tr.Attempts(), results, nil
	}
	tr.Each(hand)
	return nil, results, emitErr
}
