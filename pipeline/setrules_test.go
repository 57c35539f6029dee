package pipeline_test

import (
	"io/fs"
	"testing"
	"testing/fstest"
	"time"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/internal/fixturetest"
	"github.com/llmfleet/analyzer/pipeline"
	"github.com/llmfleet/analyzer/rules"
)

// siteRule is a rule file a site adds: a vLLM line no built-in rule knows.
const siteRule = fixturetest.SiteRule

// builtinPlus is the built-in rule files plus extra ones.
func builtinPlus(t *testing.T, extra map[string]string) *rules.Set {
	t.Helper()
	m := fstest.MapFS{}
	names, err := fs.Glob(rules.Builtin, "*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		b, err := fs.ReadFile(rules.Builtin, n)
		if err != nil {
			t.Fatal(err)
		}
		m[n] = &fstest.MapFile{Data: b}
	}
	for n, s := range extra {
		m[n] = &fstest.MapFile{Data: []byte(s)}
	}
	set, err := rules.Load(m)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// vllmAttempt is a vLLM attempt of its own invocation ending on line.
func vllmAttempt(inv string, at time.Time, line string) []domain.Entry {
	e := func(sec int, msg string) domain.Entry {
		return domain.Entry{Cursor: inv + msg, Time: at.Add(time.Duration(sec) * time.Second), Host: "gpu-01",
			Unit: "vllm.service", InvocationID: inv, Message: msg, Fields: map[string]string{"_TRANSPORT": "stdout"}}
	}
	return []domain.Entry{e(0, "INFO 10-01 21:40:00 [api_server.py:1805] vLLM API server version 0.19.2"), e(1, line)}
}

// TestSetRulesAppliesInQueueOrder: entries queued before SetRules are
// judged with the old set, entries queued after it with the new one, and
// the call does not wait for the worker.
func TestSetRulesAppliesInQueueOrder(t *testing.T) {
	db := openDB(t)
	l := pipeline.New(db, ruleSet(t), pipeline.Options{FlushInterval: time.Hour})
	l.Start()
	defer l.Close()
	t0 := time.Date(2026, 10, 1, 21, 40, 0, 0, time.UTC)
	line := "ERROR 10-01 21:40:01 [api_server.py:99] frobnicator exploded: flux"
	if err := l.Add(vllmAttempt("0123456789abcdef0123456789abcd01", t0, line)); err != nil {
		t.Fatal(err)
	}
	if err := l.SetRules(builtinPlus(t, map[string]string{"site.yaml": siteRule})); err != nil {
		t.Fatal(err)
	}
	if err := l.Add(vllmAttempt("0123456789abcdef0123456789abcd02", t0.Add(time.Minute), line)); err != nil {
		t.Fatal(err)
	}
	flush(t, l)
	got := map[string]domain.Verdict{}
	for _, a := range list(t, db) {
		got[a.InvocationID] = a.Verdict
	}
	if v := got["0123456789abcdef0123456789abcd01"]; v != domain.VerdictRunning {
		t.Errorf("attempt queued before SetRules: verdict %q, want running", v)
	}
	if v := got["0123456789abcdef0123456789abcd02"]; v != domain.VerdictConfigError {
		t.Errorf("attempt queued after SetRules: verdict %q, want config_error", v)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.SetRules(ruleSet(t)); err != pipeline.ErrClosed {
		t.Errorf("SetRules after Close: %v, want ErrClosed", err)
	}
}
