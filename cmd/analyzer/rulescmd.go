package main

import (
	"fmt"
	"os"
	"strings"
)

func cmdRules(args []string) error {
	if len(args) == 0 || (args[0] != "test" && args[0] != "lint") {
		return usageError{"rules needs test or lint"}
	}
	fs := newFlags("rules " + args[0])
	commandArgs["rules "+args[0]] = " [DIR]"
	if err := parseFlags(fs, args[1:]); err != nil {
		return usageError{err.Error()}
	}
	if fs.NArg() > 1 {
		return usageError{"rules " + args[0] + " takes one rule directory"}
	}
	dir := fs.Arg(0)
	set, err := loadRules(dir)
	if err != nil {
		return fmt.Errorf("rules do not load:\n%w", err)
	}
	if args[0] == "lint" {
		for _, w := range set.Lint() {
			fmt.Fprintln(os.Stderr, "warning:", w)
		}
		fmt.Fprintf(stdout, "%d files, %d engines, %d rules: ok\n", len(set.Files), len(set.Engines()), len(set.Rules()))
		return nil
	}
	results := set.RunTests()
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
