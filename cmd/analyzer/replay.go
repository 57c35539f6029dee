package main

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/llmfleet/analyzer/loki"
	"github.com/llmfleet/analyzer/metrics"
	"github.com/llmfleet/analyzer/pipeline"
	"github.com/llmfleet/analyzer/store"
)

const defaultDB = "analyzer.db"

// replayOpts are replay's flags.
type replayOpts struct {
	db, rules string
	loki      *lokiFlags
	notes     bool
	from      *fromLokiFlags
}

func newReplayCmd() *cobra.Command {
	o := &replayOpts{}
	c := &cobra.Command{
		Use:   "replay [flags] FILE...",
		Short: "record the boot attempts of journal or log files, or of a Loki's past logs, into SQLite",
		Args: func(c *cobra.Command, args []string) error {
			if o.from.url != "" {
				if len(args) > 0 {
					return usageError{msg: "give FILEs or --from-loki, not both", cmd: c.CommandPath()}
				}
				return nil
			}
			return needFiles(c, args)
		},
		ValidArgsFunction: completeFiles,
		RunE: func(c *cobra.Command, args []string) error {
			return runReplay(c.Context(), o, c.Flags(), args)
		},
	}
	fs := c.Flags()
	fs.StringVar(&o.db, "db", defaultDB, "SQLite database file")
	fs.StringVar(&o.rules, "rules", "", "rule directory (default: the built-in rules)")
	o.loki = addLokiFlags(fs)
	fs.BoolVar(&o.notes, "notes", false, "write the root-cause notes of the replayed attempts into the local journal (once each)")
	o.from = addFromLokiFlags(fs)
	return c
}

// runReplay is `analyzer replay`; fs tells which flags were given.
func runReplay(ctx context.Context, o *replayOpts, fs *pflag.FlagSet, paths []string) error {
	o.loki.warnUnused(fs)
	var inputs []pipeline.Input
	var qs loki.QueryStats
	if o.from.url != "" {
		cfg, err := o.from.config(time.Now())
		if err != nil {
			return err
		}
		inputs = []pipeline.Input{lokiInput(cfg, &qs)}
	} else {
		noEffect(fs, "no --from-loki is set", fromLokiOnly...)
	}
	push, err := startFindingPush(o.loki) // a bad --loki-* flag fails before anything is replayed
	if err != nil {
		return err
	}
	// The rules compile while the database opens and the first input is
	// read (pipeline.ReplayOptions.Rules).
	load := loadRules(o.rules)
	if err := checkInputs(paths); err != nil {
		return err // before the database is created
	}
	if inputs == nil {
		inputs = pipeline.FileInputs(paths)
	}
	announceDB(fs, o.db)
	_, statErr := os.Stat(o.db)
	db, err := store.Open(o.db)
	if err != nil {
		return err
	}
	defer func() {
		db.Close()
		// A rule file that does not load leaves no database behind that
		// the run made.
		if _, err := load(); err != nil && errors.Is(statErr, iofs.ErrNotExist) {
			for _, f := range []string{o.db, o.db + "-wal", o.db + "-shm"} {
				os.Remove(f)
			}
		}
	}()
	ropt := pipeline.ReplayOptions{Progress: progressFor("replay"), Warn: warn, NoPosition: o.from.url != "", Rules: load}
	if o.notes {
		w, err := notesWriter(db, metrics.New(metrics.Options{NoProcessMetrics: true}))
		if err != nil {
			return err
		}
		ropt.Sinks = append(ropt.Sinks, w)
	}
	if push != nil {
		ropt.Sinks = append(ropt.Sinks, push)
	}
	tally, err := pipeline.Replay(ctx, db, nil, inputs, ropt)
	if err != nil {
		return err
	}
	files := tally.Inputs
	var entries, malformed int64
	for _, f := range files {
		entries += f.Stats.Entries
		malformed += f.Stats.Malformed
	}
	if o.from.url != "" {
		fmt.Fprintf(stdout, "replayed %d entries from %s in %d pages (%d malformed skipped, %d read twice at page boundaries dropped): %d attempts, %d failed, into %s\n",
			entries, o.from.url, qs.Pages, malformed, qs.Repeated, tally.Attempts, tally.Failed, o.db)
		if qs.Lost > 0 {
			slog.Warn("more entries shared a timestamp than --from-loki-limit: entries past the limit there are missing (raise --from-loki-limit)",
				"timestamps", qs.Lost, "limit", o.from.limit)
		}
	} else {
		fmt.Fprintf(stdout, "replayed %d entries from %d files (%d malformed skipped): %d attempts, %d failed, into %s\n",
			entries, len(files), malformed, tally.Attempts, tally.Failed, o.db)
	}
	if tally.Tails > 0 {
		fmt.Fprintf(stdout, "kept %d stored attempts of which these files hold only the end\n", tally.Tails)
	}
	if o.notes {
		fmt.Fprintf(stdout, "wrote %d root-cause notes into the journal\n", tally.Offered[0])
	}
	return push.close(ctx)
}

// checkInputs fails for a FILE argument that cannot be read as a log (a
// directory, a missing file), so that nothing is created for it. It is a
// usage error (exit status 2), as grep's for a file it cannot open.
func checkInputs(paths []string) error {
	for _, p := range paths {
		if p == "-" {
			continue
		}
		st, err := os.Stat(p)
		if err != nil {
			return usageError{msg: err.Error()}
		}
		if st.IsDir() {
			return usageError{msg: fmt.Sprintf("%s is a directory; give the log files in it (e.g. %s/*.json)", p, filepath.Clean(p))}
		}
	}
	return nil
}
