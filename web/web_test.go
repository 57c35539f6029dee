package web

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/store"
	"github.com/llmfleet/analyzer/store/storetest"
)

// newServer serves a real SQLite database holding storetest.Attempts.
func newServer(t *testing.T) *httptest.Server {
	t.Helper()
	return serveAttempts(t, storetest.Attempts(), Options{Location: time.UTC})
}

// serveAttempts saves as into a new SQLite file and serves it with opts.
func serveAttempts(t *testing.T, as []*domain.Attempt, opts Options) *httptest.Server {
	t.Helper()
	db, err := store.Open(filepath.Join(t.TempDir(), "web.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.SaveAttempts(context.Background(), as, nil); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(New(db, opts))
	t.Cleanup(srv.Close)
	return srv
}

func get(t *testing.T, srv *httptest.Server, path string) (int, string, http.Header) {
	t.Helper()
	resp, err := http.Get(srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b), resp.Header
}

func mustContain(t *testing.T, where, body string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(body, w) {
			t.Errorf("%s: missing %q", where, w)
		}
	}
}

func mustNotContain(t *testing.T, where, body string, bad ...string) {
	t.Helper()
	for _, b := range bad {
		if strings.Contains(body, b) {
			t.Errorf("%s: must not contain %q", where, b)
		}
	}
}

func TestListPage(t *testing.T) {
	srv := newServer(t)
	code, body, h := get(t, srv, "/")
	if code != http.StatusOK {
		t.Fatalf("GET / = %d", code)
	}
	if ct := h.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
		t.Errorf("Content-Type = %q", ct)
	}
	mustContain(t, "list", body,
		"3 × 262144 bf16 KV 11.05 GB 527489 KV tokens", // domain.Shape.Summary of the OOM attempt
		"8 × 131072 fp8_e4m3 1048576 KV tokens",
		`<span class="badge fail">oom_graph_capture</span>`,
		`<span class="badge ok">ready</span>`,
		`<span class="badge fail">unknown_failure</span>`,
		`<span class="chip warn">clean_exit_worker_death</span>`,
		"frank-primary.service", "bob-sglang.service", "2026-10-01<br>21:40:00 -07:00",
		// ids hold '/', escaped in links
		`href="/attempts/dankserver%2Ffrank-primary.service%2F3f2a9c1d0b7e4e51a6c2d8f90e1b2a3c"`,
		// filter boxes filled from the facets
		"<option>rackbox</option>", "<option>vllm</option>", "<option>oom_graph_capture</option>",
		`type="datetime-local" name="since"`, "3 attempts, newest first",
		`href="/static/style.css"`)
	mustNotContain(t, "list", body, "http://", "https://", "<script>")
	// Newest first: the SGLang attempt (06:00Z) before the OOM (04:40Z).
	if i, j := strings.Index(body, attemptURL(storetest.IDReady)), strings.Index(body, attemptURL(storetest.IDOOM)); i < 0 || j < 0 || i > j {
		t.Errorf("rows not newest first (sglang at %d, frank-primary at %d)", i, j)
	}
}

