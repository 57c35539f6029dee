package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/report"
)

func cmdExplain(ctx context.Context, args []string) error {
	fs := newFlags("explain")
	format := fs.String("format", "text", "output format: text or json")
	fs.StringVar(format, "o", "text", "short for --format")
	rulesDir := fs.String("rules", "", "rule directory (default: the built-in rules)")
	failed := fs.Bool("failed", false, "only failed attempts")
	unit := fs.String("unit", "", "only attempts of this unit (or container)")
	verdict := fs.String("verdict", "", "only attempts with this verdict (comma-separated: any of them)")
	since := fs.String("since", "", "only attempts started at or after this time (RFC 3339, 2026-01-01[ 10:00], yesterday, -1h)")
	until := fs.String("until", "", "only attempts started before this time (same forms as --since)")
	if err := parseFlags(fs, args); err != nil {
		return usageError{err.Error()}
	}
	keep, err := attemptFilter(*failed, *unit, *verdict, *since, *until)
	if err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return usageError{"explain needs at least one FILE"}
	}
	if *format != "text" && *format != "json" {
		return usageError{fmt.Sprintf("--format %q: want text or json", *format)}
	}
	set, err := loadRules(*rulesDir)
	if err != nil {
		return err
	}
	// Attempts are rendered as they end and written in start order at the
	// end: memory holds the open attempts, not the input's history.
	spool, err := report.NewSpool(*format, "")
	if err != nil {
		return err
	}
	defer spool.Close()
	add := func(a *domain.Attempt, seq int) error {
		if !keep(a) {
			return nil
		}
		return spool.Add(a, seq)
	}
	if _, _, err := analyzeFiles(ctx, fs.Args(), set, false, nil, add); err != nil {
		return err
	}
	return spool.WriteSorted(stdout)
}

// attemptFilter is explain's --failed, --unit, --verdict, --since and
// --until as one test; a bad value is a usage error naming what is allowed.
func attemptFilter(failed bool, unit, verdicts, since, until string) (func(*domain.Attempt) bool, error) {
	want := map[domain.Verdict]bool{}
	if verdicts != "" {
		for _, v := range strings.Split(verdicts, ",") {
			v = strings.TrimSpace(v)
			if !slices.Contains(domain.Verdicts, domain.Verdict(v)) {
				var all []string
				for _, k := range domain.Verdicts {
					all = append(all, string(k))
				}
				return nil, usageError{fmt.Sprintf("--verdict %q: want one of %s", v, strings.Join(all, ", "))}
			}
			want[domain.Verdict(v)] = true
		}
	}
	var from, to time.Time
	var err error
	if since != "" {
		if from, err = parseWhen(since, time.Now(), time.Local); err != nil {
			return nil, usageError{"--since " + err.Error()}
		}
	}
	if until != "" {
		if to, err = parseWhen(until, time.Now(), time.Local); err != nil {
			return nil, usageError{"--until " + err.Error()}
		}
	}
	return func(a *domain.Attempt) bool {
		switch {
		case failed && !a.Verdict.IsFailure(),
			unit != "" && a.Unit != unit && a.Container != unit,
			len(want) > 0 && !want[a.Verdict],
			!from.IsZero() && (a.StartedAt.IsZero() || a.StartedAt.Before(from)),
			!to.IsZero() && (a.StartedAt.IsZero() || !a.StartedAt.Before(to)):
			return false
		}
		return true
	}, nil
}
