package metrics_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
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

// sums adds the values of a metric family's series by the given label.
func sums(t *testing.T, m *metrics.Metrics, name string, by ...string) map[string]float64 {
	t.Helper()
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, s := range mf.GetMetric() {
			lab := map[string]string{}
			for _, lp := range s.GetLabel() {
				lab[lp.GetName()] = lp.GetValue()
			}
			var key []string
			for _, b := range by {
				key = append(key, lab[b])
			}
			v := s.GetCounter().GetValue() + s.GetGauge().GetValue()
			out[strings.Join(key, "|")] += v
		}
	}
	return out
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

	attempts := sums(t, m, "analyzer_attempts", "verdict")
	wantAll := map[string]float64{}
	endedAttempts := sums(t, m, "analyzer_attempts_ended_total", "host", "verdict")
	findings := sums(t, m, "analyzer_findings", "host", "finding")
	for host, e := range exp {
		wantV := map[string]float64{}
		wantEnded := map[string]float64{}
		wantF := map[string]float64{}
		for _, a := range e.Attempts {
			wantV[a.Verdict]++
			wantAll[a.Verdict]++
			if a.EndedBy != nil && *a.EndedBy != "" {
				wantEnded[a.Verdict]++
			}
			for _, f := range a.Findings {
				wantF[f]++
			}
		}
		for _, v := range domain.Verdicts {
			if got := endedAttempts[host+"|"+string(v)]; got != wantEnded[string(v)] {
				t.Errorf("%s: analyzer_attempts_ended_total{verdict=%q} = %v, want %v", host, v, got, wantEnded[string(v)])
			}
		}
		for f, n := range wantF {
			if got := findings[host+"|"+f]; got != n {
				t.Errorf("%s: analyzer_findings{finding=%q} = %v, want %v", host, f, got, n)
			}
		}
	}

	for _, v := range domain.Verdicts {
		if got := attempts[string(v)]; got != wantAll[string(v)] {
			t.Errorf("analyzer_attempts{verdict=%q} = %v, want %v", v, got, wantAll[string(v)])
		}
	}

	// Served over real HTTP and compared with the text format: dankclaw's
	// two units are both ready (their latest attempts never ended), the
	// night's stopped; only the current state has a series.
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
`
	if err := testutil.ScrapeAndCompare(srv.URL, strings.NewReader(want), "analyzer_unit_state", "analyzer_unit_restarts_total"); err != nil {
		t.Error(err)
	}

	// Zero series: a unit that never had a clean-exit worker death (the
	// finding an alert reads with delta()) still exports it at 0, so that
	// delta() sees its first; findings no alert reads have no zero series.
	zero := 0
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "analyzer_findings" {
			continue
		}
		for _, s := range mf.GetMetric() {
			if s.GetGauge().GetValue() != 0 {
				continue
			}
			zero++
			for _, lp := range s.GetLabel() {
				if lp.GetName() == "finding" && lp.GetValue() != domain.FindingCleanExitWorkerDeath {
					t.Errorf("analyzer_findings at 0 for %s, which no alert reads", lp.GetValue())
				}
			}
		}
	}
	if cew := sums(t, m, "analyzer_findings", "unit", "finding"); zero < 3 || cew["frank-small.service|clean_exit_worker_death"] != 0 {
		t.Errorf("%d zero series of analyzer_findings; want clean_exit_worker_death at 0 for the units without one", zero)
	}
	if _, ok := sums(t, m, "analyzer_findings", "unit", "finding")["frank-small.service|crash_loop"]; ok {
		t.Error("frank-small exports crash_loop though it never had one")
	}
	lastVerdict := sums(t, m, "analyzer_unit_last_verdict", "unit", "verdict")
	if lastVerdict["frank-small.service|ready"] != 1 || len(lastVerdict) != 4 {
		t.Errorf("last verdict series: %v, want one per unit", lastVerdict)
	}
	since := sums(t, m, "analyzer_unit_seconds_since_last_ready", "unit")
	if since["frank-primary.service"] <= 0 {
		t.Errorf("seconds since last ready of frank-primary = %v", since["frank-primary.service"])
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
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "analyzer_ingest_entries_total",
		"analyzer_journal_lag_seconds", "analyzer_notes_written_total", "analyzer_loki_push_success_total",
		"analyzer_loki_push_queue_length"); err != nil {
		t.Error(err)
	}
	errs := sums(t, m, "analyzer_ingest_errors_total", "reason")
	if errs[domain.IngestErrSnappy] != 1 || errs[domain.IngestErrProtobuf] != 0 {
		t.Errorf("ingest errors %v", errs)
	}
	if _, ok := errs[domain.IngestErrUnauthorized]; !ok {
		t.Error("error reasons are not exported at 0")
	}
	if f := sums(t, m, "analyzer_loki_push_failures_total", "reason"); f[domain.LokiPushRejected] != 1 || len(f) != len(domain.LokiPushFailureReasons) {
		t.Errorf("push failures %v", f)
	}
	// A nil *Metrics ignores everything (components run without metrics).
	var none *metrics.Metrics
	none.IngestEntries(domain.IngestSourcePush, 1)
	none.JournalEntry("h", now)
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
	db, _ := fixtureDB(t)
	m := metrics.New(metrics.Options{Store: db, NoProcessMetrics: true})
	const id = "site_frobnicator_exploded"
	if got := sums(t, m, "analyzer_findings", "finding"); got[id] != 0 || len(got) == 0 {
		t.Fatalf("before: %v", got)
	}
	series := func() int {
		n := 0
		mfs, err := m.Registry().Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() != "analyzer_findings" {
				continue
			}
			for _, s := range mf.GetMetric() {
				for _, lp := range s.GetLabel() {
					if lp.GetName() == "finding" && lp.GetValue() == id {
						n++
					}
				}
			}
		}
		return n
	}
	if n := series(); n != 0 {
		t.Fatalf("%d series of %s before the reload", n, id)
	}
	m.SetFindings([]string{id})
	units := len(sums(t, m, "analyzer_unit_n_restarts", "host", "unit"))
	if n := series(); n != units || units == 0 {
		t.Fatalf("%d series of %s after SetFindings, want one per unit (%d)", n, id, units)
	}
}

// TestBuildInfo: analyzer_build_info is 1, labelled with the Go version
// that built the binary and a revision.
func TestBuildInfo(t *testing.T) {
	m := metrics.New(metrics.Options{NoProcessMetrics: true})
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	var line string
	for _, l := range strings.Split(rec.Body.String(), "\n") {
		if strings.HasPrefix(l, "analyzer_build_info{") {
			line = l
		}
	}
	if !strings.Contains(line, `goversion="`+runtime.Version()+`"`) || !strings.Contains(line, `revision="`) || !strings.HasSuffix(line, " 1") {
		t.Fatalf("analyzer_build_info: %q", line)
	}
}
