package rules_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/llmfleet/analyzer/rules"
)

// TestBadRuleFiles loads each rule file of testdata/*.bad.yaml on its own; the
// load fails and its error names the file, the line and what is wrong.
// A file may have several rows, one per thing its error must say.
func TestBadRuleFiles(t *testing.T) {
	for _, tc := range []struct{ file, error string }{
		// count: goes on line 5 of the count-* files.
		{"count-gte-missing.bad.yaml", `count-gte-missing.bad.yaml:5: rule "demo.r": count: gte is missing; it has no default`},
		{"count-gte-zero.bad.yaml", `count-gte-zero.bad.yaml:5: rule "demo.r": count: gte must be at least 1, not 0`},
		{"count-gte-negative.bad.yaml", `count: gte must be at least 1, not -2`},
		{"count-within-no-unit.bad.yaml", `count-within-no-unit.bad.yaml:5: rule "demo.r": count: within "5" is not a duration`},
		{"count-within-word.bad.yaml", `count: within "fast" is not a duration`},
		{"count-within-zero.bad.yaml", `count-within-zero.bad.yaml:5: rule "demo.r": count: within must be positive, not "0s"`},
		{"count-within-negative.bad.yaml", `count: within must be positive, not "-1m"`},
		{"count-distinct-not-a-capture.bad.yaml", `count-distinct-not-a-capture.bad.yaml:5: rule "demo.r": count: distinct "gpu" is not a named capture of match (it has rank)`},
		{"count-distinct-block.bad.yaml", `count-distinct-block.bad.yaml:5: rule "demo.r": count: distinct "gpu"`},
		{"count-empty.bad.yaml", `count-empty.bad.yaml:2: rule "demo.r": count: empty block`},
		{"count-unknown-key.bad.yaml", `count-unknown-key.bad.yaml:5: `},
		{"count-gte-not-a-number.bad.yaml", `count-gte-not-a-number.bad.yaml:5: `},
		{"count-end-rule.bad.yaml", `count-end-rule.bad.yaml:6: rule "demo.e": count: an end rule cannot count`},
		{"count-capture-named-count.bad.yaml", `count-capture-named-count.bad.yaml:5: rule "demo.c": count: match has a capture named "count"`},
		{"provisional-without-verdict.bad.yaml", `provisional-without-verdict.bad.yaml:2: rule "demo.p": provisional needs a line rule with a verdict`},

		// The bad test line is on line 9 of the test-line-* files.
		{"test-line-t-not-a-duration.bad.yaml", `test-line-t-not-a-duration.bad.yaml:9: `},
		{"test-line-t-negative.bad.yaml", `test-line-t-negative.bad.yaml:9:`},
		{"test-line-t-negative.bad.yaml", `t must not be negative`},
		{"test-line-msg-missing.bad.yaml", `test-line-msg-missing.bad.yaml:9:`},
		{"test-line-msg-missing.bad.yaml", `msg is missing`},
		{"test-line-repeat-without-every.bad.yaml", `test-line-repeat-without-every.bad.yaml:9:`},
		{"test-line-repeat-without-every.bad.yaml", `repeat needs every`},
		{"test-line-repeat-zero.bad.yaml", `test-line-repeat-zero.bad.yaml:9:`},
		{"test-line-repeat-zero.bad.yaml", `repeat must be a whole number >= 1`},
		{"test-line-unknown-key.bad.yaml", `test-line-unknown-key.bad.yaml:9:`},
		{"test-line-unknown-key.bad.yaml", `unknown key "at"`},

		// Every broken rule of a file is reported, each with its line.
		{"several-errors.bad.yaml", "several-errors.bad.yaml:5:"},
		{"several-errors.bad.yaml", `rule "b.bad": match`},
		{"several-errors.bad.yaml", "several-errors.bad.yaml:8:"},
		{"several-errors.bad.yaml", `unknown verdict "not_a_verdict"`},
		{"several-errors.bad.yaml", "when:"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			_, err := loadBadFile(t, tc.file)
			if err == nil {
				t.Fatalf("%s loaded", tc.file)
			}
			if !strings.Contains(err.Error(), tc.error) {
				t.Errorf("error\n%v\ndoes not contain %q", err, tc.error)
			}
		})
	}
}

// Each testdata/*.bad.yaml has a row in TestBadRuleFiles, so no bad file
// sits there unchecked.
func TestEveryBadRuleFileIsChecked(t *testing.T) {
	files, err := filepath.Glob("testdata/*.bad.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no bad rule files: %v", err)
	}
	for _, f := range files {
		if _, err := loadBadFile(t, filepath.Base(f)); err == nil {
			t.Errorf("%s loads", f)
		}
	}
	src, err := os.ReadFile("badfiles_test.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if !strings.Contains(string(src), `{"`+filepath.Base(f)+`", `) {
			t.Errorf("%s has no row in TestBadRuleFiles", f)
		}
	}
}

// loadBadFile loads testdata/name alone, under its own name, so errors
// name it.
func loadBadFile(t *testing.T, name string) (*rules.Set, error) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return rules.Load(fstest.MapFS{name: {Data: data}})
}
