// Package fixturetest runs journal captures and logs through the real
// ingest and a fresh tracker with the built-in rules, as `analyzer explain`
// does, for the tests of the packages downstream of the tracker.
package fixturetest

import (
	"context"
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
