package metrics_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/metrics"
)

// manyUnits is a database of n hosts with one ended attempt of one unit each.
type manyUnits int

func (n manyUnits) MetricsSnapshot(context.Context) (*domain.MetricsSnapshot, error) {
	snap := &domain.MetricsSnapshot{}
	for i := 0; i < int(n); i++ {
		h := fmt.Sprintf("h%05d", i)
		snap.Attempts = append(snap.Attempts, domain.AttemptCount{Host: h, Unit: "vllm.service", Engine: "vllm", Verdict: "ready", N: 1, Ended: 1})
		snap.Findings = append(snap.Findings, domain.FindingCount{Host: h, Unit: "vllm.service", Finding: "x", N: 1})
		snap.Units = append(snap.Units, domain.UnitStatus{Host: h, Unit: "vllm.service", Verdict: "ready"})
	}
	return snap, nil
}

// TestUnitSeriesCapped: a database of 3,000 made-up hosts (issue 28's
// pushes of 100,000 new hosts made /metrics 32 MB and 12 s) exports the
// per-unit series of MaxHosts units only, in name order, and says how many
// it left out.
func TestUnitSeriesCapped(t *testing.T) {
	m := metrics.New(metrics.Options{Store: manyUnits(3000), MaxHosts: 1000, NoProcessMetrics: true})
	for name, want := range map[string]int{
		"analyzer_attempts_ended_total":  1000,
		"analyzer_unit_state":            1000,
		"analyzer_unit_restarts_total":   1000,
		"analyzer_metrics_units_dropped": 1,
	} {
		if n, err := testutil.GatherAndCount(m.Registry(), name); err != nil || n != want {
			t.Errorf("%s: %d series (%v), want %d", name, n, err, want)
		}
	}
	if n, _ := testutil.GatherAndCount(m.Registry(), "analyzer_findings"); n != 2000 {
		t.Errorf("analyzer_findings: %d series, want 2 for each of 1000 units", n)
	}
	mfs, _ := m.Registry().Gather()
	for _, mf := range mfs {
		if mf.GetName() == "analyzer_metrics_units_dropped" {
			if v := mf.GetMetric()[0].GetGauge().GetValue(); v != 2000 {
				t.Errorf("analyzer_metrics_units_dropped %v, want 2000", v)
			}
		}
		if mf.GetName() == "analyzer_unit_state" {
			for _, s := range mf.GetMetric() {
				for _, l := range s.GetLabel() {
					if l.GetName() == "host" && l.GetValue() >= "h01000" {
						t.Fatalf("unit of host %s exported, past the first 1000 in name order", l.GetValue())
					}
				}
			}
		}
	}
}
