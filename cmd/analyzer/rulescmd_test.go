package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmfleet/analyzer/rules"
)

// TestRulesTestCommand: `analyzer rules test` prints one FAIL line per
// failing test and a count, and exits 1 when a test fails, 0 when none
// does. Its tests run through the pipeline, so a failure the lines go on
// to withdraw (the boot reached ready after it) is no match.
func TestRulesTestCommand(t *testing.T) {
	set, err := rules.LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	builtin := 0
	for _, r := range set.Rules() {
		builtin += len(r.Tests)
	}
	old := stdout
	defer func() { stdout = old }()
	run1 := func(args ...string) (string, int) {
		var out, msg bytes.Buffer
		stdout = &out
		code := exitStatus(run(t.Context(), args), &msg)
		stdout = old
		return out.String(), code
	}

	out, code := run1("rules", "test")
	if want := fmt.Sprintf("rules: %d passed, 0 failed\n", builtin); out != want || code != 0 {
		t.Errorf("rules test: exit %d, output %q; want 0, %q", code, out, want)
	}

	dir := t.TempDir()
	files, _ := filepath.Glob("../../rules/*.yaml")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	site := `rules:
  - id: site.bad_arg
    engines: [vllm]
    match: 'bad value for (?P<arg>\w+)'
    verdict: config_error
    tests:
      - name: boot stops
        lines: ["ValueError: bad value for max_model_len"]
        expect: {captures: {arg: max_model_len}}
      - name: boot goes on
        lines: ["ValueError: bad value for max_model_len", "Loading weights took 3.2 seconds", "INFO:     Application startup complete."]
        expect: {captures: {arg: max_model_len}}
`
	if err := os.WriteFile(filepath.Join(dir, "site.yaml"), []byte(site), 0o644); err != nil {
		t.Fatal(err)
	}
	out, code = run1("rules", "test", dir)
	want := "FAIL site.yaml:10 site.bad_arg: boot goes on: expected a match, got none (the attempt: ready in ready)\n" +
		fmt.Sprintf("rules: %d passed, 1 failed\n", builtin+1)
	if out != want || code != 1 {
		t.Errorf("rules test DIR: exit %d, output\n%s\nwant 1,\n%s", code, out, want)
	}
	if strings.Count(out, "FAIL ") != 1 {
		t.Errorf("%d FAIL lines, want 1", strings.Count(out, "FAIL "))
	}
}
