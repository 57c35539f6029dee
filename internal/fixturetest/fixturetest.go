// Package fixturetest runs journal captures and logs through the real
// ingest and a fresh tracker with the built-in rules, as `analyzer explain`
// does, for the tests of the packages downstream of the tracker.
package fixturetest

import (
	"context"
	"testing"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/ingest"
	"github.com/llmfleet/analyzer/rules"
	"github.com/llmfleet/analyzer/tracker"
)

// Attempts returns the attempts of the files, read through one tracker.
func Attempts(t testing.TB, paths ...string) []*domain.Attempt {
	t.Helper()
	set, err := rules.LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	tr := tracker.New(set, tracker.Options{})
	for _, path := range paths {
		if _, err := ingest.ReadFile(context.Background(), path, ingest.Options{Fields: tracker.Fields}, func(e domain.Entry) error {
			tr.Add(e)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	tr.Finish()
	return tr.Attempts()
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
