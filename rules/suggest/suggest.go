// Package suggest writes the rule for an unknown failure from its own
// lines (`analyzer rules suggest`, the unknown failure page's form): the
// entry (rules.Suggestion), checked as `rules lint` and `rules test` would
// next to the rules in use (rules/ruletest), with the stored unknown
// failures it would name (pipeline.ReconsiderStored). It sits above the
// pipeline, as ruletest does.
package suggest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/judge"
	"github.com/llmfleet/analyzer/pipeline"
	"github.com/llmfleet/analyzer/rules"
	"github.com/llmfleet/analyzer/rules/ruletest"
)

// Store is what a Suggester reads and, through the reload, saves
// (*store.DB has it). GetAttempt returns an error wrapping NotFound for an
// unknown id.
type Store interface {
	GetAttempt(ctx context.Context, id string) (*domain.Attempt, error)
	pipeline.StoredAttempts
}

// Errors of Suggest.
var (
	// ErrNoSuchFailure: the id names no attempt and no unknown failure group.
	ErrNoSuchFailure = errors.New("no attempt or unknown failure group has that id")
	// ErrNamed: the attempt is not an unknown failure; a rule names it.
	ErrNamed = errors.New("not an unknown failure")
	// ErrNoLine: the failure has no stored line to match (it printed
	// nothing, or only lifecycle records).
	ErrNoLine = errors.New("no decisive line is stored for it")
	// ErrBadVerdict: the verdict chosen is no failure verdict of the spec
	// (unknown_failure neither).
	ErrBadVerdict = errors.New("choose the failure verdict of the spec this is")
	// ErrCannotSave: no rule directory to save into (the built-in rules
	// are in use), or the rule fails its tests.
	ErrCannotSave = errors.New("cannot save the rule")
)

// Suggester proposes rules for a store's unknown failures.
type Suggester struct {
	DB Store
	// NotFound is the error DB.GetAttempt wraps for an unknown id.
	NotFound error
	// Dir is the rule directory in use ("" for the built-in rules).
	Dir string
	// Reload, when set with Dir, is called after a save (rules.Manager's
	// Update): the running pipelines take the rule, and stored unknown
	// failures are re-decided with it.
	Reload func() error
}

// CanSave reports whether suggestions can be saved: a rule directory is
// in use.
func (s *Suggester) CanSave() bool { return s.Dir != "" }

// Suggest proposes the rule for id (an attempt, or an unknown failure
// group's newest domain.GroupExamples attempts) giving req.Verdict, named
// req.RuleID and req.Title (defaults: rules.Suggestion's); with req.Save,
// it writes it into Dir and calls Reload when it passes its tests. Errors:
// the ones above, a rule that does not load (with its text), the store's.
func (s *Suggester) Suggest(ctx context.Context, id string, req domain.RuleSuggestionRequest) (*domain.RuleSuggestion, error) {
	v, opt := req.Verdict, req
	if !slices.Contains(domain.Verdicts, v) || !v.IsFailure() || v == domain.VerdictUnknownFailure {
		return nil, fmt.Errorf("%w: %q", ErrBadVerdict, v)
	}
	attempts, err := s.attempts(ctx, id)
	if err != nil {
		return nil, err
	}
	base, err := rules.LoadSource(s.Dir)
	if err != nil {
		return nil, fmt.Errorf("the rules in use do not load: %w", err)
	}
	sg := rules.Suggestion{ID: opt.RuleID, Title: opt.Title, Engine: attempts[0].Engine, Phase: attempts[0].Phase, Verdict: v}
	for _, a := range attempts {
		if d, ok := judge.DecisiveLineOf(a); ok {
			sg.Lines = append(sg.Lines, d.Message)
		}
	}
	if len(sg.Lines) == 0 {
		return nil, fmt.Errorf("%s: %w", id, ErrNoLine)
	}
	text, err := sg.Render(base)
	if err != nil {
		return nil, err
	}
	out := &domain.RuleSuggestion{Source: id, Attempts: len(sg.Lines), Verdict: v, File: fileName(text), Text: string(text)}
	out.RuleID = strings.TrimSuffix(out.File, ".yaml")
	set, err := s.withRule(out.File, text)
	if err != nil {
		return nil, fmt.Errorf("the suggested rule does not load:\n%s\n%w", text, err)
	}
	for _, w := range set.Lint() {
		if strings.Contains(w, out.RuleID) {
			out.Lint = append(out.Lint, w)
		}
	}
	var rule *rules.Rule
	for _, r := range set.Rules() {
		if r.ID == out.RuleID {
			rule = r
		}
	}
	if rule == nil {
		return nil, fmt.Errorf("the suggested rule %s is not in the loaded set", out.RuleID)
	}
	for _, r := range ruletest.RunRule(ctx, set, rule) {
		switch {
		case r.Passed:
			out.Passed++
		default:
			out.Failed++
			out.Problems = append(out.Problems, r.Test+": "+strings.Join(r.Problems, "; "))
		}
	}
	only := func(r *rules.Rule) bool { return r.ID == out.RuleID }
	if out.Named, out.Read, err = pipeline.ReconsiderStored(ctx, s.DB, set, only, false); err != nil {
		return nil, err
	}
	if !opt.Save {
		return out, nil
	}
	if !s.CanSave() || out.Failed > 0 {
		return out, fmt.Errorf("%w: %s", ErrCannotSave, map[bool]string{true: "it fails its tests", false: "the built-in rules are in use (serve --rules DIR)"}[out.Failed > 0])
	}
	if out.Saved, err = Write(s.Dir, out); err != nil {
		return out, err
	}
	if s.Reload != nil {
		if err := s.Reload(); err != nil {
			return out, fmt.Errorf("saved %s, but the rules did not reload: %w", out.Saved, err)
		}
	}
	return out, nil
}

