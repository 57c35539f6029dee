package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/grafana/loki/pkg/push"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/llmfleet/analyzer/internal/fixturetest"
	"github.com/llmfleet/analyzer/loki"
	"github.com/llmfleet/analyzer/rules"
	"github.com/llmfleet/analyzer/web/rulesapi"
)

// siteRule is a rule file a site adds: a vLLM line no built-in rule knows.
const siteRule = fixturetest.SiteRule

const (
	noMemLine = "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine."
	frobLine  = "ERROR 10-01 21:40:01 [api_server.py:99] frobnicator exploded: flux"
	goodMatch = `match: 'No available memory for the cache blocks|`
	badMatch  = `match: '(No available memory for the cache blocks|`
)

// editFile replaces old by new in path; it fails when old is absent.
func editFile(t *testing.T, path, old, new string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(old)) {
		t.Fatalf("%s does not contain %q", path, old)
	}
	if err := os.WriteFile(path, bytes.Replace(b, []byte(old), []byte(new), 1), 0o644); err != nil {
		t.Fatal(err)
	}
}

// lineOf is the 1-based line of the first line of path containing s.
func lineOf(t *testing.T, path, s string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, s) {
			return i + 1
		}
	}
	t.Fatalf("%s: no line contains %q", path, s)
	return 0
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func httpDo(t *testing.T, method, url string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func rulesStatus(t *testing.T, base string) rules.Status {
	t.Helper()
	code, body := httpDo(t, http.MethodGet, base+rulesapi.RulesPath)
	var st rules.Status
	if code != 200 || json.Unmarshal([]byte(body), &st) != nil {
		t.Fatalf("GET %s: %d %s", rulesapi.RulesPath, code, body)
	}
	return st
}

// pushAttempt pushes a vLLM attempt of its own invocation: the version
// line, then line.
func pushAttempt(t *testing.T, base, inv string, at time.Time, line string) {
	t.Helper()
	md := push.LabelsAdapter{{Name: "invocation_id", Value: inv}, {Name: "_TRANSPORT", Value: "stdout"}}
	body, err := loki.EncodeProtobuf(&push.PushRequest{Streams: []push.Stream{{
		Labels: `{host="reload-host", unit="vllm-` + inv[len(inv)-2:] + `.service"}`,
		Entries: []push.Entry{
			{Timestamp: at, Line: "INFO 10-01 21:40:00 [api_server.py:1805] vLLM API server version 0.19.2", StructuredMetadata: md},
			{Timestamp: at.Add(time.Second), Line: line, StructuredMetadata: md},
		},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	postPush(t, base, "", body)
}

// postPush sends a snappy protobuf push body (with token as bearer when
// set) and wants 204.
func postPush(t *testing.T, base, token string, body []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+loki.PushPath, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/x-protobuf")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 204 {
		t.Fatalf("push: %d", resp.StatusCode)
	}
}

// verdictOf polls the API until the attempt of invocation inv is saved and
// returns its verdict.
func verdictOf(t *testing.T, base, inv string) string {
	t.Helper()
	var v string
	waitFor(t, "attempt "+inv, func() bool {
		code, body := httpDo(t, http.MethodGet, base+"/api/v1/attempts?host=reload-host")
		var out struct {
			Attempts []struct {
				InvocationID string `json:"invocation_id"`
				Verdict      string `json:"verdict"`
			} `json:"attempts"`
		}
		if code != 200 || json.Unmarshal([]byte(body), &out) != nil {
			return false
		}
		for _, a := range out.Attempts {
			if a.InvocationID == inv {
				v = a.Verdict
				return true
			}
		}
		return false
	})
	return v
}

// compareRulesMetrics scrapes serve's /metrics and checks whether the last
// load of the rule files succeeded (1 or 0) and the rules in use
// (testutil.ScrapeAndCompare).
func compareRulesMetrics(t *testing.T, base string, success, loaded int) {
	t.Helper()
	want := fmt.Sprintf(`# HELP analyzer_rules_last_reload_success 1 if the last load of the rule files succeeded, 0 if it failed (the previous rules stay in use).
# TYPE analyzer_rules_last_reload_success gauge
analyzer_rules_last_reload_success %d
# HELP analyzer_rules_loaded Rules in the rule set in use.
# TYPE analyzer_rules_loaded gauge
analyzer_rules_loaded %d
`, success, loaded)
	if err := testutil.ScrapeAndCompare(base+"/metrics", strings.NewReader(want),
		"analyzer_rules_last_reload_success", "analyzer_rules_loaded"); err != nil {
		t.Error(err)
	}
}

// TestServeReloadsRules runs serve on a copy of the built-in rules, breaks
// one file and reloads (POST /-/reload, then SIGHUP): the reload is refused
// with file:line, the old rules keep judging pushed entries the same way;
// once fixed, the reload succeeds and a new rule file takes effect.
func TestServeReloadsRules(t *testing.T) {
	dir := t.TempDir()
	fixturetest.CopyBuiltinRules(t, dir)
	vllmFile := filepath.Join(dir, "vllm.yaml")
	badLine := lineOf(t, vllmFile, "- id: vllm.no_kv_memory")
	addr := freeAddr(t)
	base := "http://" + addr
	stop := serveInProcess(t, "--db", filepath.Join(t.TempDir(), "r.db"), "--rules", dir, "--no-journal", "--listen", addr)
	defer stop()
	waitServing(t, base)

	st := rulesStatus(t, base)
	if !st.LastReload.OK || st.Source != dir || st.Rules == 0 || len(st.Engines) == 0 {
		t.Fatalf("initial status: %+v", st)
	}
	builtinRules := st.Rules
	compareRulesMetrics(t, base, 1, builtinRules)

	// A new site file plus a broken built-in file: nothing of the new set is used.
	if err := os.WriteFile(filepath.Join(dir, "site.yaml"), []byte(siteRule), 0o644); err != nil {
		t.Fatal(err)
	}
	editFile(t, vllmFile, goodMatch, badMatch)
	code, body := httpDo(t, http.MethodPost, base+rulesapi.ReloadPath)
	wantErr := fmt.Sprintf("vllm.yaml:%d: rule \\\"vllm.no_kv_memory\\\": match", badLine) // JSON-escaped quotes
	if code != http.StatusBadRequest || !strings.Contains(body, wantErr) {
		t.Fatalf("reload of a broken file: %d %s\nwant 400 mentioning %s", code, body, wantErr)
	}
	st = rulesStatus(t, base)
	if st.LastReload.OK || st.Rules != builtinRules || !strings.Contains(st.LastReload.Error, fmt.Sprintf("vllm.yaml:%d:", badLine)) {
		t.Errorf("status after a failed reload: %+v", st)
	}
	compareRulesMetrics(t, base, 0, builtinRules) // the old set stays in use
	t0 := time.Date(2026, 10, 1, 21, 40, 0, 0, time.UTC)
	pushAttempt(t, base, "0123456789abcdef0123456789abcd01", t0, noMemLine)
	pushAttempt(t, base, "0123456789abcdef0123456789abcd02", t0.Add(time.Minute), frobLine)
	if v := verdictOf(t, base, "0123456789abcdef0123456789abcd01"); v != "kv_cache_insufficient" {
		t.Errorf("old rules after a failed reload: verdict %q, want kv_cache_insufficient", v)
	}
	if v := verdictOf(t, base, "0123456789abcdef0123456789abcd02"); v != "running" {
		t.Errorf("the rule of a set that failed to load judged an attempt: verdict %q, want running", v)
	}

	// Fixed: the reload succeeds and the new rule judges new entries.
	editFile(t, vllmFile, badMatch, goodMatch)
	code, body = httpDo(t, http.MethodPost, base+rulesapi.ReloadPath)
	if code != http.StatusOK {
		t.Fatalf("reload of fixed files: %d %s", code, body)
	}
	st = rulesStatus(t, base)
	if !st.LastReload.OK || st.LastReload.Error != "" || st.Rules != builtinRules+1 || !strings.Contains(strings.Join(st.Files, " "), "site.yaml") {
		t.Errorf("status after a good reload: %+v", st)
	}
	compareRulesMetrics(t, base, 1, builtinRules+1)
	pushAttempt(t, base, "0123456789abcdef0123456789abcd03", t0.Add(2*time.Minute), frobLine)
	pushAttempt(t, base, "0123456789abcdef0123456789abcd04", t0.Add(3*time.Minute), noMemLine)
	if v := verdictOf(t, base, "0123456789abcdef0123456789abcd03"); v != "config_error" {
		t.Errorf("new rule after the reload: verdict %q, want config_error", v)
	}
	if v := verdictOf(t, base, "0123456789abcdef0123456789abcd04"); v != "kv_cache_insufficient" {
		t.Errorf("built-in rule after the reload: verdict %q, want kv_cache_insufficient", v)
	}

	// SIGHUP does the same.
	editFile(t, vllmFile, goodMatch, badMatch)
	before := st.LastReload.Time
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the SIGHUP reload to fail", func() bool {
		st = rulesStatus(t, base)
		return st.LastReload.Time.After(before) && !st.LastReload.OK
	})
	if !strings.Contains(st.LastReload.Error, fmt.Sprintf("vllm.yaml:%d:", badLine)) || st.Rules != builtinRules+1 {
		t.Errorf("status after a failed SIGHUP reload: %+v", st)
	}
	editFile(t, vllmFile, badMatch, goodMatch)
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the SIGHUP reload to succeed", func() bool { return rulesStatus(t, base).LastReload.OK })
}
