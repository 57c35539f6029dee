package metrics_test

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/internal/fixturetest"
	"github.com/llmfleet/analyzer/metrics"
	"github.com/llmfleet/analyzer/store"
)

// saveBoots stores, for unit u of host h, three earlier boots whose graph
// capture took 2-4 min, and a boot in progress that entered graph capture
// inCapture before now.
func saveBoots(t *testing.T, db *store.DB, h, u string, now time.Time, inCapture time.Duration) {
	t.Helper()
	as := fixturetest.ReadyBoots(h, u, now, 2*time.Minute, 3*time.Minute, 4*time.Minute)
	s := now.Add(-3*time.Minute - inCapture)
	as = append(as, &domain.Attempt{ID: h + "-" + u + "-now", Host: h, Unit: u, InvocationID: "invnow", Engine: "vllm", StartedAt: s,
		Phase: domain.PhaseGraphCapture, Verdict: domain.VerdictRunning, Shape: domain.Shape{},
		Timeline: []domain.PhaseMark{{Phase: domain.PhaseGraphCapture, Time: s.Add(3 * time.Minute)}}})
	if err := db.SaveAttempts(t.Context(), as, nil); err != nil {
		t.Fatal(err)
	}
}

// TestBootStalledGauge: a unit whose boot has been in graph capture for 20
// min, where it took 2-4 min before, reads 1; one 1 min in reads 0; units
// with no boot in progress have no series.
func TestBootStalledGauge(t *testing.T) {
	db, _ := fixtureDB(t)
	now := time.Unix(1790990000, 0)
	saveBoots(t, db, "gpu1", "wedged.service", now, 20*time.Minute)
	saveBoots(t, db, "gpu1", "healthy.service", now, time.Minute)
	m := metrics.New(metrics.Options{Store: db, Progress: db, Now: func() time.Time { return now }, NoProcessMetrics: true})
	want := `
# HELP analyzer_boot_stalled Present while the unit has a boot in progress: 1 when it has stayed in its phase far longer than that phase took in the unit's earlier boots (or, with no history, printed nothing for the quiet limit), 0 otherwise. The attempt's progress in the API says more.
# TYPE analyzer_boot_stalled gauge
analyzer_boot_stalled{host="gpu1",unit="healthy.service"} 0
analyzer_boot_stalled{host="gpu1",unit="wedged.service"} 1
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "analyzer_boot_stalled"); err != nil {
		t.Error(err)
	}
}
