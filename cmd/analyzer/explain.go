package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/report"
)

func cmdExplain(ctx context.Context, args []string) error {
	fs := newFlags("explain")
	format := fs.String("format", "text", "output format: text or json")
	rulesDir := fs.String("rules", "", "rule directory (default: the built-in rules)")
	if err := fs.Parse(args); err != nil {
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
	attempts, err := analyze(ctx, fs.Args(), set, false)
	if err != nil {
		return err
	}
	if *format == "json" {
		out := struct {
			Attempts []domain.AttemptJSON `json:"attempts"`
		}{Attempts: []domain.AttemptJSON{}}
		for _, a := range attempts {
			out.Attempts = append(out.Attempts, a.JSON())
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", " ")
		return enc.Encode(out)
	}
	return report.Text(stdout, attempts)
}
