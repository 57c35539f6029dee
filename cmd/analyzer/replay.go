package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/llmfleet/analyzer/metrics"
	"github.com/llmfleet/analyzer/store"
)

const defaultDB = "analyzer.db"

func cmdReplay(ctx context.Context, args []string) error {
	fs := newFlags("replay")
	dbPath := fs.String("db", defaultDB, "SQLite database file")
	rulesDir := fs.String("rules", "", "rule directory (default: the built-in rules)")
	lokiF := addLokiFlags(fs)
	writeNotes := fs.Bool("notes", false, "write the root-cause notes of the replayed attempts into the local journal (once each)")
	if err := fs.Parse(args); err != nil {
		return usageError{err.Error()}
	}
	if fs.NArg() == 0 {
		return usageError{"replay needs at least one FILE"}
	}
	if _, err := lokiF.pusher(nil); err != nil {
		return err // a bad --loki-* flag, before replaying anything
	}
	set, err := loadRules(*rulesDir)
	if err != nil {
		return err
	}
	if err := checkInputs(fs.Args()); err != nil {
		return err // before the database is created
	}
	db, err := store.Open(*dbPath)
	if err != nil {
		return err
	}
	defer db.Close()
	// Attempts a previous replay left open (its file ended mid-boot) go on
	// in these files, with what the earlier part established; hosts keep
	// the UTC offset learned from earlier files.
	var prior earlierRuns
	if prior.open, err = db.OpenAttempts(ctx); err != nil {
		return err
	}
	if prior.zones, err = db.HostZones(ctx); err != nil {
		return err
	}
	attempts, files, err := analyzeFiles(ctx, fs.Args(), set, true, &prior)
	if err != nil {
		return err
	}
	attempts, tails, err := db.DropPartial(ctx, attempts)
	if err != nil {
		return err
	}
	// One transaction: the attempts and the position of the last file read.
	var pos *store.Position
	if n := len(files); n > 0 && files[n-1].path != "-" {
		last := files[n-1]
		src, _ := filepath.Abs(last.path)
		pos = &store.Position{Source: src, Cursor: last.last, Offset: last.stats.Bytes}
	}
	if err := db.SaveAttempts(ctx, attempts, pos); err != nil {
		return err
	}
	var entries, malformed int64
	for _, f := range files {
		entries += f.stats.Entries
		malformed += f.stats.Malformed
	}
	failed := 0
	for _, a := range attempts {
		if a.Verdict.IsFailure() {
			failed++
		}
	}
	fmt.Fprintf(stdout, "replayed %d entries from %d files (%d malformed skipped): %d attempts, %d failed, into %s\n",
		entries, len(files), malformed, len(attempts), failed, *dbPath)
	if tails > 0 {
		fmt.Fprintf(stdout, "kept %d stored attempts of which these files hold only the end\n", tails)
	}
	if *writeNotes {
		w, err := notesWriter(db, metrics.New(metrics.Options{NoProcessMetrics: true}))
		if err != nil {
			return err
		}
		n := 0
		for _, a := range attempts {
			for _, f := range a.Findings {
				if w.Offer(a, f) {
					n++
				}
			}
		}
		fmt.Fprintf(stdout, "wrote %d root-cause notes into the journal\n", n)
	}
	return pushFindings(ctx, attempts, lokiF)
}

// checkInputs fails for a FILE argument that cannot be read as a log (a
// directory, a missing file), so that nothing is created for it.
func checkInputs(paths []string) error {
	for _, p := range paths {
		if p == "-" {
			continue
		}
		st, err := os.Stat(p)
		if err != nil {
			return err
		}
		if st.IsDir() {
			return fmt.Errorf("%s is a directory; give the log files in it (e.g. %s/*.json)", p, filepath.Clean(p))
		}
	}
	return nil
}
