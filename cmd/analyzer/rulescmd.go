package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/spf13/cobra"

	"github.com/llmfleet/analyzer/rules"
	"github.com/llmfleet/analyzer/rules/ruletest"
)

func newRulesCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "rules test|lint|suggest",
		Short: "run the tests embedded in the rule files, validate them, or write one from a failure",
		Args:  cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageError{msg: "rules needs test, lint or suggest"}
			}
			return usageError{msg: fmt.Sprintf("rules: unknown command %q, want test, lint or suggest", args[0])}
		},
	}
	for _, sub := range []struct{ name, short string }{
		{"test", "run the tests embedded in the rule files (exit status 1 when one fails)"},
		{"lint", "validate the rule files and warn about slow rules"},
	} {
		c.AddCommand(&cobra.Command{
			Use:   sub.name + " [DIR]",
			Short: sub.short,
			Long:  sub.short + ".\nDIR is a rule directory; without it, the built-in rules.",
			Args: func(c *cobra.Command, args []string) error {
				if len(args) > 1 {
					return usageError{msg: "rules " + sub.name + " takes one rule directory", cmd: c.CommandPath()}
				}
				return nil
			},
			ValidArgsFunction: func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
				return nil, cobra.ShellCompDirectiveFilterDirs
			},
			RunE: func(c *cobra.Command, args []string) error {
				dir := ""
				if len(args) == 1 {
					dir = args[0]
				}
				return runRules(c.Context(), sub.name, dir)
			},
		})
	}
	c.AddCommand(newSuggestCmd())
	return c
}

// runRules is `analyzer rules test|lint [DIR]`: the tests run through the
// pipeline (rules/ruletest).
func runRules(ctx context.Context, what, dir string) error {
	set, err := rules.LoadSource(dir)
	if err != nil {
		return fmt.Errorf("rules do not load:\n%w", err)
	}
	if what == "lint" {
		for _, w := range set.Lint() {
			slog.Warn(w)
		}
		fmt.Fprintf(stdout, "%d files, %d engines, %d rules: ok\n", len(set.Files), len(set.Engines()), len(set.Rules()))
		return nil
	}
	results := ruletest.Run(ctx, set)
	failed := 0
	for _, r := range results {
		if !r.Passed {
			failed++
			fmt.Fprintf(stdout, "FAIL %s:%d %s: %s: %s\n", r.File, r.Line, r.Rule, r.Test, strings.Join(r.Problems, "; "))
		}
	}
	fmt.Fprintf(stdout, "rules: %d passed, %d failed\n", len(results)-failed, failed)
	if failed > 0 {
		return fmt.Errorf("%d rule tests failed", failed)
	}
	return nil
}