func TestListPageFilters(t *testing.T) {
	srv := newServer(t)
	oomLink := attemptURL(storetest.IDOOM)
	readyLink := attemptURL(storetest.IDReady)
	unknownLink := attemptURL(storetest.IDUnknown)

	_, body, _ := get(t, srv, "/?verdict=ready")
	mustContain(t, "verdict=ready", body, readyLink, "1 attempt, newest first", `<option selected>ready</option>`)
	mustNotContain(t, "verdict=ready", body, oomLink, unknownLink, "3 × 262144")

	_, body, _ = get(t, srv, "/?host=dankserver&engine=vllm")
	mustContain(t, "host+engine", body, oomLink)
	mustNotContain(t, "host+engine", body, readyLink, unknownLink)

	// By default datetime-local values are read on each host's own clock:
	// 21:50 is after dankserver's 21:40 -07:00 OOM and before its 22:00
	// -07:00 unknown failure; rackbox's ready attempt is on 2 October.
	_, body, _ = get(t, srv, "/?since=2026-10-01T21:50")
	mustContain(t, "since (host clock)", body, readyLink, unknownLink, `value="2026-10-01T21:50"`, "Times in each host&#39;s own zone")
	mustNotContain(t, "since (host clock)", body, oomLink)
	_, body, _ = get(t, srv, "/?until=2026-10-01T21:50")
	mustContain(t, "until (host clock)", body, oomLink)
	mustNotContain(t, "until (host clock)", body, readyLink, unknownLink)

	// tz=UTC reads them (and shows every time) in UTC: 05:00Z is after
	// the OOM (04:40Z), at the unknown failure (05:00Z), before the ready
	// attempt (06:00Z).
	_, body, _ = get(t, srv, "/?since=2026-10-02T05:00&tz=UTC")
	mustContain(t, "since (UTC)", body, readyLink, unknownLink, `value="2026-10-02T05:00"`, "Times in UTC zone", "05:00:00 &#43;00:00")
	mustNotContain(t, "since (UTC)", body, oomLink)
	_, body, _ = get(t, srv, "/?until=2026-10-02T05:00&tz=UTC")
	mustContain(t, "until (UTC)", body, oomLink)
	mustNotContain(t, "until (UTC)", body, readyLink, unknownLink)

	// An IANA zone, as page.js sends the browser's; an unknown one is a 400.
	_, body, _ = get(t, srv, "/?since=2026-10-02T07:00&tz=Europe/Berlin")
	mustContain(t, "since (Berlin)", body, readyLink, unknownLink, "Times in Europe/Berlin zone")
	mustNotContain(t, "since (Berlin)", body, oomLink)
	if code, body, _ := get(t, srv, "/?tz=Mars/Olympus"); code != http.StatusBadRequest || !strings.Contains(body, "IANA zone name") {
		t.Errorf("unknown tz: status %d", code)
	}

	_, body, _ = get(t, srv, "/?verdict=oom_weights")
	mustContain(t, "no match", body, "No attempts match")

	code, body, _ := get(t, srv, "/?since=someday")
	if code != http.StatusBadRequest {
		t.Errorf("bad since: status %d, want 400", code)
	}
	mustContain(t, "bad since", body, "Invalid time filter", "&#34;someday&#34;", "yesterday")
	// The CLI's grammar: all the attempts are before today.
	_, body, _ = get(t, srv, "/?since=today")
	mustContain(t, "since=today", body, "No attempts match")
}

func TestAttemptPage(t *testing.T) {
	srv := newServer(t)
	code, body, _ := get(t, srv, attemptURL(storetest.IDOOM))
	if code != http.StatusOK {
		t.Fatalf("attempt page = %d", code)
	}
	a := storetest.Attempts()[0]
	mustContain(t, "attempt", body,
		"<h1>frank-primary.service", `badge big fail">oom_graph_capture`,
		// the note (html/template escapes nothing in it but quotes)
		"vLLM ran out of device memory while capturing HIP graphs for 3 sequences of 262144 tokens",
		// header
		"dankserver", a.InvocationID, "frank-primary-qwen", "vllm 0.19.2&#43;rocm7.0",
		"2026-10-01 21:40:00 -07:00", "2026-10-01 21:45:12 -07:00", "after 5m13s",
		"<dt>Main process</dt><dd>exited with status 0", "CODE=exited STATUS=0", "<dt>Ended by</dt><dd>exit</dd>",
		"journalctl _SYSTEMD_INVOCATION_ID="+a.InvocationID,
		"— <span class=\"dim\">before</span> · 3 <span class=\"dim\">after</span>",
		// shape table, all keys
		"<th>kv_cache_memory_bytes</th>", "11047010304 (10.29 GiB)", "<th>max_num_seqs</th>",
		"<th>swap_space_gib</th>", "<th>enforce_eager</th>", "/models/Qwen3-Coder-30B-A3B-Instruct",
		// timeline with seconds since start
		`<span class="phase">kv_alloc</span>`, "&#43;288.8 s", "Available KV cache memory: 10.29 GiB", "&#43;290.0 s", `<tr class="current"><td><span class="phase">graph_capture</span>`,
		// findings
		"vllm.oom_graph_capture", "systemd.clean_exit_worker_death", `<span class="sev sev-critical">critical</span>`,
		"HIP out of memory during graph capture (tried to allocate 76.00 MiB)",
		// evidence with timestamps, context with the decisive line highlighted
		"torch.OutOfMemoryError: <mark>HIP out of memory. Tried to allocate 76.00 MiB</mark>. GPU 0 has a total capacity",
		"2026-10-01 21:45:01.123", "EngineCore failed to start.",
		`<div class="entry hit err decisive" id="decisive"><span class="ts">2026-10-01 21:45:01.123</span>`,
		"Traceback (most recent call last):", "in capture_begin",
		apiURL(storetest.IDOOM))

	_, body, _ = get(t, srv, attemptURL(storetest.IDReady))
	mustContain(t, "ready attempt", body, "still running", "<dt>Main process</dt><dd>unknown", `badge big ok">ready`,
		"&#43;95.5 s", "No rule fired.", "chunked_prefill_size=8192 mem_fraction_static=0.85 schedule_policy=lpm")
}

