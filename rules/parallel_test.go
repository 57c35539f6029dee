package rules

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
)

// TestLoadOnEveryCoreIsLoadInOrder: Load on four goroutines gives the set
// and the errors one goroutine gives, in the same order: the built-in
// rules, and files whose errors come from every parallel step (a file
// YAML rejects, an engine's bad pattern, rules' bad patterns, a duplicate
// id).
func TestLoadOnEveryCoreIsLoadInOrder(t *testing.T) {
	bad := fstest.MapFS{
		"a.yaml": {Data: []byte("engines:\n  - engine: e1\n    detect: ['e1 (']\n")},
		"b.yaml": {Data: []byte("rules: [\n")},
	}
	var rules string
	for i := range 40 {
		match := fmt.Sprintf("x%d", i)
		if i%2 == 1 {
			match += " ("
		}
		rules += fmt.Sprintf("  - id: r.%d\n    title: t\n    verdict: config_error\n    match: '%s'\n", i%30, match)
	}
	bad["c.yaml"] = &fstest.MapFile{Data: []byte("rules:\n" + rules)}

	load := func(procs int) (ids, errs []string) {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		set, err := LoadBuiltin()
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range set.Rules() {
			ids = append(ids, r.ID)
		}
		_, err = Load(bad)
		list, ok := err.(Errors)
		if !ok {
			t.Fatalf("Load of bad files: %v, want Errors", err)
		}
		for _, e := range list {
			errs = append(errs, e.Error())
		}
		return ids, errs
	}
	ids1, errs1 := load(1)
	if len(ids1) < 50 || len(errs1) < 25 {
		t.Fatalf("%d rules, %d errors: too few to tell an order", len(ids1), len(errs1))
	}
	for _, want := range []string{"b.yaml:1: yaml:", "a.yaml:3: detect:", "c.yaml:6: rule \"r.1\": match:", "already used at c.yaml:2"} {
		if !slices.ContainsFunc(errs1, func(e string) bool { return strings.Contains(e, want) }) {
			t.Errorf("no error holds %q: %q", want, errs1)
		}
	}
	for range 5 {
		ids4, errs4 := load(4)
		if !slices.Equal(ids1, ids4) {
			t.Fatal("rules in another order on four goroutines")
		}
		if !slices.Equal(errs1, errs4) {
			t.Fatalf("errors on four goroutines:\n%q\nwant:\n%q", errs4, errs1)
		}
	}
}
