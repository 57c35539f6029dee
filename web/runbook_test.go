package web

import (
	"strings"
	"testing"

	"github.com/llmfleet/analyzer/domain"
)

// TestRunbooks: every verdict of the spec has a page saying what it means
// (an alert's runbook_url points there); an unknown name is a 404.
func TestRunbooks(t *testing.T) {
	srv := newServer(t)
	for _, v := range domain.Verdicts {
		rb, ok := domain.RunbookOf(v)
		if !ok || rb.Meaning == "" {
			t.Errorf("%s: no runbook", v)
			continue
		}
		code, body, _ := get(t, srv, "/verdicts/"+string(v))
		if code != 200 || !strings.Contains(body, "Verdict "+string(v)) || !strings.Contains(body, `href="/?verdict=`+string(v)+`"`) {
			t.Errorf("/verdicts/%s: %d", v, code)
		}
		if v.IsFailure() && len(rb.Try) == 0 {
			t.Errorf("%s: a failure verdict with nothing to try", v)
		}
	}
	code, body, _ := get(t, srv, "/verdicts/oom_kv_alloc")
	if code != 200 || !strings.Contains(body, "Device or host OOM while sizing or allocating the KV cache") {
		t.Errorf("/verdicts/oom_kv_alloc: %d", code)
	}
	if code, _, _ := get(t, srv, "/verdicts/not_a_verdict"); code != 404 {
		t.Errorf("/verdicts/not_a_verdict: %d, want 404", code)
	}
	if code, body, _ := get(t, srv, "/verdicts"); code != 200 || strings.Count(body, `class="runbook"`) != len(domain.Verdicts) {
		t.Errorf("/verdicts: %d, %d runbooks", code, strings.Count(body, `class="runbook"`))
	}
}