func TestLogTextIsEscaped(t *testing.T) {
	srv := newServer(t)
	_, body, _ := get(t, srv, attemptURL(storetest.IDUnknown))
	mustContain(t, "unknown attempt", body, "&lt;script&gt;alert(1)&lt;/script&gt;", "&lt;*&gt;", "&lt;b&gt;(b6500)&lt;/b&gt;")
	mustNotContain(t, "unknown attempt", body, "<script>", "<*>", "<b>")
	// The page carries no script at all.
	mustNotContain(t, "unknown attempt", body, "<script>")
}

func decode(t *testing.T, body string) map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(body))
	dec.UseNumber() // to tell numbers from strings exactly
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, body)
	}
	return m
}

func TestAPIList(t *testing.T) {
	srv := newServer(t)
	code, body, h := get(t, srv, "/api/v1/attempts")
	if code != http.StatusOK || !strings.HasPrefix(h.Get("Content-Type"), "application/json") {
		t.Fatalf("status %d, type %q", code, h.Get("Content-Type"))
	}
	list, ok := decode(t, body)["attempts"].([]any)
	if !ok || len(list) != 3 {
		t.Fatalf("attempts: %s", body)
	}
	first := list[0].(map[string]any)
	if first["unit"] != "bob-sglang.service" {
		t.Errorf("newest first: first unit = %v", first["unit"])
	}
	if _, has := first["exit_status"]; has {
		t.Errorf("unknown exit_status must be omitted: %v", first["exit_status"])
	}
	oom := list[2].(map[string]any)
	for k, want := range map[string]any{
		"unit": "frank-primary.service", "host": "dankserver", "engine": "vllm", "verdict": "oom_graph_capture",
		"phase": "graph_capture", "rule": "vllm.oom_graph_capture", "container": "frank-primary-qwen",
		"ended_by": "exit", "started_at": "2026-10-01T21:40:00.000000-07:00",
		"exit_status": json.Number("0"), "restart_counter_after": json.Number("3"),
	} {
		if oom[k] != want {
			t.Errorf("%s = %#v, want %#v", k, oom[k], want)
		}
	}
	if f, _ := oom["findings"].([]any); len(f) != 2 || f[0] != "oom_graph_capture" || f[1] != "clean_exit_worker_death" {
		t.Errorf("findings = %v", oom["findings"])
	}
	shape := oom["shape"].(map[string]any)
	for k, want := range map[string]any{
		"max_model_len": json.Number("262144"), "max_num_seqs": json.Number("3"),
		"kv_cache_memory_bytes": json.Number("11047010304"), "kv_cache_tokens": json.Number("527489"),
		"max_concurrency": json.Number("2.01"), "kv_cache_dtype": "auto", "enforce_eager": false,
	} {
		if shape[k] != want {
			t.Errorf("shape.%s = %#v (%T), want %#v", k, shape[k], shape[k], want)
		}
	}
	if ev, _ := oom["evidence"].([]any); len(ev) != 3 || ev[0].(map[string]any)["message"] != storetest.OOMLine {
		t.Errorf("evidence = %v", oom["evidence"])
	}

	for _, tc := range []struct {
		query string
		n     int
	}{
		{"verdict=oom_graph_capture", 1}, {"host=dankserver", 2}, {"unit=frank-draft.service", 1},
		{"engine=sglang", 1}, {"since=2026-10-02T05:00:00Z", 2}, {"until=2026-10-01T22:00:00-07:00", 1},
		{"since=2026-10-01T21:00:00-07:00&until=2026-10-02T07:00:00%2B02:00", 1}, {"limit=2", 2}, {"verdict=timeout", 0},
		{"until=2026-10-02T07:00:00+02:00", 1}, // unencoded '+' arrives as a space
	} {
		t.Run(tc.query, func(t *testing.T) {
			code, body, _ := get(t, srv, "/api/v1/attempts?"+tc.query)
			got, _ := decode(t, body)["attempts"].([]any)
			if code != 200 || len(got) != tc.n {
				t.Errorf("?%s: status %d, %d attempts, want %d", tc.query, code, len(got), tc.n)
			}
		})
	}
	// An empty result is an empty list, not null.
	_, body, _ = get(t, srv, "/api/v1/attempts?verdict=timeout")
	mustContain(t, "empty", body, `{"attempts":[],"total":0}`)

	for _, q := range []string{"since=someday", "until=2026-13-01", "limit=0", "limit=x", "limit=10001"} {
		t.Run(q, func(t *testing.T) {
			code, body, _ := get(t, srv, "/api/v1/attempts?"+q)
			if code != http.StatusBadRequest || decode(t, body)["error"] == nil {
				t.Errorf("?%s: status %d body %s, want 400 with error", q, code, body)
			}
			if strings.HasPrefix(q, "limit") && !strings.Contains(body, "at most 10000") {
				t.Errorf("?%s: the error does not name the cap: %s", q, body)
			}
		})
	}
	// The README's paging: next absent on the last page, prev on the
	// first, never null.
	_, body, _ = get(t, srv, "/api/v1/attempts?limit=1")
	if m := decode(t, body); m["next"] == nil || strings.Contains(body, `"prev"`) || strings.Contains(body, "null") {
		t.Errorf("first page of one: %s", body)
	}
	// since and until take what the CLI's --since takes.
	day := time.Now().UTC().Truncate(24 * time.Hour)
	for q, same := range map[string]string{
		"since=2026-10-02":       "since=2026-10-02T00:00:00Z",
		"until=yesterday":        "until=" + day.AddDate(0, 0, -1).Format(time.RFC3339),
		"since=1000d":            "since=" + time.Now().AddDate(0, 0, -1000).Format(time.RFC3339),
		"since=2026-10-01 21:45": "since=2026-10-01T21:45:00Z",
	} {
		code, body, _ := get(t, srv, "/api/v1/attempts?"+url.PathEscape(q))
		_, want, _ := get(t, srv, "/api/v1/attempts?"+url.PathEscape(same))
		if code != 200 || body != want {
			t.Errorf("?%s: status %d\n%s\nwant as ?%s:\n%s", q, code, body, same, want)
		}
	}
}

