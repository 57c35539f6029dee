package metrics_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/internal/fixturetest"
	"github.com/llmfleet/analyzer/metrics"
	"github.com/llmfleet/analyzer/store"
)

// The fixtures: the journals in examples/, what they must give in
// testdata/fixtures/ (copies of the shared fixtures, so that a checkout
// tests alone).
const (
	fixtures    = "../examples"
	expectedDir = "../testdata/fixtures"
)

// replay records a journal file into db as `analyzer replay` does.
func replay(t *testing.T, db *store.DB, path string) {
	t.Helper()
	if err := db.SaveAttempts(context.Background(), fixturetest.Attempts(t, path), nil); err != nil {
		t.Fatal(err)
	}
}

type expected struct {
	Attempts []struct {
		Unit     string   `json:"unit"`
		Engine   string   `json:"engine"`
		Verdict  string   `json:"verdict"`
		EndedBy  *string  `json:"ended_by"`
		Findings []string `json:"findings"`
	} `json:"attempts"`
}

// fixtureDB replays both fixture hosts into a fresh database and returns it
// with the expected files by host.
func fixtureDB(t *testing.T) (*store.DB, map[string]expected) {
	t.Helper()
	db, err := store.Open(filepath.Join(t.TempDir(), "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	exp := map[string]expected{}
	for host, name := range map[string]string{"dankserver": "dankserver-night-ladder", "dankclaw": "dankclaw-day"} {
		replay(t, db, filepath.Join(fixtures, name+".journal.json"))
		data, err := os.ReadFile(filepath.Join(expectedDir, name+".expected.json"))
		if err != nil {
			t.Fatal(err)
		}
		var e expected
		if err := json.Unmarshal(data, &e); err != nil {
			t.Fatal(err)
		}
		exp[host] = e
	}
	return db, exp
}

// expectedCounts renders, in the text format, what /metrics must export
// from the database after the fixtures, computed from the expected files:
// analyzer_attempts (every verdict, at 0 too), analyzer_attempts_ended_total
// (per unit and engine, the final verdicts it had) and analyzer_findings
// (per unit, clean_exit_worker_death at 0 or more, which an alert reads
// with delta(), and the other findings from their first attempt).
func expectedCounts(exp map[string]expected) string {
	type key struct{ host, unit, engine, label string }
	attempts := map[string]int{}
	ended := map[key]int{}
	findings := map[key]int{}
	for host, e := range exp {
		for _, a := range e.Attempts {
			attempts[a.Verdict]++
			if a.EndedBy != nil && *a.EndedBy != "" {
				ended[key{host, a.Unit, a.Engine, a.Verdict}]++
			}
			findings[key{host: host, unit: a.Unit, label: domain.FindingCleanExitWorkerDeath}] += 0
			for _, f := range a.Findings {
				findings[key{host: host, unit: a.Unit, label: f}]++
			}
		}
	}
	var b strings.Builder
	b.WriteString(`# HELP analyzer_attempts Boot attempts recorded on all units, by the verdict they have now. A gauge: an attempt counts under running until its verdict is known, and a provisional verdict (a stall) is withdrawn when the boot moves on. Per unit, use analyzer_attempts_ended_total.
# TYPE analyzer_attempts gauge
`)
	for _, v := range domain.Verdicts {
		fmt.Fprintf(&b, "analyzer_attempts{verdict=%q} %d\n", v, attempts[string(v)])
	}
	b.WriteString(`# HELP analyzer_attempts_ended_total Boot attempts that ended (exit, stop or replaced), by their final verdict; a series appears with the unit's first attempt of that verdict (alerts catch that first one with unless … offset).
# TYPE analyzer_attempts_ended_total counter
`)
	for k, n := range ended {
		fmt.Fprintf(&b, "analyzer_attempts_ended_total{engine=%q,host=%q,unit=%q,verdict=%q} %d\n", k.engine, k.host, k.unit, k.label, n)
	}
	b.WriteString(`# HELP analyzer_findings Boot attempts of the unit that have the finding (a verdict or a non-root finding) now; a gauge. Findings alerts use are exported at 0 for every unit, others from their first attempt.
# TYPE analyzer_findings gauge
`)
	for k, n := range findings {
		fmt.Fprintf(&b, "analyzer_findings{finding=%q,host=%q,unit=%q} %d\n", k.label, k.host, k.unit, n)
	}
	return b.String()
}

// TestMetricsAfterReplayMatchExpected replays both fixture hosts and checks
// /metrics: attempts per verdict, ended attempts and findings per host
// and verdict/finding, equal the expected files; the findings alerts use
// exist at 0 for every unit; the unit states are those of the latest
// attempts.
func TestMetricsAfterReplayMatchExpected(t *testing.T) {
	db, exp := fixtureDB(t)
	now := time.Unix(1790990000, 0)
	m := metrics.New(metrics.Options{Store: db, Now: func() time.Time { return now }, NoProcessMetrics: true})

	// Attempts by verdict, ended attempts and findings per unit, equal to
	// the expected files; a unit that never had a clean-exit worker death
	// (the finding an alert reads with delta()) exports it at 0, so that
	// delta() sees its first; findings no alert reads have no zero series.
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(expectedCounts(exp)),
		"analyzer_attempts", "analyzer_attempts_ended_total", "analyzer_findings"); err != nil {
		t.Error(err)
	}

	// Served over real HTTP and compared with the text format: dankclaw's
	// two units are both ready (their latest attempts never ended), the
	// night's stopped; only the current state and the last verdict (ready
	// everywhere) have a series; the seconds since ready are counted from
	// Options.Now.
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	const want = `
# HELP analyzer_unit_state 1, labelled with the state the unit's latest attempt is in (booting, ready, failed, stopped).
# TYPE analyzer_unit_state gauge
analyzer_unit_state{host="dankclaw",state="ready",unit="frank-large.service"} 1
analyzer_unit_state{host="dankclaw",state="ready",unit="frank-small.service"} 1
analyzer_unit_state{host="dankserver",state="stopped",unit="frank-primary-probe.service"} 1
analyzer_unit_state{host="dankserver",state="stopped",unit="frank-primary.service"} 1
# HELP analyzer_unit_restarts_total Restarts systemd scheduled after an attempt of the unit (N_RESTARTS records seen).
# TYPE analyzer_unit_restarts_total counter
analyzer_unit_restarts_total{host="dankclaw",unit="frank-large.service"} 0
analyzer_unit_restarts_total{host="dankclaw",unit="frank-small.service"} 0
analyzer_unit_restarts_total{host="dankserver",unit="frank-primary-probe.service"} 0
analyzer_unit_restarts_total{host="dankserver",unit="frank-primary.service"} 6
# HELP analyzer_unit_last_verdict 1, labelled with the verdict of the unit's latest attempt.
# TYPE analyzer_unit_last_verdict gauge
analyzer_unit_last_verdict{host="dankclaw",unit="frank-large.service",verdict="ready"} 1
analyzer_unit_last_verdict{host="dankclaw",unit="frank-small.service",verdict="ready"} 1
analyzer_unit_last_verdict{host="dankserver",unit="frank-primary-probe.service",verdict="ready"} 1
analyzer_unit_last_verdict{host="dankserver",unit="frank-primary.service",verdict="ready"} 1
# HELP analyzer_unit_seconds_since_last_ready Seconds since an attempt of the unit last reached ready; absent if never.
# TYPE analyzer_unit_seconds_since_last_ready gauge
analyzer_unit_seconds_since_last_ready{host="dankclaw",unit="frank-large.service"} 116977
analyzer_unit_seconds_since_last_ready{host="dankclaw",unit="frank-small.service"} 118680.4
analyzer_unit_seconds_since_last_ready{host="dankserver",unit="frank-primary-probe.service"} 70682.999988
analyzer_unit_seconds_since_last_ready{host="dankserver",unit="frank-primary.service"} 62303.496968
`
	if err := testutil.ScrapeAndCompare(srv.URL, strings.NewReader(want), "analyzer_unit_state", "analyzer_unit_restarts_total",
		"analyzer_unit_last_verdict", "analyzer_unit_seconds_since_last_ready"); err != nil {
		t.Error(err)
	}

	// The metric names pass Prometheus' own lint.
	problems, err := testutil.GatherAndLint(m.Registry())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

// TestLiveCounters checks the pipeline counters with testutil and the
// journal lag computed at scrape time.
func TestLiveCounters(t *testing.T) {
	now := time.Unix(1790990000, 0)
	m := metrics.New(metrics.Options{Now: func() time.Time { return now }, NoProcessMetrics: true})
	m.IngestEntries(domain.IngestSourcePush, 5)
	m.IngestError(domain.IngestSourcePush, domain.IngestErrSnappy)
	m.LinesSkipped(domain.IngestSourcePush, domain.IngestSkipDuplicate, 3)
	m.JournalEntry("gpu-01", now.Add(-90*time.Second))
	m.JournalEntry("gpu-01", now.Add(-120*time.Second)) // older: ignored
	m.NoteWritten()
	m.LokiDelivered(2)
	m.LokiFailed(domain.LokiPushRejected, 1)
	m.LokiQueue(7)

	const want = `
# HELP analyzer_ingest_entries_total Journal entries fed to the tracker, after line reassembly.
# TYPE analyzer_ingest_entries_total counter
analyzer_ingest_entries_total{source="journal"} 0
analyzer_ingest_entries_total{source="loki_push"} 5
# HELP analyzer_journal_lag_seconds Seconds between the newest journal entry received from the host and now.
# TYPE analyzer_journal_lag_seconds gauge
analyzer_journal_lag_seconds{host="gpu-01"} 90
# HELP analyzer_notes_written_total Root-cause notes written to the journal.
# TYPE analyzer_notes_written_total counter
analyzer_notes_written_total 1
# HELP analyzer_loki_push_success_total Findings delivered to Loki (acknowledged with 2xx).
# TYPE analyzer_loki_push_success_total counter
analyzer_loki_push_success_total 2
# HELP analyzer_loki_push_queue_length Findings waiting to be pushed to Loki.
# TYPE analyzer_loki_push_queue_length gauge
analyzer_loki_push_queue_length 7
# HELP analyzer_ingest_errors_total Ingest requests or records refused, by reason.
# TYPE analyzer_ingest_errors_total counter
analyzer_ingest_errors_total{reason="content_encoding",source="loki_push"} 0
analyzer_ingest_errors_total{reason="content_type",source="loki_push"} 0
analyzer_ingest_errors_total{reason="decompress",source="loki_push"} 0
analyzer_ingest_errors_total{reason="json",source="loki_push"} 0
analyzer_ingest_errors_total{reason="labels",source="loki_push"} 0
analyzer_ingest_errors_total{reason="malformed_record",source="journal"} 0
analyzer_ingest_errors_total{reason="method",source="loki_push"} 0
analyzer_ingest_errors_total{reason="pipeline_rejected",source="loki_push"} 0
analyzer_ingest_errors_total{reason="protobuf",source="loki_push"} 0
analyzer_ingest_errors_total{reason="read_body",source="loki_push"} 0
analyzer_ingest_errors_total{reason="saturated",source="loki_push"} 0
analyzer_ingest_errors_total{reason="snappy",source="loki_push"} 1
analyzer_ingest_errors_total{reason="timestamp",source="loki_push"} 0
analyzer_ingest_errors_total{reason="too_large",source="loki_push"} 0
analyzer_ingest_errors_total{reason="unauthorized",source="loki_push"} 0
# HELP analyzer_ingest_lines_skipped_total Log lines received but not fed to the tracker, by reason.
# TYPE analyzer_ingest_lines_skipped_total counter
analyzer_ingest_lines_skipped_total{reason="duplicate",source="journal"} 0
analyzer_ingest_lines_skipped_total{reason="duplicate",source="loki_push"} 3
analyzer_ingest_lines_skipped_total{reason="empty",source="journal"} 0
analyzer_ingest_lines_skipped_total{reason="empty",source="loki_push"} 0
analyzer_ingest_lines_skipped_total{reason="malformed",source="journal"} 0
analyzer_ingest_lines_skipped_total{reason="malformed",source="loki_push"} 0
analyzer_ingest_lines_skipped_total{reason="saturated",source="journal"} 0
analyzer_ingest_lines_skipped_total{reason="saturated",source="loki_push"} 0
# HELP analyzer_loki_push_failures_total Findings not delivered to Loki, by reason.
# TYPE analyzer_loki_push_failures_total counter
analyzer_loki_push_failures_total{reason="encode"} 0
analyzer_loki_push_failures_total{reason="queue_full"} 0
analyzer_loki_push_failures_total{reason="rejected"} 1
analyzer_loki_push_failures_total{reason="retries_exhausted"} 0
analyzer_loki_push_failures_total{reason="shutdown"} 0
analyzer_loki_push_failures_total{reason="too_old"} 0
`
	// Every reason is exported, at 0 until it happens.
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "analyzer_ingest_entries_total",
		"analyzer_journal_lag_seconds", "analyzer_notes_written_total", "analyzer_loki_push_success_total",
		"analyzer_loki_push_queue_length", "analyzer_ingest_errors_total", "analyzer_ingest_lines_skipped_total",
		"analyzer_loki_push_failures_total"); err != nil {
		t.Error(err)
	}
}

// TestNilMetricsIgnoresCalls: a nil *Metrics ignores every call, so that
// components run without metrics, also when it is held by one of their
// metrics interfaces (a non-nil interface holding a nil pointer).
func TestNilMetricsIgnoresCalls(t *testing.T) {
	var none *metrics.Metrics
	none.IngestEntries(domain.IngestSourcePush, 1)
	none.IngestBytes(domain.IngestSourcePush, 1)
	none.IngestError(domain.IngestSourcePush, domain.IngestErrJSON)
	none.LinesSkipped(domain.IngestSourcePush, domain.IngestSkipEmpty, 1)
	none.PushRequest(204)
	none.JournalEntry("h", time.Now())
	none.NoteWritten()
	none.LokiDelivered(1)
	none.LokiFailed(domain.LokiPushRejected, 1)
	none.LokiRetry()
	none.LokiRequest("204")
	none.LokiQueue(1)
	none.PipelineQueue(1)
	none.PipelineFlush(1, nil)
	none.SetFindings([]string{"x"})
	none.RulesReloaded(true, time.Now(), 1)
	if d, f, o := none.LokiTotals(); d != 0 || f != 0 || o != 0 {
		t.Errorf("LokiTotals of nil = %d, %d, %d", d, f, o)
	}
}

func TestUnitState(t *testing.T) {
	for _, tc := range []struct {
		verdict domain.Verdict
		ended   string
		want    string
	}{
		{domain.VerdictRunning, "", metrics.StateBooting},
		{domain.VerdictReady, "", metrics.StateReady},
		{domain.VerdictReady, domain.EndedByStop, metrics.StateStopped},
		{domain.VerdictStopped, domain.EndedByStop, metrics.StateStopped},
		{domain.VerdictOOMGraphCapture, domain.EndedByExit, metrics.StateFailed},
		{domain.VerdictOOMRuntime, "", metrics.StateFailed},
	} {
		if got := metrics.UnitState(tc.verdict, tc.ended); got != tc.want {
			t.Errorf("%s/%q → %s, want %s", tc.verdict, tc.ended, got, tc.want)
		}
	}
}

// TestSetFindingsExportsNewFindingAtZero: a finding id added by a rule
// reload shows at 0 for every unit from the next scrape on, before it fires.
func TestSetFindingsExportsNewFindingAtZero(t *testing.T) {
	db, exp := fixtureDB(t)
	m := metrics.New(metrics.Options{Store: db, NoProcessMetrics: true})
	const id = "site_frobnicator_exploded"
	count := func(name string) int {
		t.Helper()
		n, err := testutil.GatherAndCount(m.Registry(), name)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	findings, units := count("analyzer_findings"), count("analyzer_unit_n_restarts")
	if findings == 0 || units != 4 {
		t.Fatalf("before: %d series of analyzer_findings, %d units", findings, units)
	}
	m.SetFindings([]string{id})
	// One more series a unit, the new id's at 0 (the others are unchanged).
	if n := count("analyzer_findings"); n != findings+units {
		t.Fatalf("%d series of analyzer_findings after SetFindings, want %d + one per unit (%d)", n, findings, units)
	}
	want := expectedCounts(exp)
	seen := map[string]bool{}
	for host, e := range exp {
		for _, a := range e.Attempts {
			if !seen[host+"/"+a.Unit] {
				seen[host+"/"+a.Unit] = true
				want += fmt.Sprintf("analyzer_findings{finding=%q,host=%q,unit=%q} 0\n", id, host, a.Unit)
			}
		}
	}
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "analyzer_findings"); err != nil {
		t.Error(err)
	}
}

// TestBuildInfo: analyzer_build_info is 1, labelled with the Go version
// that built the binary, a revision and the version --version prints.
func TestBuildInfo(t *testing.T) {
	m := metrics.New(metrics.Options{NoProcessMetrics: true, Version: "v1.2.3-4-gabcdef"})
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	var line string
	for _, l := range strings.Split(rec.Body.String(), "\n") {
		if strings.HasPrefix(l, "analyzer_build_info{") {
			line = l
		}
	}
	if !strings.Contains(line, `goversion="`+runtime.Version()+`"`) || !strings.Contains(line, `revision="`) || !strings.HasSuffix(line, " 1") ||
		!strings.Contains(line, `version="v1.2.3-4-gabcdef"`) {
		t.Fatalf("analyzer_build_info: %q", line)
	}
}

// TestOpenMetricsNegotiated: a scraper asking for OpenMetrics gets it (with
// its # EOF), one that asks for nothing gets text 0.0.4.
func TestOpenMetricsNegotiated(t *testing.T) {
	m := metrics.New(metrics.Options{NoProcessMetrics: true, Version: "v1"})
	for _, tc := range []struct{ accept, ctype, tail string }{
		{"application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5", "application/openmetrics-text; version=1.0.0; charset=utf-8; escaping=underscores", "# EOF\n"},
		{"", "text/plain; version=0.0.4; charset=utf-8; escaping=underscores", "\n"},
	} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("GET", "/metrics", nil)
		if tc.accept != "" {
			req.Header.Set("Accept", tc.accept)
		}
		m.Handler().ServeHTTP(rec, req)
		body := rec.Body.String()
		if got := rec.Header().Get("Content-Type"); got != tc.ctype || !strings.HasSuffix(body, tc.tail) || (tc.accept == "") == strings.Contains(body, "# EOF") {
			t.Errorf("Accept %q: Content-Type %q, body ends %q", tc.accept, got, body[max(0, len(body)-20):])
		}
	}
}

