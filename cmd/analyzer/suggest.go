package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/judge"
	"github.com/llmfleet/analyzer/pipeline"
	"github.com/llmfleet/analyzer/rules"
	"github.com/llmfleet/analyzer/rules/ruletest"
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
"Unknown failures" page): its decisive line's stable words as the match (numbers, paths, hex ids
and times generalised, the log prefix stripped), its engine and phase, the verdict you choose,
and the group's lines as the rule's tests. The entry is checked as "rules lint" and "rules test"
would, and the stored unknown failures it would name are listed. --write DIR saves it into a
rule directory; a running serve --rules DIR takes it on SIGHUP or POST /-/reload and re-decides
its stored unknown failures with it.`,
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
	v := domain.Verdict(o.verdict)
	if !slices.Contains(domain.Verdicts, v) || !v.IsFailure() || v == domain.VerdictUnknownFailure {
		return usageError{msg: fmt.Sprintf("--verdict %q: choose the failure verdict of the spec this is (oom_weights, config_error, missing_payload, engine_died, ...)", o.verdict), cmd: c.CommandPath()}
	}
	if _, err := os.Stat(o.db); err != nil {
		return fmt.Errorf("database %s: %w (record attempts with `analyzer replay`)", o.db, err)
	}
	announceDB(c.Flags(), o.db)
	db, err := store.Open(o.db)
	if err != nil {
		return err
	}
	defer db.Close()
	attempts, err := suggestAttempts(ctx, db, id)
	if err != nil {
		return err
	}
	base, err := rules.LoadSource(o.rules)
	if err != nil {
		return fmt.Errorf("rules do not load:\n%w", err)
	}
	s := rules.Suggestion{ID: o.id, Title: o.title, Engine: attempts[0].Engine, Phase: attempts[0].Phase, Verdict: v}
	for _, a := range attempts {
		if d, ok := judge.DecisiveLineOf(a); ok {
			s.Lines = append(s.Lines, d.Message)
		}
	}
	if len(s.Lines) == 0 {
		return fmt.Errorf("%s: no decisive line is stored for it", id)
	}
	text, err := s.Render(base)
	if err != nil {
		return err
	}
	set, name, err := withSuggestion(o.rules, text)
	if err != nil {
		return fmt.Errorf("the suggested rule does not load:\n%s\n%w", text, err)
	}
	fmt.Fprintf(stdout, "# %s (from %d attempt(s) of %s)\n%s", name, len(attempts), id, text)
	ruleID := strings.TrimSuffix(name, ".yaml")
	for _, w := range set.Lint() {
		if strings.Contains(w, ruleID) {
			fmt.Fprintf(stdout, "lint: %s\n", w)
		}
	}
	passed, failed := 0, 0
	for _, r := range ruletest.Run(ctx, set) {
		if r.Rule != ruleID {
			continue
		}
		if r.Passed {
			passed++
		} else {
			failed++
			fmt.Fprintf(stdout, "FAIL %s: %s\n", r.Test, strings.Join(r.Problems, "; "))
		}
	}
	fmt.Fprintf(stdout, "tests: %d passed, %d failed\n", passed, failed)
	changed, read, err := pipeline.ReconsiderStored(ctx, db, set, func(r *rules.Rule) bool { return r.ID == ruleID }, false)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "stored unknown failures it names: %d of %d\n", len(changed), read)
	for _, a := range changed {
		fmt.Fprintf(stdout, "  %s %s %s: unknown_failure → %s (%s)\n", a.ID, orDash(a.Host), orDash(a.Unit), a.Verdict, a.Rule)
	}
	if failed > 0 {
		return fmt.Errorf("the suggested rule fails %d of its tests: edit it before saving", failed)
	}
	if o.write == "" {
		fmt.Fprintln(stdout, "not saved: --write DIR saves it into a rule directory")
		return nil
	}
	path := filepath.Join(o.write, name)
	if err := os.WriteFile(path, text, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "saved %s: reload serve (SIGHUP or POST /-/reload) to name those attempts\n", path)
	return nil
}

// suggestAttempts are the attempt id names, or the unknown failures of the
// group it names (newest first, at most domain.GroupExamples).
func suggestAttempts(ctx context.Context, db *store.DB, id string) ([]*domain.Attempt, error) {
	a, err := db.GetAttempt(ctx, id)
	if err == nil {
		if a.Verdict != domain.VerdictUnknownFailure {
			return nil, fmt.Errorf("attempt %s is %s, not an unknown failure: rule %s already names it", id, a.Verdict, a.Rule)
		}
		return []*domain.Attempt{a}, nil
	}
	if !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	list, err := db.ListAttempts(ctx, domain.AttemptFilter{Group: id, Verdict: string(domain.VerdictUnknownFailure), Limit: domain.GroupExamples})
	if err != nil {
		return nil, err
	}
	if len(list) == 0 {
		return nil, fmt.Errorf("%s is no attempt or unknown failure group of %s", id, "the database")
	}
	return list, nil
}

// withSuggestion loads the rule directory (the built-in rules for "") with
// the suggested file added, in a temporary directory; name is the file's.
func withSuggestion(dir string, text []byte) (*rules.Set, string, error) {
	tmp, err := os.MkdirTemp("", "analyzer-suggest-")
	if err != nil {
		return nil, "", err
	}
	defer os.RemoveAll(tmp)
	var src fs.FS = rules.Builtin
	if dir != "" {
		src = os.DirFS(dir)
	}
	if err := os.CopyFS(tmp, src); err != nil {
		return nil, "", err
	}
	name := suggestedName(text)
	if _, err := os.Stat(filepath.Join(tmp, name)); err == nil {
		return nil, "", fmt.Errorf("%s already exists in the rule directory: give --id", name)
	}
	if err := os.WriteFile(filepath.Join(tmp, name), text, 0o600); err != nil {
		return nil, "", err
	}
	set, err := rules.LoadDir(tmp)
	return set, name, err
}

// suggestedName is the file name of a suggested rule: its id, .yaml.
func suggestedName(text []byte) string {
	for _, l := range strings.Split(string(text), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(l), "- id: "); ok {
			return strings.Trim(rest, `"'`) + ".yaml"
		}
	}
	return "suggested.yaml"
}

// orDash is s, or "-" for an unknown host or unit (pasted text).
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