// Write saves a suggestion's rule file into dir as its File; a file of
// that name is never overwritten. It returns the path.
func Write(dir string, sg *domain.RuleSuggestion) (string, error) {
	path := filepath.Join(dir, sg.File)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return "", err
	}
	if _, err := f.WriteString(sg.Text); err != nil {
		f.Close()
		return "", err
	}
	return path, f.Close()
}

// attempts are the attempt id names, or the unknown failures of the group
// it names (newest first, at most domain.GroupExamples).
func (s *Suggester) attempts(ctx context.Context, id string) ([]*domain.Attempt, error) {
	a, err := s.DB.GetAttempt(ctx, id)
	if err == nil {
		if a.Verdict != domain.VerdictUnknownFailure {
			return nil, fmt.Errorf("attempt %s is %s, %w: rule %s names it", id, a.Verdict, ErrNamed, a.Rule)
		}
		return []*domain.Attempt{a}, nil
	}
	if s.NotFound == nil || !errors.Is(err, s.NotFound) {
		return nil, err
	}
	list, err := s.DB.ListAttempts(ctx, domain.AttemptFilter{Group: id, Verdict: string(domain.VerdictUnknownFailure), Limit: domain.GroupExamples})
	if err != nil {
		return nil, err
	}
	if len(list) == 0 {
		return nil, fmt.Errorf("%s: %w", id, ErrNoSuchFailure)
	}
	return list, nil
}

// withRule loads the rules in use with the suggested file added, from a
// temporary copy of their directory.
func (s *Suggester) withRule(name string, text []byte) (*rules.Set, error) {
	tmp, err := os.MkdirTemp("", "analyzer-suggest-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	var src fs.FS = rules.Builtin
	if s.Dir != "" {
		src = os.DirFS(s.Dir)
	}
	if err := os.CopyFS(tmp, src); err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(tmp, name)); err == nil {
		return nil, fmt.Errorf("%s already exists in the rule directory: choose another rule id", name)
	}
	if err := os.WriteFile(filepath.Join(tmp, name), text, 0o600); err != nil {
		return nil, err
	}
	return rules.LoadDir(tmp)
}

// fileName is the file name of a rendered rule: its id, .yaml.
func fileName(text []byte) string {
	for _, l := range strings.Split(string(text), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(l), "- id: "); ok {
			return strings.Trim(rest, `"'`) + ".yaml"
		}
	}
	return "suggested.yaml"
}
