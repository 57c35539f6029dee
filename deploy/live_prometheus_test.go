package deploy_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmfleet/analyzer/ingest"
	"github.com/llmfleet/analyzer/internal/journaldtest"
)

// freePort returns a loopback port nobody listens on (yet).
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// dayRecords reads the day fixture's records as export records for host;
// with an invocation id, only that invocation's records, their times moved so
// that the last one is now.
func dayRecords(t *testing.T, host, inv string) [][]byte {
	t.Helper()
	f, err := os.Open("../../shared/fixtures/dankclaw-day.journal.json")
	if err != nil {
		t.Skipf("no shared fixture: %v", err)
	}
	defer f.Close()
	var recs []ingest.Record
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 4<<20), 4<<20)
	for sc.Scan() {
		rec, err := ingest.ParseJSONRecord(sc.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		if inv != "" && string(rec["INVOCATION_ID"]) != inv && string(rec["_SYSTEMD_INVOCATION_ID"]) != inv {
			continue
		}
		rec["_HOSTNAME"] = []byte(host)
		recs = append(recs, rec)
	}
	if len(recs) == 0 {
		t.Fatalf("no records of invocation %s", inv)
	}
	if inv != "" {
		last, _ := strconv.ParseInt(string(recs[len(recs)-1]["__REALTIME_TIMESTAMP"]), 10, 64)
		delta := time.Now().UnixMicro() - last
		for _, rec := range recs {
			for _, k := range []string{"__REALTIME_TIMESTAMP", "_SOURCE_REALTIME_TIMESTAMP"} {
				if v, err := strconv.ParseInt(string(rec[k]), 10, 64); err == nil {
					rec[k] = []byte(strconv.FormatInt(v+delta, 10))
				}
			}
		}
	}
	var out [][]byte
	for _, rec := range recs {
		out = append(out, journaldtest.Export(t, rec))
	}
	return out
}

// firing lists the hosts of the EngineBootAttemptFailed alerts Prometheus
// has firing now.
func firing(t *testing.T, prom string) map[string]bool {
	t.Helper()
	resp, err := http.Get(prom + "/api/v1/alerts")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var body struct {
		Data struct {
			Alerts []struct {
				Labels map[string]string `json:"labels"`
				State  string            `json:"state"`
			} `json:"alerts"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("alerts: %v", err)
	}
	out := map[string]bool{}
	for _, a := range body.Data.Alerts {
		if a.Labels["alertname"] == "EngineBootAttemptFailed" && a.State == "firing" {
			out[a.Labels["host"]] = true
		}
	}
	return out
}

// seriesOf reports whether Prometheus holds the last-failed time of host.
func seriesOf(prom, host string) bool {
	q := url.Values{"query": {fmt.Sprintf(`analyzer_attempt_last_failed_timestamp_seconds{host=%q}`, host)}}
	resp, err := http.Get(prom + "/api/v1/query?" + q.Encode())
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var body struct {
		Data struct {
			Result []json.RawMessage `json:"result"`
		} `json:"data"`
	}
	return json.NewDecoder(resp.Body).Decode(&body) == nil && len(body.Data.Result) > 0
}

// TestLivePrometheusAlert runs the shipped alert in a real Prometheus that
// scrapes a real `serve` following a journal directory, with the rule
// group's interval and the scrape interval at one second: month-old failures
// read from the journal (a backfill) never page; a boot that fails now does,
// within a few evaluations of the analyzer ending it.
func TestLivePrometheusAlert(t *testing.T) {
	if testing.Short() {
		t.Skip("starts serve and Prometheus")
	}
	prometheus, err := exec.LookPath("prometheus")
	if err != nil {
		t.Skip("prometheus not installed (Debian package prometheus; scripts/install-deps.sh test installs it)")
	}
	journaldtest.NeedJournalRemote(t)
	dir := t.TempDir()
	jdir := filepath.Join(dir, "journal")
	if err := os.Mkdir(jdir, 0o755); err != nil {
		t.Fatal(err)
	}
	jfile := filepath.Join(jdir, "remote.journal")
	journaldtest.AppendJournal(t, jfile, dayRecords(t, "old-host", ""))

	aport, pport := freePort(t), freePort(t)
	serve := exec.Command(stampedBinary(t), "serve", "--db", filepath.Join(dir, "analyzer.db"), "--listen", "127.0.0.1:"+strconv.Itoa(aport),
		"--journal-dir", jdir, "--since", "2000-01-01", "--no-notes", "--external-url", "https://analyzer.example")
	var serveLog bytes.Buffer
	serve.Stderr = &serveLog
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = serve.Process.Kill(); _ = serve.Wait() }()

	rules, err := os.ReadFile("prometheus/rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	fast := strings.ReplaceAll(string(rules), "interval: 1m", "interval: 1s")
	if fast == string(rules) {
		t.Fatal("rules.yaml has no 'interval: 1m' to shorten")
	}
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), []byte(fast), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nrule_files: [%q]\nscrape_configs:\n  - job_name: analyzer\n    static_configs:\n      - targets: [\"127.0.0.1:%d\"]\n",
		filepath.Join(dir, "rules.yaml"), aport)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	prom := exec.Command(prometheus, "--config.file="+filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(dir, "tsdb"),
		"--web.listen-address=127.0.0.1:"+strconv.Itoa(pport))
	var promLog bytes.Buffer
	prom.Stderr = &promLog
	if err := prom.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = prom.Process.Kill(); _ = prom.Wait() }()
	base := "http://127.0.0.1:" + strconv.Itoa(pport)
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf(format+"\n--- serve:\n%s\n--- prometheus:\n%s", append(args, tail(serveLog.String()), tail(promLog.String()))...)
	}
	wait := func(what string, limit time.Duration, ok func() bool) time.Duration {
		t.Helper()
		start := time.Now()
		for !ok() {
			if time.Since(start) > limit {
				fail("%s: not within %s", what, limit)
			}
			time.Sleep(100 * time.Millisecond)
		}
		return time.Since(start)
	}
	wait("Prometheus holds the backfilled failures", 60*time.Second, func() bool { return seriesOf(base, "old-host") })
	// Several evaluations with the old failures in: nobody is paged.
	for i := 0; i < 5; i++ {
		time.Sleep(time.Second)
		if firing(t, base)["old-host"] {
			fail("month-old failures of a backfill page")
		}
	}
	journaldtest.AppendJournal(t, jfile, dayRecords(t, "fresh-host", "38e751def21b9209c886df2ea0f71d0e"))
	seen := wait("the fresh failure reaches Prometheus", 60*time.Second, func() bool { return seriesOf(base, "fresh-host") })
	alerted := wait("the fresh failure pages", 30*time.Second, func() bool { return firing(t, base)["fresh-host"] })
	t.Logf("fresh failure: scraped %s after it was written, firing %s after that (evaluation interval 1s)", seen.Round(100*time.Millisecond), alerted.Round(100*time.Millisecond))
	if alerted > 5*time.Second { // two evaluations, with room for a loaded CI machine
		t.Errorf("the alert fired %s after Prometheus held the failure, want within two evaluations (1 s each) and some slack", alerted)
	}
	if firing(t, base)["old-host"] {
		t.Errorf("the backfilled failures page once a fresh one does")
	}
}

// tail is the last 3000 bytes of a log, for a failure message.
func tail(s string) string {
	if len(s) > 3000 {
		return s[len(s)-3000:]
	}
	return s
}