func TestAPIGet(t *testing.T) {
	srv := newServer(t)
	code, body, _ := get(t, srv, apiURL(storetest.IDOOM))
	if code != http.StatusOK {
		t.Fatalf("status %d: %s", code, body)
	}
	m := decode(t, body)
	if m["id"] != storetest.IDOOM || m["verdict"] != "oom_graph_capture" || m["phase"] != "graph_capture" {
		t.Errorf("contract fields: %v %v %v", m["id"], m["verdict"], m["phase"])
	}
	if m["shape"].(map[string]any)["max_model_len"] != json.Number("262144") {
		t.Errorf("shape.max_model_len = %#v", m["shape"].(map[string]any)["max_model_len"])
	}
	fd, _ := m["findings_detail"].([]any)
	if len(fd) != 2 {
		t.Fatalf("findings_detail = %v", m["findings_detail"])
	}
	f0 := fd[0].(map[string]any)
	if f0["id"] != "oom_graph_capture" || f0["rule"] != "vllm.oom_graph_capture" || f0["severity"] != "critical" ||
		f0["phase"] != "graph_capture" || f0["time"] != "2026-10-01T21:45:01.123456-07:00" ||
		f0["captures"].(map[string]any)["alloc"] != "76.00 MiB" {
		t.Errorf("findings_detail[0] = %v", f0)
	}
	tl, _ := m["timeline"].([]any)
	if len(tl) != 9 {
		t.Fatalf("timeline = %v", m["timeline"])
	}
	gc := tl[6].(map[string]any)
	if gc["phase"] != "graph_capture" || gc["seconds"] != json.Number("290") || gc["time"] != "2026-10-01T21:44:50.000000-07:00" ||
		gc["cursor"] != "s=1a2b;i=4b0" || !strings.HasPrefix(gc["message"].(string), "Capturing CUDA graphs") {
		t.Errorf("timeline[6] = %v", gc)
	}
	if ctx, _ := m["context"].([]any); len(ctx) != 5 {
		t.Errorf("context = %v", m["context"])
	}

	code, body, _ = get(t, srv, apiURL("no-such-attempt"))
	if code != http.StatusNotFound || decode(t, body)["error"] == nil {
		t.Errorf("unknown id: %d %s", code, body)
	}
}

