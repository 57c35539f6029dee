package rules_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmfleet/analyzer/internal/fixturetest"
	"github.com/llmfleet/analyzer/rules"
)

type recordTarget struct{ sets []*rules.Set }

func (r *recordTarget) SetRules(s *rules.Set) error { r.sets = append(r.sets, s); return nil }

// TestManagerUpdate: a broken file leaves the set in use and its targets
// alone and is reported with file:line; a fixed one replaces the set for
// every target, and the observer sees each outcome.
func TestManagerUpdate(t *testing.T) {
	dir := t.TempDir()
	fixturetest.CopyBuiltinRules(t, dir)
	names, _ := fs.Glob(rules.Builtin, "*.yaml")
	m, err := rules.NewManager(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	var seen []rules.ReloadStatus
	var counts []int
	m.Observe(func(st rules.ReloadStatus, n int) { seen = append(seen, st); counts = append(counts, n) })
	first := m.Current()
	tgt := &recordTarget{}
	m.Add(tgt)
	if len(tgt.sets) != 1 || tgt.sets[0] != first {
		t.Fatalf("Add did not hand over the current set: %v", tgt.sets)
	}

	vllm := filepath.Join(dir, "vllm.yaml")
	good, _ := os.ReadFile(vllm)
	if err := os.WriteFile(vllm, []byte(strings.Replace(string(good), "rules:", "rules: [", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	err = m.Update("test")
	var errs rules.Errors
	if !errors.As(err, &errs) || !strings.Contains(err.Error(), "vllm.yaml:") {
		t.Fatalf("Update of a broken file: %v, want rules.Errors naming vllm.yaml", err)
	}
	st := m.Status()
	if m.Current() != first || len(tgt.sets) != 1 || st.LastReload.OK || st.LastReload.Error != err.Error() || st.Rules != len(first.Rules()) {
		t.Errorf("after a failed Update: status %+v, %d sets handed over", st, len(tgt.sets))
	}

	if err := os.WriteFile(vllm, good, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := m.Update("test"); err != nil {
		t.Fatal(err)
	}
	st = m.Status()
	if m.Current() == first || len(tgt.sets) != 2 || tgt.sets[1] != m.Current() || !st.LastReload.OK || st.LastReload.Error != "" ||
		st.Source != dir || len(st.Files) != len(names) || st.Rules != len(first.Rules()) {
		t.Errorf("after a good Update: status %+v, %d sets handed over", st, len(tgt.sets))
	}
	if len(seen) != 3 || !seen[0].OK || seen[1].OK || !seen[2].OK || counts[1] != len(first.Rules()) {
		t.Errorf("observer saw %+v %v", seen, counts)
	}
}
