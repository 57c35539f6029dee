// Package fixturetest runs journal captures and logs through the real
// ingest and a fresh tracker with the built-in rules, as `analyzer explain`
// does, for the tests of the packages downstream of the tracker.
package fixturetest

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
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

// NightStating writes the night fixture (night, its path) into dir with
// rung 6's "'max_num_seqs': 5" (a probe that booted, the last such text)
// replaced by seqs, as any local user can write to journald, and returns
// the new file's path.
func NightStating(t testing.TB, night, dir, seqs string) string {
	t.Helper()
	src, err := os.ReadFile(night)
	if err != nil {
		t.Fatal(err)
	}
	const was = "'max_num_seqs': 5,"
	i := bytes.LastIndex(src, []byte(was))
	if i < 0 {
		t.Fatal("the night fixture no longer states max_num_seqs 5")
	}
	path := filepath.Join(dir, "night.journal.json")
	if err := os.WriteFile(path, slices.Concat(src[:i], []byte("'max_num_seqs': "+seqs+","), src[i+len(was):]), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
