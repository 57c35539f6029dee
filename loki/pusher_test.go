package loki_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grafana/loki/pkg/push"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/loki"
	"github.com/llmfleet/analyzer/metrics"
)

// fakeLoki is an in-process Loki push endpoint: it decodes real snappy
// protobuf requests with the push types, answers the scripted statuses
// first (then 204), and keeps what it accepted.
type fakeLoki struct {
	t       *testing.T
	mu      sync.Mutex
	script  []int
	bodies  [][]byte // every request body, accepted or not
	headers []http.Header
	got     []push.Stream // streams of accepted requests
}

func (f *fakeLoki) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	req, rerr := loki.DecodeProtobuf(body, 10<<20)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.bodies = append(f.bodies, body)
	f.headers = append(f.headers, r.Header.Clone())
	if rerr != nil || r.URL.Path != loki.PushPath || r.Header.Get("Content-Type") != "application/x-protobuf" {
		f.t.Errorf("bad push request: path %s, type %q, err %v", r.URL.Path, r.Header.Get("Content-Type"), rerr)
		w.WriteHeader(400)
		return
	}
	if len(f.script) > 0 {
		code := f.script[0]
		f.script = f.script[1:]
		if code == 429 {
			w.Header().Set("Retry-After", "0")
		}
		w.WriteHeader(code)
		return
	}
	f.got = append(f.got, req.Streams...)
	w.WriteHeader(204)
}

func (f *fakeLoki) accepted() []push.Stream {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]push.Stream(nil), f.got...)
}

