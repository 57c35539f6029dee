package main

import (
	"encoding/json"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/internal/fixturetest"
	"github.com/llmfleet/analyzer/store"
	"github.com/llmfleet/analyzer/web/rulesapi"
)

// TestRulesSuggestNamesStoredFailures: `rules suggest` on the unknown
// failures of three pasted logs (real engine output of our corpus: a vLLM
// ROCm HIP error, a llama.cpp GGML_ASSERT, an SGLang CUDA error during
// graph capture) writes entries that lint and pass their own tests, names
// only its own attempt, and, saved into the rule directory of a running
// serve, changes those attempts' verdicts on reload, without a restart,
// while the failure no rule was written for stays unknown. The bundled
// examples have no unknown failure to write one for.
func TestRulesSuggestNamesStoredFailures(t *testing.T) {
	bin := analyzerBinary(t)
	dir := t.TempDir()
	fixturetest.CopyBuiltinRules(t, dir)
	db := filepath.Join(t.TempDir(), "s.db")
	cli := func(args ...string) (string, error) {
		out, err := exec.CommandContext(t.Context(), bin, args...).CombinedOutput()
		return string(out), err
	}
	files := map[string]string{"vllm": "vllm-206", "llamacpp": "llamacpp-424", "sglang": "sglang-318"}
	args := []string{"replay", "--db", db}
	for _, c := range files {
		args = append(args, filepath.Join("..", "..", "testdata", "corpus", c, "log.txt"))
	}
	if out, err := cli(args...); err != nil {
		t.Fatalf("replay: %v\n%s", err, out)
	}
	s, err := store.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	unknown, err := s.ListAttempts(t.Context(), domain.AttemptFilter{Verdict: string(domain.VerdictUnknownFailure)})
	s.Close()
	if err != nil {
		t.Fatal(err)
	}
	byEngine := map[string]string{}
	for _, a := range unknown {
		byEngine[a.Engine] = a.ID
	}
	if len(unknown) != 3 || len(byEngine) != 3 {
		t.Fatalf("want one unknown failure per pasted log, got %d: %v", len(unknown), byEngine)
	}

	addr := freeAddr(t)
	base := "http://" + addr
	srv := exec.CommandContext(t.Context(), bin, "serve", "--db", db, "--rules", dir, "--no-journal", "--listen", addr)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Process.Kill(); _ = srv.Wait() }()
	waitServing(t, base)

	for _, eng := range []string{"vllm", "llamacpp"} {
		id := byEngine[eng]
		out, err := cli("rules", "suggest", id, "--verdict", "engine_died", "--db", db, "--rules", dir, "--write", dir)
		if err != nil {
			t.Fatalf("suggest %s: %v\n%s", eng, err, out)
		}
		for _, want := range []string{"tests: 1 passed, 0 failed", "stored unknown failures it names: 1 of 3",
			id + " - -: unknown_failure → engine_died (local." + eng + "_", "\n    - id: local." + eng + "_", "saved " + dir} {
			if !strings.Contains(out, want) {
				t.Errorf("suggest %s: output lacks %q:\n%s", eng, want, out)
			}
		}
	}
	if out, err := cli("rules", "lint", dir); err != nil || !strings.Contains(out, ": ok") {
		t.Errorf("rules lint of the directory with the saved entries: %v\n%s", err, out)
	}
	if out, err := cli("rules", "test", dir); err != nil {
		t.Errorf("rules test of the directory with the saved entries: %v\n%s", err, out)
	}
	// Saved, not yet reloaded: the stored verdicts stand.
	if v := storedVerdict(t, base, byEngine["vllm"]); v != "unknown_failure" {
		t.Fatalf("before the reload: %s", v)
	}
	if code, body := httpDo(t, http.MethodPost, base+rulesapi.ReloadPath); code != http.StatusOK {
		t.Fatalf("reload: %d %s", code, body)
	}
	for _, eng := range []string{"vllm", "llamacpp"} {
		waitFor(t, eng+" attempt named by its new rule", func() bool { return storedVerdict(t, base, byEngine[eng]) == "engine_died" })
	}
	if v := storedVerdict(t, base, byEngine["sglang"]); v != "unknown_failure" {
		t.Errorf("the failure no rule was written for: %s, want unknown_failure", v)
	}

	// The UI: the unknown failure page links the form; the form proposes
	// the same checks and saves from loopback, and the attempt is named.
	// serve answers the groups from what it holds of the database, which
	// may lag a save by one update (web.Options.LiveUpdate): wait for it.
	var groups struct {
		Groups []struct {
			ID     string `json:"id"`
			Newest string `json:"newest_attempt"`
		} `json:"groups"`
	}
	var body string
	waitFor(t, "the unknown groups to drop the two named", func() bool {
		var code int
		code, body = httpDo(t, http.MethodGet, base+"/api/v1/unknown")
		groups.Groups = nil
		return code == http.StatusOK && json.Unmarshal([]byte(body), &groups) == nil && len(groups.Groups) == 1
	})
	if groups.Groups[0].Newest != byEngine["sglang"] {
		t.Fatalf("unknown groups after two were named: %s, want only the SGLang attempt's", body)
	}
	group := groups.Groups[0].ID
	if _, page := httpDo(t, http.MethodGet, base+"/unknown"); !strings.Contains(page, `href="/unknown/`+group+`/rule"`) {
		t.Errorf("the unknown failures page does not link the rule form of group %s", group)
	}
	form := base + "/unknown/" + group + "/rule"
	if code, page := httpDo(t, http.MethodGet, form+"?verdict=ready"); code != http.StatusBadRequest || !strings.Contains(page, "failure verdict") {
		t.Errorf("form with verdict ready: %d", code)
	}
	code, page := httpDo(t, http.MethodGet, form+"?verdict=oom_graph_capture")
	for _, want := range []string{"Tests: 1 passed, 0 failed.", "It names 1 of the 1 stored unknown failures", "local.sglang_", "Save into the rule directory"} {
		if code != http.StatusOK || !strings.Contains(page, want) {
			t.Errorf("proposal page: %d, lacks %q", code, want)
		}
	}
	if v := storedVerdict(t, base, byEngine["sglang"]); v != "unknown_failure" {
		t.Fatalf("a proposal changed the verdict: %s", v)
	}
	if code, page := httpDo(t, http.MethodPost, form+"?verdict=oom_graph_capture"); code != http.StatusOK || !strings.Contains(page, "Saved as "+dir) {
		t.Fatalf("save from the form: %d\n%s", code, page)
	}
	waitFor(t, "sglang attempt named by the rule saved from the form", func() bool { return storedVerdict(t, base, byEngine["sglang"]) == "oom_graph_capture" })
	if code, _ := httpDo(t, http.MethodGet, base+"/unknown/nosuchgroup/rule"); code != http.StatusNotFound {
		t.Errorf("form of no group: %d, want 404", code)
	}

	// A verdict that is no failure, and an attempt that is no unknown
	// failure, are refused.
	if out, err := cli("rules", "suggest", byEngine["sglang"], "--verdict", "ready", "--db", db); err == nil {
		t.Errorf("suggest --verdict ready: no error\n%s", out)
	}
	if out, err := cli("rules", "suggest", byEngine["vllm"], "--verdict", "engine_died", "--db", db); err == nil || !strings.Contains(out, "not an unknown failure") {
		t.Errorf("suggest on a named attempt: %v\n%s", err, out)
	}
}

// storedVerdict is the verdict the API gives for an attempt id.
func storedVerdict(t *testing.T, base, id string) string {
	t.Helper()
	code, body := httpDo(t, http.MethodGet, base+"/api/v1/attempts/"+id)
	if code != http.StatusOK {
		t.Fatalf("GET attempt %s: %d %s", id, code, body)
	}
	var a struct {
		Verdict string `json:"verdict"`
	}
	if err := json.Unmarshal([]byte(body), &a); err != nil {
		t.Fatal(err)
	}
	return a.Verdict
}
