package deploy_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"gopkg.in/yaml.v3"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/internal/fixturetest"
	"github.com/llmfleet/analyzer/metrics"
	"github.com/llmfleet/analyzer/store"
)

// scrapeInterval is the shipped scrape interval (prometheus/scrape.yaml).
func scrapeInterval(t *testing.T) time.Duration {
	t.Helper()
	var sc struct {
		ScrapeConfigs []struct {
			Interval string `yaml:"scrape_interval"`
		} `yaml:"scrape_configs"`
	}
	if err := yaml.Unmarshal([]byte(read(t, "prometheus/scrape.yaml")), &sc); err != nil {
		t.Fatal(err)
	}
	if len(sc.ScrapeConfigs) == 0 {
		t.Fatal("scrape.yaml has no scrape config")
	}
	d, err := time.ParseDuration(sc.ScrapeConfigs[0].Interval)
	if err != nil || d <= 0 {
		t.Fatalf("scrape_interval %q: %v", sc.ScrapeConfigs[0].Interval, err)
	}
	return d
}

// recordedSeries is /metrics after replaying both example journals and one
// event of each live kind, as promtool input series over n scrapes: gauges
// keep their value, counters grow by 1 a scrape (as a live analyzer's do).
func recordedSeries(t *testing.T, n int) []map[string]string {
	t.Helper()
	db, err := store.Open(filepath.Join(t.TempDir(), "rec.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, f := range []string{"dankserver-night-ladder", "dankclaw-day"} {
		if err := db.SaveAttempts(context.Background(), fixturetest.Attempts(t, "../examples/"+f+".journal.json"), nil); err != nil {
			t.Fatal(err)
		}
	}
	m := metrics.New(metrics.Options{Store: db, Progress: db, NoProcessMetrics: true})
	m.IngestEntries(domain.IngestSourcePush, 10)
	m.IngestError(domain.IngestSourcePush, domain.IngestErrLabels)
	m.LinesSkipped(domain.IngestSourcePush, domain.IngestSkipDuplicate, 1)
	m.JournalEntry("dankserver", time.Now().Add(-5*time.Second))
	m.NoteWritten()
	m.LokiDelivered(3)
	m.LokiFailed("status_400", 1)
	m.LokiQueue(2)
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]string
	for _, mf := range mfs {
		for _, s := range mf.GetMetric() {
			var v float64
			grow := false
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				v, grow = s.GetCounter().GetValue(), true
			case dto.MetricType_GAUGE:
				v = s.GetGauge().GetValue()
			case dto.MetricType_UNTYPED:
				v = s.GetUntyped().GetValue()
			default:
				continue // no panel reads a histogram or summary
			}
			var ls []string
			for _, lp := range s.GetLabel() {
				ls = append(ls, lp.GetName()+"="+strconv.Quote(lp.GetValue()))
			}
			step := "+0"
			if grow {
				step = "+1"
			}
			out = append(out, map[string]string{
				"series": mf.GetName() + "{" + strings.Join(ls, ", ") + "}",
				"values": fmt.Sprintf("%s%sx%d", strconv.FormatFloat(v, 'g', -1, 64), step, n),
			})
		}
	}
	return out
}

// dashboardExprs are the dashboard's PromQL expressions as Grafana sends
// them with every host and unit selected: $__rate_interval is rate,
// $host and $unit the variables' allValue (.*), and label_values(M, L) of
// a variable is the series query group by (L) (M).
func dashboardExprs(t *testing.T, rateInterval string) map[string]string {
	t.Helper()
	lv := regexp.MustCompile(`^label_values\((.*),\s*([A-Za-z_][A-Za-z0-9_]*)\)$`)
	out := map[string]string{}
	for _, q := range queries(t) {
		if q.ds != "prometheus" || !strings.HasPrefix(q.where, "panel ") && !strings.HasPrefix(q.where, "variable ") {
			continue // alert rules have their own promtool tests
		}
		e := q.expr
		if m := lv.FindStringSubmatch(e); m != nil {
			e = "group by (" + m[2] + ") (" + m[1] + ")"
		}
		e = strings.NewReplacer("$__rate_interval", rateInterval, "$host", ".*", "$unit", ".*").Replace(e)
		if strings.Contains(e, "$") {
			t.Fatalf("%s: %q has a Grafana variable the test does not know", q.where, e)
		}
		key := q.where
		for i := 2; out[key] != ""; i++ {
			key = fmt.Sprintf("%s #%d", q.where, i)
		}
		out[key] = e
	}
	return out
}

