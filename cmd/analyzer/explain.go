package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/internal/when"
	"github.com/llmfleet/analyzer/report"
)

// explainOpts are explain's flags.
type explainOpts struct {
	format, rules, unit, since, until, color string
	verdicts                                 []string
	failed, exitStatus                       bool
}

func newExplainCmd() *cobra.Command {
	o := &explainOpts{}
	c := &cobra.Command{
		Use:   "explain [flags] FILE...",
		Short: "print the boot attempts of journal or log files and their root causes",
		Long: `explain prints the boot attempts of journal or log files: a table, one
paragraph per failed attempt (its id is the one the web UI and API take:
/attempts/ID) and a one-line summary.`,
		Args:              needFiles,
		ValidArgsFunction: completeFiles,
		RunE: func(c *cobra.Command, args []string) error {
			return runExplain(c.Context(), o, c.Flags(), args)
		},
	}
	fs := c.Flags()
	fs.StringVarP(&o.format, "format", "o", "text", "output format: text or json")
	fs.StringVar(&o.rules, "rules", "", "rule directory (default: the built-in rules)")
	fs.BoolVar(&o.failed, "failed", false, "only failed attempts")
	fs.StringVar(&o.unit, "unit", "", "only attempts of this unit (or container)")
	fs.StringSliceVar(&o.verdicts, "verdict", nil, "only attempts with this verdict (comma-separated or repeated: any of them)")
	fs.StringVar(&o.since, "since", "", "only attempts started at or after this time (RFC 3339, 2026-01-01[ 10:00], yesterday, -1h)")
	fs.StringVar(&o.until, "until", "", "only attempts started before this time (same forms as --since)")
	fs.BoolVar(&o.exitStatus, "exit-status", false, "exit with status 1 when any attempt shown failed (as grep does on a match)")
	fs.StringVar(&o.color, "color", "auto", "colour the verdicts: auto (on a terminal, unless $NO_COLOR is set), always or never")
	completeValues(c, "format", "text", "json")
	completeValues(c, "color", colorModes...)
	var verdicts []string
	for _, v := range domain.Verdicts {
		verdicts = append(verdicts, string(v))
	}
	completeValues(c, "verdict", verdicts...)
	return c
}

// runExplain is `analyzer explain`.
func runExplain(ctx context.Context, o *explainOpts, fs *pflag.FlagSet, files []string) error {
	keep, err := attemptFilter(o.failed, o.unit, strings.Join(o.verdicts, ","), o.since, o.until)
	if err != nil {
		return err
	}
	if o.format != "text" && o.format != "json" {
		return usageError{msg: fmt.Sprintf("--format %q: want text or json", o.format)}
	}
	if err := checkInputs(files); err != nil {
		return err
	}
	style, err := outputStyle(o.color)
	if err != nil {
		return err
	}
	if o.format == "json" {
		noEffect(fs, "-o json is never coloured", "color")
	}
	load := loadRules(o.rules)
	// Attempts are rendered as they end and written in start order at the
	// end: memory holds the open attempts, not the input's history.
	spool, err := report.NewSpool(o.format, "")
	if err != nil {
		return err
	}
	defer spool.Close()
	spool.Style = style
	shown, failed := 0, 0
	add := func(a *domain.Attempt, seq int) error {
		if !keep(a) {
			return nil
		}
		shown++
		if a.Verdict.IsFailure() {
			failed++
		}
		return spool.Add(a, seq)
	}
	if _, err := analyzeFiles(ctx, "explain", load, files, add); err != nil {
		return err
	}
	if err := spool.WriteSorted(stdout); err != nil {
		return err
	}
	if o.exitStatus && failed > 0 {
		return errFailureFound{failed: failed, total: shown}
	}
	return nil
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
				return nil, usageError{msg: fmt.Sprintf("--verdict %q: want one of %s", v, strings.Join(all, ", "))}
			}
			want[domain.Verdict(v)] = true
		}
	}
	var from, to time.Time
	var err error
	cli := when.Parser{Loc: time.Local, Now: time.Now}
	if since != "" {
		if from, err = cli.Parse(since); err != nil {
			return nil, usageError{msg: "--since " + err.Error()}
		}
	}
	if until != "" {
		if to, err = cli.Parse(until); err != nil {
			return nil, usageError{msg: "--until " + err.Error()}
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