// TestLastFailedTimestamp: analyzer_attempt_last_failed_timestamp_seconds
// is the journal's end time of the unit's newest failure of each verdict:
// saving an older failure later (a backfill) or re-saving an old attempt
// with another verdict does not move it to the time of the save.
func TestLastFailedTimestamp(t *testing.T) {
	db, err := store.Open(filepath.Join(t.TempDir(), "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	day := time.Date(2026, 10, 1, 12, 0, 0, 0, time.UTC)
	att := func(id string, end time.Time, v domain.Verdict) *domain.Attempt {
		return &domain.Attempt{ID: id, Host: "gpu-01", Unit: "frank.service", Engine: "vllm", StartedAt: end.Add(-time.Minute),
			EndedAt: end, EndedBy: domain.EndedByExit, Verdict: v, Phase: domain.PhaseKVAlloc, Shape: domain.Shape{}}
	}
	save := func(as ...*domain.Attempt) {
		if err := db.SaveAttempts(t.Context(), as, nil); err != nil {
			t.Fatal(err)
		}
	}
	m := metrics.New(metrics.Options{Store: db, NoProcessMetrics: true, ExternalURL: "https://analyzer.example"})
	value := func(verdict string) string {
		rec := httptest.NewRecorder()
		m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		for _, l := range strings.Split(rec.Body.String(), "\n") {
			if strings.HasPrefix(l, "analyzer_attempt_last_failed_timestamp_seconds{") && strings.Contains(l, `verdict="`+verdict+`"`) {
				return l[strings.LastIndexByte(l, ' ')+1:]
			}
		}
		return "absent"
	}
	at := func(tm time.Time) string { return strconv.FormatFloat(float64(tm.Unix()), 'g', -1, 64) }
	save(att("a2", day, domain.VerdictOOMKVAlloc))
	if got := value("oom_kv_alloc"); got != at(day) {
		t.Fatalf("after a failure at %v: %s, want %s", day, got, at(day))
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if !strings.Contains(rec.Body.String(), `analyzer_attempt_last_failed_timestamp_seconds{attempt_url="https://analyzer.example/attempts/a2",engine="vllm",host="gpu-01",unit="frank.service",verdict="oom_kv_alloc"}`) {
		t.Errorf("the series does not link the newest failed attempt under the external URL")
	}
	month := day.AddDate(0, -1, 0)
	save(att("a1", month, domain.VerdictOOMKVAlloc)) // a month-old failure backfilled now
	if got := value("oom_kv_alloc"); got != at(day) {
		t.Errorf("a backfill moved it: %s", got)
	}
	save(att("a1", month, domain.VerdictEngineDied)) // the old attempt judged again
	if got := value("engine_died"); got != at(month) {
		t.Errorf("a re-saved old attempt's verdict: %s, want its own month-old end %s", got, at(month))
	}
	save(att("a3", day.Add(time.Hour), domain.VerdictReady))
	if got := value("ready"); got != "absent" {
		t.Errorf("a ready attempt has a last-failed time: %s", got)
	}
}
