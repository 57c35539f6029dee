package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/rules/suggest"
	"github.com/llmfleet/analyzer/store"
)

type suggestOpts struct {
	db, rules, verdict, id, title, write string
}

func newSuggestCmd() *cobra.Command {
	var o suggestOpts
	c := &cobra.Command{
		Use:   "suggest ATTEMPT|GROUP --verdict VERDICT",
		Short: "write the rule for an unknown failure from its own lines",
		Long: `Propose a rule file entry for an unknown failure (an attempt id, or a group id of the
"Unknown failures" page): its decisive line's stable words as the match (numbers, sizes, paths,
hex ids and times generalised, the log prefix stripped), its engine and phase, the verdict you
choose, and the group's lines as the rule's tests. The entry is checked as "rules lint" and
"rules test" would, and the stored unknown failures it would name are listed. --write DIR saves
it into a rule directory; a running serve --rules DIR takes it on SIGHUP or POST /-/reload and
re-decides its stored unknown failures with it.`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError{msg: "rules suggest takes one attempt or group id", cmd: c.CommandPath()}
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			return runSuggest(c.Context(), c, o, args[0])
		},
	}
	fs := c.Flags()
	fs.StringVar(&o.db, "db", defaultDB, "SQLite database file")
	fs.StringVar(&o.rules, "rules", "", "rule directory the entry joins (default: the built-in rules)")
	fs.StringVar(&o.verdict, "verdict", "", "the verdict the rule gives (a failure verdict of the spec)")
	fs.StringVar(&o.id, "id", "", "rule id (default: local.ENGINE_WORDS)")
	fs.StringVar(&o.title, "title", "", "rule title")
	fs.StringVar(&o.write, "write", "", "save the entry as DIR/ID.yaml (DIR: a rule directory)")
	_ = c.RegisterFlagCompletionFunc("verdict", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		var out []string
		for _, v := range domain.Verdicts {
			if v.IsFailure() && v != domain.VerdictUnknownFailure {
				out = append(out, string(v))
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	})
	return c
}

// runSuggest is `analyzer rules suggest`.
func runSuggest(ctx context.Context, c *cobra.Command, o suggestOpts, id string) error {
	if _, err := os.Stat(o.db); err != nil {
		return fmt.Errorf("database %s: %w (record attempts with `analyzer replay`)", o.db, err)
	}
	announceDB(c.Flags(), o.db)
	db, err := store.Open(o.db)
	if err != nil {
		return err
	}
	defer db.Close()
	sg := &suggest.Suggester{DB: db, NotFound: store.ErrNotFound, Dir: o.rules}
	out, err := sg.Suggest(ctx, id, domain.RuleSuggestionRequest{Verdict: domain.Verdict(o.verdict), RuleID: o.id, Title: o.title})
	if errors.Is(err, suggest.ErrBadVerdict) {
		return usageError{msg: "--verdict: " + err.Error() + " (oom_weights, config_error, missing_payload, engine_died, ...)", cmd: c.CommandPath()}
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "# %s (from %d attempt(s) of %s)\n%s", out.File, out.Attempts, id, out.Text)
	for _, w := range out.Lint {
		fmt.Fprintf(stdout, "lint: %s\n", w)
	}
	for _, p := range out.Problems {
		fmt.Fprintf(stdout, "FAIL %s\n", p)
	}
	fmt.Fprintf(stdout, "tests: %d passed, %d failed\n", out.Passed, out.Failed)
	fmt.Fprintf(stdout, "stored unknown failures it names: %d of %d\n", len(out.Named), out.Read)
	for _, a := range out.Named {
		fmt.Fprintf(stdout, "  %s %s %s: unknown_failure → %s (%s)\n", a.ID, orDash(a.Host), orDash(a.Unit), a.Verdict, a.Rule)
	}
	if out.Failed > 0 {
		return fmt.Errorf("the suggested rule fails %d of its tests: edit it before saving", out.Failed)
	}
	if o.write == "" {
		fmt.Fprintln(stdout, "not saved: --write DIR saves it into a rule directory")
		return nil
	}
	path, err := suggest.Write(o.write, out)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "saved %s: reload serve (SIGHUP or POST /-/reload) to name those attempts\n", path)
	return nil
}

// orDash is s, or "-" for an unknown host or unit (pasted text).
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