func TestNotFoundAndHealth(t *testing.T) {
	srv := newServer(t)
	code, body, _ := get(t, srv, "/attempts/no-such-attempt")
	if code != http.StatusNotFound {
		t.Errorf("unknown attempt page: %d", code)
	}
	mustContain(t, "404 attempt", body, "Attempt not found", "no-such-attempt", "<html")

	code, body, _ = get(t, srv, "/attempts/%3Cscript%3Ealert(1)%3C%2Fscript%3E")
	if code != http.StatusNotFound {
		t.Errorf("unknown attempt page: %d", code)
	}
	mustNotContain(t, "404 with markup id", body, "<script>")

	code, _, _ = get(t, srv, "/nowhere")
	if code != http.StatusNotFound {
		t.Errorf("/nowhere: %d", code)
	}
	code, body, _ = get(t, srv, "/api/v1/nowhere")
	if code != http.StatusNotFound || decode(t, body)["error"] == nil {
		t.Errorf("/api/v1/nowhere: %d %s", code, body)
	}

	code, body, _ = get(t, srv, "/healthz")
	if code != http.StatusOK || body != "ok\ndatabase ok\n" {
		t.Errorf("healthz: %d %q", code, body)
	}

	code, body, h := get(t, srv, "/static/style.css")
	if code != http.StatusOK || !strings.HasPrefix(h.Get("Content-Type"), "text/css") || !strings.Contains(body, ".badge") {
		t.Errorf("style.css: %d %q", code, h.Get("Content-Type"))
	}
}

// An empty database says how to fill it; a filter that matches nothing
// in a full one says so instead.
func TestEmptyDatabaseSaysHowToFillIt(t *testing.T) {
	srv := serveAttempts(t, nil, Options{Location: time.UTC})
	_, body, _ := get(t, srv, "/")
	mustContain(t, "empty", body, "No boot attempts are stored yet", "analyzer replay --db DB", "analyzer serve --db DB")
	_, body, _ = get(t, newServer(t), "/?verdict=oom_weights")
	mustContain(t, "no match", body, "No attempts match")
	mustNotContain(t, "no match", body, "No boot attempts are stored yet")
}
