package metrics

import (
	"context"
	"sort"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/progress"
)

// Descriptions of the metrics computed from the database at scrape time.
var (
	attemptsDesc = prometheus.NewDesc(Namespace+"_attempts",
		"Boot attempts recorded on all units, by the verdict they have now. A gauge: an attempt counts under running until "+
			"its verdict is known, and a provisional verdict (a stall) is withdrawn when the boot moves on. "+
			"Per unit, use analyzer_attempts_ended_total.",
		[]string{"verdict"}, nil)
	attemptsEndedDesc = prometheus.NewDesc(Namespace+"_attempts_ended_total",
		"Boot attempts that ended (exit, stop or replaced), by their final verdict; a series appears with the unit's first "+
			"attempt of that verdict (alerts catch that first one with unless … offset).",
		[]string{"host", "unit", "engine", "verdict"}, nil)
	lastFailedDesc = prometheus.NewDesc(Namespace+"_attempt_last_failed_timestamp_seconds",
		"End time (Unix seconds, as the journal dates it) of the unit's newest ended attempt with this failure verdict. "+
			"Read from the database, so a restart keeps it, and a backfill of old failures or a re-save of an old attempt "+
			"never moves it to now: alerts page when it is recent. attempt_url is that attempt's page in the analyzer UI "+
			"(under --external-url).",
		[]string{"host", "unit", "engine", "verdict", "attempt_url"}, nil)
	findingsDesc = prometheus.NewDesc(Namespace+"_findings",
		"Boot attempts of the unit that have the finding (a verdict or a non-root finding) now; a gauge. "+
			"Findings alerts use are exported at 0 for every unit, others from their first attempt.",
		[]string{"host", "unit", "finding"}, nil)
	unitStateDesc = prometheus.NewDesc(Namespace+"_unit_state",
		"1, labelled with the state the unit's latest attempt is in (booting, ready, failed, stopped).",
		[]string{"host", "unit", "state"}, nil)
	unitVerdictDesc = prometheus.NewDesc(Namespace+"_unit_last_verdict",
		"1, labelled with the verdict of the unit's latest attempt.",
		[]string{"host", "unit", "verdict"}, nil)
	unitRestartsDesc = prometheus.NewDesc(Namespace+"_unit_restarts_total",
		"Restarts systemd scheduled after an attempt of the unit (N_RESTARTS records seen).",
		[]string{"host", "unit"}, nil)
	unitRestartCounterDesc = prometheus.NewDesc(Namespace+"_unit_n_restarts",
		"systemd's N_RESTARTS as of the unit's latest attempt (0 when it was not restarted by systemd).",
		[]string{"host", "unit"}, nil)
	unitSinceReadyDesc = prometheus.NewDesc(Namespace+"_unit_seconds_since_last_ready",
		"Seconds since an attempt of the unit last reached ready; absent if never.",
		[]string{"host", "unit"}, nil)
	unitsDroppedDesc = prometheus.NewDesc(Namespace+"_metrics_units_dropped",
		"Units of the database left out of the per-unit series of this scrape: past the host cap (Options.MaxHosts) of (host, unit) pairs, in name order.",
		nil, nil)
	bootStalledDesc = prometheus.NewDesc(Namespace+"_boot_stalled",
		"Present while the unit has a boot in progress: 1 when it has stayed in its phase far longer than that phase took in the "+
			"unit's earlier boots (or, with no history, printed nothing for the quiet limit), 0 otherwise. The attempt's progress in the API says more.",
		[]string{"host", "unit"}, nil)
	storeUpDesc = prometheus.NewDesc(Namespace+"_store_up",
		"1 when the database answered the last scrape, 0 when it failed.", nil, nil)
)

// storeCollector reads the database at every scrape. The database only grows
// (attempts are upserted, never deleted), so its counts are valid counters.
type storeCollector struct {
	opts Options

	mu       sync.Mutex
	findings []string // exported at 0 per unit; see setFindings
}

func newStoreCollector(opts Options) *storeCollector {
	c := &storeCollector{opts: opts}
	c.setFindings(opts.Findings)
	return c
}

// AlertedFindings are the finding ids the shipped alert rules read from
// analyzer_findings with delta(): exported at 0 for every unit so that the
// first one counts.
var AlertedFindings = []string{domain.FindingCleanExitWorkerDeath}

