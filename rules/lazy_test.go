package rules

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
)

// TestBuiltinLazy: LoadBuiltin leaves the built-in conditions and notes
// uncompiled (it takes the parsed form), and every one of them compiles,
// the conditions with the guards an eager Load of the same files derives:
// the tests are where a broken built-in condition or note shows, not a
// line that reaches it.
func TestBuiltinLazy(t *testing.T) {
	lazy, err := LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	eager, err := Load(Builtin)
	if err != nil {
		t.Fatal(err)
	}
	eagerByID := map[string]*Rule{}
	for _, r := range eager.Rules() {
		eagerByID[r.ID] = r
	}
	n, notes := 0, 0
	for _, r := range lazy.Rules() {
		if r.note != nil {
			notes++
			if r.note.t != nil {
				t.Errorf("%s: note parsed by LoadBuiltin", r.ID)
			}
			if e := eagerByID[r.ID]; e == nil || e.note == nil || e.note.t == nil {
				t.Errorf("%s: Load did not parse its note", r.ID)
			}
			if _, err := r.note.parsed(); err != nil {
				t.Errorf("%s: note: %v", r.ID, err)
			}
		}
		if r.when == nil {
			continue
		}
		n++
		if r.when.prog != nil {
			t.Errorf("%s: when compiled by LoadBuiltin", r.ID)
		}
		e := eagerByID[r.ID]
		if e == nil || e.when == nil || e.when.prog == nil {
			t.Fatalf("%s: Load did not compile its when", r.ID)
		}
		w := r.when.compiled()
		if w.err != nil || w.prog == nil {
			t.Errorf("%s: when %q: %v", r.ID, w.src, w.err)
		}
		if len(w.guards) != len(e.when.guards) {
			t.Errorf("%s: %d guards, Load derived %d", r.ID, len(w.guards), len(e.when.guards))
		}
	}
	if n < 40 || notes < 80 {
		t.Errorf("%d built-in rules with a when and %d with a note, want the 45 and 92 or so there are", n, notes)
	}
}

// TestLoadReportsBadWhen: a rule file's condition or note that does not
// compile is a load error on the rule's line, not a rule that never fires
// or a note that says "template error".
func TestLoadReportsBadWhen(t *testing.T) {
	for field, line := range map[string]string{"when": `when: 'phase == '`, "note": `note: '{{ .Rule '`} {
		fsys := fstest.MapFS{"x.yaml": &fstest.MapFile{Data: []byte(`rules:
  - id: x.boom
    title: boom
    match: 'boom'
    ` + line + `
    verdict: config_error
    severity: critical
    message_id: 0123456789abcdef0123456789abcdef
`)}}
		_, err := Load(fsys)
		var es Errors
		if !errors.As(err, &es) || len(es) != 1 || !strings.HasPrefix(es[0].Error(), `x.yaml:2: rule "x.boom": `+field+`: `) {
			t.Errorf("Load: %v, want one error on x.yaml:2 naming %s", err, field)
		}
	}
}

// TestWhenConcurrentCompile: goroutines that reach one uncompiled
// condition at once share one compilation and agree (make test runs it
// under -race).
func TestWhenConcurrentCompile(t *testing.T) {
	w := &whenExpr{src: `!reached_ready && phase == "weights"`}
	var wg sync.WaitGroup
	results := make([]bool, 8)
	for i := range results {
		wg.Go(func() {
			env := &LineEnv{Phase: "weights"}
			if i%2 == 1 {
				env.ReachedReady = true
			}
			results[i] = w.holds(env)
		})
	}
	wg.Wait()
	for i, got := range results {
		if want := i%2 == 0; got != want {
			t.Errorf("goroutine %d: holds = %v, want %v", i, got, want)
		}
	}
	if len(w.guards) != 2 {
		t.Errorf("%d guards, want 2 (reached_ready, phase)", len(w.guards))
	}
}
