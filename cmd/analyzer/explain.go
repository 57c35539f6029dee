package main

import (
	"context"
	"fmt"

	"github.com/llmfleet/analyzer/report"
)

func cmdExplain(ctx context.Context, args []string) error {
	fs := newFlags("explain")
	format := fs.String("format", "text", "output format: text or json")
	fs.StringVar(format, "o", "text", "short for --format")
	rulesDir := fs.String("rules", "", "rule directory (default: the built-in rules)")
	if err := parseFlags(fs, args); err != nil {
		return usageError{err.Error()}
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
	if _, _, err := analyzeFiles(ctx, fs.Args(), set, false, nil, spool.Add); err != nil {
		return err
	}
	return spool.WriteSorted(stdout)
}
