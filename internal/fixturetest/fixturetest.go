// Package fixturetest runs journal captures and logs through the real
// ingest and a fresh tracker with the built-in rules, as `analyzer explain`
// does, for the tests of the packages downstream of the tracker.
package fixturetest

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/pipeline"
	"github.com/llmfleet/analyzer/rules"
)

// Attempts returns the attempts of the files, read through one tracker by
// pipeline.Analyze, as `analyzer explain` reads them.
func Attempts(t testing.TB, paths ...string) []*domain.Attempt {
	t.Helper()
	set, err := rules.LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	as, _, err := pipeline.Analyze(context.Background(), set, pipeline.FileInputs(paths), pipeline.BatchOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return as
}

// SiteRule is a rule file a site adds beside the built-in ones: a vLLM
// line no built-in rule knows (rule reload tests).
const SiteRule = `rules:
  - id: site.frobnicator
    title: the site's frobnicator exploded
    engines: [vllm]
    match: 'frobnicator exploded: (?P<what>\S+)'
    verdict: config_error
    priority: 70
    message_id: 226bbe0d73a58111c6eea57fb60430af
    note: 'The frobnicator exploded ({{.Captures.what}}).'
    tests:
      - lines: ["ERROR frobnicator exploded: flux"]
        expect: {captures: {what: flux}}
`

// CopyBuiltinRules writes the built-in rule files into dir, for tests that
// edit or remove a rule directory under a running rules.Manager.
func CopyBuiltinRules(t testing.TB, dir string) {
	t.Helper()
	names, err := fs.Glob(rules.Builtin, "*.yaml")
	if err != nil || len(names) == 0 {
		t.Fatalf("built-in rule files: %v %v", names, err)
	}
	for _, n := range names {
		b, err := fs.ReadFile(rules.Builtin, n)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, n), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