// setFindings makes the ids exported at 0 per unit AlertedFindings and
// extra (ids a site's own alerts use).
func (c *storeCollector) setFindings(extra []string) {
	seen := map[string]bool{}
	var ids []string
	add := func(id string) {
		if id != "" && !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	for _, f := range AlertedFindings {
		add(f)
	}
	for _, f := range extra {
		add(f)
	}
	c.mu.Lock()
	c.findings = ids
	c.mu.Unlock()
}

func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{attemptsDesc, attemptsEndedDesc, lastFailedDesc, findingsDesc, unitStateDesc, unitVerdictDesc,
		unitRestartsDesc, unitRestartCounterDesc, unitSinceReadyDesc, unitsDroppedDesc, bootStalledDesc, storeUpDesc} {
		ch <- d
	}
}

type unitKey struct{ host, unit string }

func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.opts.ScrapeTimeout)
	defer cancel()
	snap, err := c.opts.Store.MetricsSnapshot(ctx)
	if err != nil {
		c.opts.Logger.Error("metrics: database read failed", "err", err)
		ch <- prometheus.MustNewConstMetric(storeUpDesc, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(storeUpDesc, prometheus.GaugeValue, 1)
	now := c.opts.Now()

	// Attempts now, over all units: every verdict, at 0 too (a fixed set).
	// Ended attempts per (host, unit, engine): the verdicts it has had. A
	// series per possible verdict and unit would cost 17 series a unit
	// that no alert or panel needs: the failed-attempt alert sees a
	// series' first appearance with `unless … offset`.
	type engKey struct{ host, unit, engine string }
	attempts := map[string]int64{}
	ended := map[engKey]map[string]int64{}
	var engKeys []engKey
	for _, a := range snap.Attempts {
		k := engKey{a.Host, a.Unit, a.Engine}
		if ended[k] == nil {
			ended[k] = map[string]int64{}
			engKeys = append(engKeys, k)
		}
		attempts[a.Verdict] += a.N
		if a.Ended > 0 {
			ended[k][a.Verdict] += a.Ended
		}
	}
	for _, v := range domain.Verdicts {
		ch <- prometheus.MustNewConstMetric(attemptsDesc, prometheus.GaugeValue, float64(attempts[string(v)]), string(v))
	}
	for v, n := range attempts { // verdicts outside the spec's list (extensions)
		if !knownVerdict(v) {
			ch <- prometheus.MustNewConstMetric(attemptsDesc, prometheus.GaugeValue, float64(n), v)
		}
	}

	// Units: those of the database plus the configured ones.
	units := map[unitKey]bool{}
	var unitKeys []unitKey
	addUnit := func(k unitKey) {
		if !units[k] {
			units[k] = true
			unitKeys = append(unitKeys, k)
		}
	}
	for _, k := range engKeys {
		addUnit(unitKey{k.host, k.unit})
	}
	for _, u := range c.opts.Units {
		addUnit(unitKey{u.Host, u.Unit})
	}
	// Findings: those alerts use at 0 for each unit (delta() needs the 0
	// before the first), the others from their first attempt on.
	findings := map[unitKey]map[string]int64{}
	for _, f := range snap.Findings {
		k := unitKey{f.Host, f.Unit}
		addUnit(k)
		if findings[k] == nil {
			findings[k] = map[string]int64{}
		}
		findings[k][f.Finding] += f.N
	}
	sort.Slice(unitKeys, func(i, j int) bool {
		if unitKeys[i].host != unitKeys[j].host {
			return unitKeys[i].host < unitKeys[j].host
		}
		return unitKeys[i].unit < unitKeys[j].unit
	})
	// Past the cap a scrape would grow with every made-up host pushed;
	// the units dropped are counted instead.
	dropped := 0
	if len(unitKeys) > c.opts.MaxHosts {
		dropped = len(unitKeys) - c.opts.MaxHosts
		for _, k := range unitKeys[c.opts.MaxHosts:] {
			delete(units, k)
		}
		unitKeys = unitKeys[:c.opts.MaxHosts]
	}
	ch <- prometheus.MustNewConstMetric(unitsDroppedDesc, prometheus.GaugeValue, float64(dropped))
	for _, k := range engKeys {
		if !units[unitKey{k.host, k.unit}] {
			continue
		}
		for v, n := range ended[k] {
			ch <- prometheus.MustNewConstMetric(attemptsEndedDesc, prometheus.CounterValue, float64(n), k.host, k.unit, k.engine, v)
		}
	}
	for _, a := range snap.Attempts {
		if a.Unit != "" && units[unitKey{a.Host, a.Unit}] && !a.LastEnded.IsZero() && domain.Verdict(a.Verdict).IsFailure() {
			ch <- prometheus.MustNewConstMetric(lastFailedDesc, prometheus.GaugeValue, float64(a.LastEnded.UnixMilli())/1000,
				a.Host, a.Unit, a.Engine, a.Verdict, c.opts.ExternalURL+"/attempts/"+a.LastEndedID)
		}
	}

	c.mu.Lock()
	ids := c.findings
	c.mu.Unlock()
	known := map[string]bool{}
	for _, id := range ids {
		known[id] = true
	}
	for _, k := range unitKeys {
		for _, id := range ids {
			ch <- prometheus.MustNewConstMetric(findingsDesc, prometheus.GaugeValue, float64(findings[k][id]), k.host, k.unit, id)
		}
		for id, n := range findings[k] {
			if !known[id] && n > 0 {
				ch <- prometheus.MustNewConstMetric(findingsDesc, prometheus.GaugeValue, float64(n), k.host, k.unit, id)
			}
		}
	}

	// Boots in progress: a series per unit booting now (a unit that is not
	// booting has nothing to stall), 1 when its boot has stalled.
	if c.opts.Progress != nil {
		boots, err := progress.Boots(ctx, c.opts.Progress, now, progress.Limits{Quiet: c.opts.StallQuiet, Floor: c.opts.StallFloor})
		if err != nil {
			c.opts.Logger.Error("metrics: boots in progress not read", "err", err)
		}
		stalled := map[unitKey]float64{}
		for _, b := range boots {
			k := unitKey{b.Attempt.Host, b.Attempt.Unit}
			if units[k] && b.Estimate.Stalled {
				stalled[k] = 1
			} else if units[k] {
				stalled[k] = max(stalled[k], 0)
			}
		}
		for k, v := range stalled {
			ch <- prometheus.MustNewConstMetric(bootStalledDesc, prometheus.GaugeValue, v, k.host, k.unit)
		}
	}

	// Unit state from the latest attempt.
	status := map[unitKey]domain.UnitStatus{}
	for _, u := range snap.Units {
		status[unitKey{u.Host, u.Unit}] = u
	}
	for _, k := range unitKeys {
		if k.unit == "" {
			continue // plain-text attempts have no unit to be in a state
		}
		// State and last verdict: the current one only (the dashboard
		// selects == 1 and sums by state; zeros for the other values would
		// be 20 series a unit).
		u, ok := status[k]
		if ok {
			if state := UnitState(domain.Verdict(u.Verdict), u.EndedBy); state != "" {
				ch <- prometheus.MustNewConstMetric(unitStateDesc, prometheus.GaugeValue, 1, k.host, k.unit, state)
			}
			if u.Verdict != "" {
				ch <- prometheus.MustNewConstMetric(unitVerdictDesc, prometheus.GaugeValue, 1, k.host, k.unit, u.Verdict)
			}
		}
		var restarts, counter float64
		if ok {
			restarts = float64(u.Restarts)
			if u.RestartCounter != nil {
				counter = float64(*u.RestartCounter)
			}
		}
		ch <- prometheus.MustNewConstMetric(unitRestartsDesc, prometheus.CounterValue, restarts, k.host, k.unit)
		ch <- prometheus.MustNewConstMetric(unitRestartCounterDesc, prometheus.GaugeValue, counter, k.host, k.unit)
		if ok && !u.LastReady.IsZero() {
			ch <- prometheus.MustNewConstMetric(unitSinceReadyDesc, prometheus.GaugeValue, now.Sub(u.LastReady).Seconds(), k.host, k.unit)
		}
	}
}

func knownVerdict(v string) bool {
	for _, x := range domain.Verdicts {
		if string(x) == v {
			return true
		}
	}
	return false
}