func newPusher(t *testing.T, url string, m *metrics.Metrics, sm bool) *loki.Pusher {
	t.Helper()
	p, err := loki.NewPusher(loki.PusherConfig{URL: url, TenantID: "fleet", BearerToken: "loki-token",
		StructuredMetadata: sm, BatchWait: 10 * time.Millisecond, MinBackoff: 5 * time.Millisecond,
		MaxBackoff: 20 * time.Millisecond, MaxRetries: 3, MaxAge: -1, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	p.Start()
	return p
}

func closePusher(t *testing.T, p *loki.Pusher) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestFindingsToLoki pushes the night ladder's findings through the live
// pipeline to an in-process Loki that first answers 429: the retry carries
// the same body, every (attempt, finding) arrives exactly once, with
// low-cardinality labels, the note as the line and the finding's own time.
func TestFindingsToLoki(t *testing.T) {
	fl := &fakeLoki{t: t, script: []int{429}}
	lokiSrv := httptest.NewServer(fl)
	defer lokiSrv.Close()
	m := metrics.New(metrics.Options{NoProcessMetrics: true})
	p := newPusher(t, lokiSrv.URL, m, false)

	s := newStack(t, stackOptions{findings: p})
	for _, req := range alloyBatches(t, alloy(t), readRecords(t, nightLadder), 150) {
		body, _ := loki.EncodeProtobuf(req)
		if code, msg := s.post(t, body, map[string]string{"Content-Type": "application/x-protobuf"}); code != 204 {
			t.Fatalf("%d %s", code, msg)
		}
	}
	s.flush(t)
	s.flush(t) // a second flush offers the same findings again: no duplicates
	closePusher(t, p)

	attempts := map[string]*domain.Attempt{}
	wantFindings := map[string]domain.Finding{}
	for _, a := range listAttempts(t, s.db) {
		attempts[a.ID] = a
		for _, f := range a.Findings {
			wantFindings[a.ID+"/"+f.ID] = f
		}
	}
	if len(wantFindings) < 10 {
		t.Fatalf("only %d findings in the fixture", len(wantFindings))
	}

	fl.mu.Lock()
	if len(fl.bodies) < 2 || !bytes.Equal(fl.bodies[0], fl.bodies[1]) {
		t.Errorf("the request retried after 429 must carry the same body (%d requests)", len(fl.bodies))
	}
	for _, h := range fl.headers {
		if h.Get("X-Scope-OrgID") != "fleet" || h.Get("Authorization") != "Bearer loki-token" {
			t.Errorf("headers: tenant %q auth %q", h.Get("X-Scope-OrgID"), h.Get("Authorization"))
		}
	}
	fl.mu.Unlock()

	seen := map[string]bool{}
	for _, st := range fl.accepted() {
		ls, err := loki.ParseLabels(st.Labels)
		if err != nil {
			t.Fatal(err)
		}
		lab := map[string]string{}
		for _, l := range ls {
			lab[l.Name] = l.Value
		}
		for name := range lab {
			switch name {
			case "job", "host", "unit", "engine", "finding", "verdict", "severity":
			default:
				t.Errorf("stream label %s is not a low-cardinality one: %s", name, st.Labels)
			}
		}
		if lab["job"] != "analyzer" || lab["host"] != "dankserver" || lab["finding"] == "" || lab["severity"] == "" {
			t.Errorf("stream labels %s", st.Labels)
		}
		for _, e := range st.Entries {
			id := logfmtField(e.Line, "attempt_id")
			key := id + "/" + lab["finding"]
			if seen[key] {
				t.Errorf("finding %s pushed twice", key)
			}
			seen[key] = true
			f, ok := wantFindings[key]
			if !ok {
				t.Errorf("pushed finding %s is not in the database", key)
				continue
			}
			a := attempts[id]
			if !e.Timestamp.Equal(f.Time) {
				t.Errorf("%s: timestamp %s, want the finding's time %s", key, e.Timestamp, f.Time)
			}
			if !strings.HasPrefix(e.Line, strings.Join(strings.Fields(f.Note), " ")+" |") {
				t.Errorf("%s: line %q does not start with the note", key, e.Line)
			}
			if logfmtField(e.Line, "invocation_id") != a.InvocationID || lab["unit"] != a.Unit ||
				lab["engine"] != a.Engine || lab["verdict"] != string(a.Verdict) || lab["severity"] != string(f.Severity) {
				t.Errorf("%s: labels %s line %q do not match the attempt", key, st.Labels, e.Line)
			}
			if sum := a.Shape.Summary(); sum != "" && !strings.Contains(e.Line, `shape="`+sum+`"`) {
				t.Errorf("%s: line %q lacks the shape %q", key, e.Line, sum)
			}
			if len(e.StructuredMetadata) != 0 {
				t.Errorf("structured metadata sent although off")
			}
		}
	}
	if len(seen) != len(wantFindings) {
		t.Errorf("pushed %d findings, the database has %d", len(seen), len(wantFindings))
	}
	delivered, failed, _ := m.LokiTotals()
	if int(delivered) != len(wantFindings) || failed != 0 {
		t.Errorf("delivered %d failed %d", delivered, failed)
	}
	// One retry (after the scripted failure), nothing left queued.
	compareMetrics(t, m, `# HELP analyzer_loki_push_retries_total Push requests to Loki retried after 429, 5xx or a network error.
# TYPE analyzer_loki_push_retries_total counter
analyzer_loki_push_retries_total 1
# HELP analyzer_loki_push_queue_length Findings waiting to be pushed to Loki.
# TYPE analyzer_loki_push_queue_length gauge
analyzer_loki_push_queue_length 0
`+pushFailures(nil), "analyzer_loki_push_retries_total", "analyzer_loki_push_queue_length", "analyzer_loki_push_failures_total")
}

// TestPushRejectedIsDropped: a 400 is not retried; the findings are
// counted as rejected.
func TestPushRejectedIsDropped(t *testing.T) {
	fl := &fakeLoki{t: t, script: []int{400}}
	srv := httptest.NewServer(fl)
	defer srv.Close()
	m := metrics.New(metrics.Options{NoProcessMetrics: true})
	p := newPusher(t, srv.URL+loki.PushPath, m, true)
	a, f := sampleFinding()
	if !p.Offer(a, f) || p.Offer(a, f) {
		t.Fatal("Offer must take a finding once")
	}
	closePusher(t, p)
	if len(fl.bodies) != 1 {
		t.Fatalf("%d requests, want 1 (no retry after 400)", len(fl.bodies))
	}
	compareMetrics(t, m, pushFailures(map[string]int{domain.LokiPushRejected: 1}), "analyzer_loki_push_failures_total")
}

// TestPushRetriesExhausted: 5xx until the retry budget ends drops the
// batch, counted.
func TestPushRetriesExhausted(t *testing.T) {
	fl := &fakeLoki{t: t, script: []int{503, 502, 500, 503, 503}}
	srv := httptest.NewServer(fl)
	defer srv.Close()
	m := metrics.New(metrics.Options{NoProcessMetrics: true})
	p := newPusher(t, srv.URL, m, false)
	a, f := sampleFinding()
	p.Offer(a, f)
	closePusher(t, p)
	if len(fl.bodies) != 4 { // 1 + MaxRetries 3
		t.Errorf("%d requests, want 4", len(fl.bodies))
	}
	compareMetrics(t, m, pushFailures(map[string]int{domain.LokiPushExhausted: 1}), "analyzer_loki_push_failures_total")
}

// TestStructuredMetadataMode: with structured metadata on, the line is the
// note alone and the details travel as metadata.
func TestStructuredMetadataMode(t *testing.T) {
	fl := &fakeLoki{t: t}
	srv := httptest.NewServer(fl)
	defer srv.Close()
	p := newPusher(t, srv.URL, nil, true)
	a, f := sampleFinding()
	p.Offer(a, f)
	closePusher(t, p)
	got := fl.accepted()
	if len(got) != 1 || len(got[0].Entries) != 1 {
		t.Fatalf("streams %+v", got)
	}
	e := got[0].Entries[0]
	if e.Line != "vLLM ran out of memory capturing graphs." {
		t.Errorf("line %q", e.Line)
	}
	md := map[string]string{}
	for _, l := range e.StructuredMetadata {
		md[l.Name] = l.Value
	}
	if md["attempt_id"] != a.ID || md["invocation_id"] != a.InvocationID || md["shape"] != a.Shape.Summary() || md["rule"] != f.Rule {
		t.Errorf("metadata %v", md)
	}
	if want := `{engine="vllm", finding="oom_graph_capture", host="gpu-01", job="analyzer", severity="critical", unit="vllm.service", verdict="oom_graph_capture"}`; got[0].Labels != want {
		t.Errorf("labels %s\nwant %s", got[0].Labels, want)
	}
}

func sampleFinding() (*domain.Attempt, domain.Finding) {
	at := time.Date(2026, 10, 1, 21, 45, 1, 123456000, time.UTC)
	a := &domain.Attempt{ID: "abc123", Host: "gpu-01", Unit: "vllm.service", InvocationID: "0123456789abcdef0123456789abcdef",
		Engine: "vllm", Verdict: domain.VerdictOOMGraphCapture, EndedBy: domain.EndedByExit,
		Shape: domain.Shape{domain.ShapeMaxModelLen: int64(262144), domain.ShapeMaxNumSeqs: int64(3)}}
	f := domain.Finding{ID: "oom_graph_capture", Rule: "vllm.oom_graph_capture", Severity: domain.SeverityCritical,
		Phase: domain.PhaseGraphCapture, Time: at, Note: "vLLM ran out of memory\n capturing graphs."}
	a.Findings = []domain.Finding{f}
	return a, f
}

// logfmtField reads key=value (or key="quoted") from the part of a line
// after " | ".
func logfmtField(line, key string) string {
	_, rest, ok := strings.Cut(line, " | ")
	if !ok {
		return ""
	}
	i := strings.Index(" "+rest, " "+key+"=")
	if i < 0 {
		return ""
	}
	v := rest[i+len(key)+1:]
	if strings.HasPrefix(v, `"`) {
		end := strings.Index(v[1:], `"`)
		return v[1 : end+1]
	}
	if j := strings.IndexByte(v, ' '); j >= 0 {
		v = v[:j]
	}
	return v
}

// ageLoki applies Loki's reject_old_samples rule per entry, as its
// ingester does: it keeps the valid entries, and answers 400 with one
// "entry ... ignored" line per refused entry and the stream's "total
// ignored: N out of M" line (pkg/ingester/stream.go).
type ageLoki struct {
	mu       sync.Mutex
	oldest   time.Time
	kept     int
	requests int
}

func (l *ageLoki) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	req, _, rerr := loki.DecodeRequest(r, 10<<20)
	if rerr != nil {
		w.WriteHeader(400)
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.requests++
	var body strings.Builder
	for _, s := range req.Streams {
		ignored := 0
		for _, e := range s.Entries {
			if e.Timestamp.Before(l.oldest) {
				ignored++
				fmt.Fprintf(&body, "entry with timestamp %s ignored, reason: 'entry too far behind, entry timestamp is: %s, oldest acceptable timestamp is: %s',\n",
					e.Timestamp, e.Timestamp.Format(time.RFC3339), l.oldest.Format(time.RFC3339))
				continue
			}
			l.kept++
		}
		if ignored > 0 {
			fmt.Fprintf(&body, "user 'fleet', total ignored: %d out of %d for stream: %s\n", ignored, len(s.Entries), s.Labels)
		}
	}
	if body.Len() > 0 {
		http.Error(w, body.String(), http.StatusBadRequest)
		return
	}
	w.WriteHeader(204)
}

// TestPushOfOldFindings: findings older than MaxAge are not sent (counted
// too_old); of a batch Loki partly refuses (its own age limit is stricter
// here), the entries it kept count as delivered and only the refused ones
// as rejected, from Loki's answer.
func TestPushOfOldFindings(t *testing.T) {
	now := time.Now()
	fl := &ageLoki{oldest: now.Add(-48 * time.Hour)}
	srv := httptest.NewServer(fl)
	defer srv.Close()
	m := metrics.New(metrics.Options{NoProcessMetrics: true})
	p, err := loki.NewPusher(loki.PusherConfig{URL: srv.URL, BatchWait: 10 * time.Millisecond, MaxAge: 7 * 24 * time.Hour, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	p.Start()
	for i, age := range []time.Duration{10 * 24 * time.Hour, 9 * 24 * time.Hour, 3 * 24 * time.Hour, time.Hour, 2 * time.Hour} {
		a, f := sampleFinding()
		a.ID = fmt.Sprintf("a%d", i)
		f.Time = now.Add(-age)
		a.Findings = []domain.Finding{f}
		p.Offer(a, f)
	}
	closePusher(t, p)
	delivered, failed, tooOld := m.LokiTotals()
	if tooOld != 2 || delivered != 2 || failed != 1 || fl.kept != 2 || fl.requests != 1 {
		t.Errorf("too old %d (want 2), delivered %d (2), rejected %d (1); Loki kept %d in %d requests", tooOld, delivered, failed, fl.kept, fl.requests)
	}
	compareMetrics(t, m, pushFailures(map[string]int{domain.LokiPushTooOld: 2, domain.LokiPushRejected: 1}), "analyzer_loki_push_failures_total")
}

// TestRetryAfterAndJitter: a 429 with Retry-After as an HTTP date is
// waited for; without it, retries wait between half and all of the
// backoff (jitter), never the same fixed interval.
func TestRetryAfterAndJitter(t *testing.T) {
	var mu sync.Mutex
	var times []time.Time
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		times = append(times, time.Now())
		n++
		switch {
		case n == 1:
			w.Header().Set("Retry-After", time.Now().Add(2*time.Second).UTC().Format(http.TimeFormat))
			w.WriteHeader(429)
		case n <= 6:
			w.WriteHeader(503)
		default:
			w.WriteHeader(204)
		}
	}))
	defer srv.Close()
	m := metrics.New(metrics.Options{NoProcessMetrics: true})
	p, err := loki.NewPusher(loki.PusherConfig{URL: srv.URL, BatchWait: 10 * time.Millisecond, MinBackoff: 40 * time.Millisecond,
		MaxBackoff: 40 * time.Millisecond, MaxRetries: 10, MaxAge: -1, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	p.Start()
	a, f := sampleFinding()
	p.Offer(a, f)
	closePusher(t, p)
	mu.Lock()
	defer mu.Unlock()
	if len(times) != 7 {
		t.Fatalf("%d requests, want 7", len(times))
	}
	// HTTP dates have whole seconds: the wait is 1-2 s.
	if d := times[1].Sub(times[0]); d < time.Second {
		t.Errorf("retried %v after a Retry-After 2 s ahead", d)
	}
	seen := map[time.Duration]bool{}
	for i := 2; i < len(times); i++ {
		d := times[i].Sub(times[i-1])
		if d < 20*time.Millisecond || d > 200*time.Millisecond {
			t.Errorf("retry %d after %v, want 20-40 ms (plus scheduling)", i, d)
		}
		seen[d.Round(time.Millisecond)] = true
	}
	if len(seen) < 2 {
		t.Errorf("every retry waited the same %v: no jitter", times[2].Sub(times[1]))
	}
}