// promtoolTest writes a promtool unit test file evaluating each expression
// (as count(expr) > bool 0, which is 1 when it returns data) at eval over
// the recorded series, with the shipped rules (and so their recording
// rules) evaluated, and runs `promtool test rules` on it.
func promtoolTest(t *testing.T, promtool string, exprs map[string]string, series []map[string]string, interval time.Duration, eval string) ([]byte, error) {
	t.Helper()
	names := make([]string, 0, len(exprs))
	for k := range exprs {
		names = append(names, k)
	}
	sort.Strings(names)
	var tests []map[string]any
	for _, k := range names {
		tests = append(tests, map[string]any{
			"expr":        "count(" + exprs[k] + ") > bool 0",
			"eval_time":   eval,
			"exp_samples": []map[string]any{{"labels": "{}", "value": 1}},
		})
	}
	// The shipped rule file: panels may read its recording rules.
	rulesFile, err := filepath.Abs("prometheus/rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	doc := map[string]any{
		"rule_files":          []string{rulesFile},
		"evaluation_interval": interval.String(),
		"tests": []map[string]any{{
			"interval":         interval.String(),
			"input_series":     series,
			"promql_expr_test": tests,
		}},
	}
	b, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "dashboard_test.yaml")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return exec.Command(promtool, "test", "rules", p).CombinedOutput()
}

// TestDashboardExpressionsReturnData evaluates every PromQL expression of
// the shipped dashboard (panels and variables) with promtool's test
// framework over series recorded from the analyzer's /metrics at the
// shipped scrape interval, with $__rate_interval as Grafana sets it
// (4 × scrape interval), and checks that each returns data 10 minutes in.
// The range-function panels over a window holding one scrape (what
// $__interval gives at a fine resolution) return nothing: the test can
// tell an empty panel.
func TestDashboardExpressionsReturnData(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not installed (Debian package prometheus; scripts/install-deps.sh test installs it)")
	}
	scrape := scrapeInterval(t)
	if scrape != 30*time.Second {
		t.Fatalf("shipped scrape interval %v; the dashboard was checked at 30s", scrape)
	}
	series := recordedSeries(t, 40) // 20 minutes of scrapes
	exprs := dashboardExprs(t, (4 * scrape).String())
	if len(exprs) < 15 {
		t.Fatalf("only %d dashboard expressions: %v", len(exprs), exprs)
	}
	out, err := promtoolTest(t, promtool, exprs, series, scrape, "10m")
	if err != nil {
		t.Fatalf("promtool test rules: some dashboard expressions return no data: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "SUCCESS") {
		t.Fatalf("promtool: %s", out)
	}

	// With a window shorter than two scrapes rate()/increase() have a
	// single sample.
	rated := map[string]string{}
	for k, e := range dashboardExprs(t, (scrape - time.Second).String()) {
		if strings.Contains(e, "rate(") || strings.Contains(e, "increase(") || strings.Contains(e, "delta(") {
			rated[k] = e
		}
	}
	if len(rated) < 5 {
		t.Fatalf("only %d range-function expressions", len(rated))
	}
	for k, e := range rated {
		out, err := promtoolTest(t, promtool, map[string]string{k: e}, series, scrape, "10m")
		if err == nil {
			t.Errorf("%s: %q over less than two scrapes returned data; the check cannot tell an empty panel\n%s", k, e, out)
		}
	}
}

// TestAttemptsPanelCountsNewHosts: a host the analyzer first sees has its
// ended-attempts series born at 2 (two attempts in its first scrape);
// increase() has no earlier sample to subtract from, so the panel counts
// such a series whole for the window after its birth, and nothing once the
// window has passed with no change.
func TestAttemptsPanelCountsNewHosts(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not installed")
	}
	expr := dashboardExprs(t, "2m")["panel Attempts over time by verdict"]
	if expr == "" {
		t.Fatal("no query on the panel Attempts over time by verdict")
	}
	doc := map[string]any{
		"rule_files":          []string{},
		"evaluation_interval": "30s",
		"tests": []map[string]any{{
			"interval": "30s",
			"input_series": []map[string]string{{
				"series": `analyzer_attempts_ended_total{host="new-host",unit="frank.service",engine="vllm",verdict="oom_kv_alloc"}`,
				"values": "_x20 2x20",
			}},
			"promql_expr_test": []map[string]any{
				{"expr": expr, "eval_time": "11m", "exp_samples": []map[string]any{{"labels": `{verdict="oom_kv_alloc"}`, "value": 2}}},
				{"expr": expr, "eval_time": "15m", "exp_samples": []map[string]any{{"labels": `{verdict="oom_kv_alloc"}`, "value": 0}}},
			},
		}},
	}
	b, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "panel_test.yaml")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool, "test", "rules", p).CombinedOutput(); err != nil {
		t.Fatalf("promtool: %v\n%s\nexpr: %s", err, out, expr)
	}
}
