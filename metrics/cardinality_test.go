package metrics_test

import (
	"io/fs"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/llmfleet/analyzer/deploy"
	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/metrics"
)

// seriesPerUnitAfterFixtures is what each (host, unit) adds to /metrics
// after the fixtures: 6 fixed series (state, last verdict, restarts,
// N_RESTARTS, seconds since ready, clean_exit_worker_death findings at 0
// or more) plus one per final verdict and per finding the unit has had,
// and one per failure verdict for its last-failed time (the alert's).
// Before the cut every unit cost 78 (17 verdicts at 0 in three metrics, 18
// findings, 4 states, unit_info, last-ready timestamp).
var seriesPerUnitAfterFixtures = map[string]int{
	"dankserver/frank-primary.service":       18, // 4 final verdicts (3 failures), 5 findings
	"dankserver/frank-primary-probe.service": 13, // 3 final verdicts (2 failures), 2 findings
	"dankclaw/frank-large.service":           9,  // one failure verdict, no finding
	"dankclaw/frank-small.service":           9,
}

// seriesPerUnit counts, for each host/unit, the series carrying that unit
// label, by metric name.
func seriesPerUnit(t *testing.T, m *metrics.Metrics) map[string]map[string]int {
	t.Helper()
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]int{}
	for _, mf := range mfs {
		for _, s := range mf.GetMetric() {
			var host, unit string
			for _, lp := range s.GetLabel() {
				switch lp.GetName() {
				case "host":
					host = lp.GetValue()
				case "unit":
					unit = lp.GetValue()
				}
			}
			if unit == "" {
				continue
			}
			k := host + "/" + unit
			if out[k] == nil {
				out[k] = map[string]int{}
			}
			out[k][mf.GetName()]++
		}
	}
	return out
}

// referencedMetrics lists the analyzer_* names the shipped alert rules
// (Prometheus rule file and Grafana provisioning) and dashboards use.
func referencedMetrics(t *testing.T) []string {
	t.Helper()
	re := regexp.MustCompile(`analyzer_[a-z_]+[a-z]`)
	seen := map[string]bool{}
	for _, dir := range []string{"prometheus", "grafana"} {
		err := fs.WalkDir(deploy.Files, dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || strings.HasSuffix(p, "_test.yaml") {
				return err
			}
			b, err := deploy.Files.ReadFile(p)
			if err != nil {
				return err
			}
			for _, n := range re.FindAllString(string(b), -1) {
				seen[n] = true
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	var names []string
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// TestPerUnitCardinality replays both fixtures (4 units), drives every live
// counter once, and checks what each unit costs (seriesPerUnitAfterFixtures),
// and that every metric the shipped rules and dashboards reference is on
// /metrics.
func TestPerUnitCardinality(t *testing.T) {
	db, _ := fixtureDB(t)
	m := metrics.New(metrics.Options{Store: db, Progress: db, Now: func() time.Time { return time.Unix(1790990000, 0) }, NoProcessMetrics: true})
	m.IngestEntries(domain.IngestSourcePush, 1)
	m.IngestError(domain.IngestSourcePush, domain.IngestErrLabels)
	m.LinesSkipped(domain.IngestSourcePush, domain.IngestSkipDuplicate, 1)
	m.JournalEntry("dankserver", time.Unix(1790989990, 0))
	m.NoteWritten()
	m.LokiDelivered(1)
	m.LokiFailed("status_400", 1)
	m.LokiQueue(0)

	per := seriesPerUnit(t, m)
	if len(per) != 4 {
		t.Fatalf("%d units on /metrics, want the fixtures' 4: %v", len(per), per)
	}
	total := 0
	for unit, byName := range per {
		n := 0
		for _, c := range byName {
			n += c
		}
		total += n
		t.Logf("%s: %d series %v", unit, n, byName)
		if want := seriesPerUnitAfterFixtures[unit]; n != want {
			t.Errorf("%s has %d series, want %d: %v", unit, n, want, byName)
		}
	}
	t.Logf("per-unit series: %d for 4 units", total)
	if total > 4*13 {
		t.Errorf("%d per-unit series for 4 units, more than 13 a unit", total)
	}

	// A boot in progress: the stall gauge exists only while one does.
	saveBoots(t, db, "gpu9", "booting.service", time.Unix(1790990000, 0), time.Minute)
	refs := referencedMetrics(t)
	if len(refs) < 10 {
		t.Fatalf("only %d metric names found in deploy/: %v", len(refs), refs)
	}
	for _, n := range refs {
		if c, err := testutil.GatherAndCount(m.Registry(), n); err != nil || c == 0 {
			t.Errorf("deploy/ references %s, which /metrics does not export (%v)", n, err)
		}
	}
}
