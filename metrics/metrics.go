// Package metrics is the analyzer's Prometheus endpoint (GET /metrics): one
// registry of its own (nothing of the process-global default registry), the
// per-verdict and per-finding counts read from the database at scrape time,
// and the counters of the live pipeline (ingest, Loki push in and out, notes).
//
// Every metric name starts with "analyzer_"; deploy/ holds the Grafana alert
// rules and dashboard written against these names, and its test checks them.
// Label sets that are known in advance (verdicts, findings, reasons, units
// already in the database) are exported at 0, so that increase() sees the
// first event of a series (a series that first appears at 1 has no base).
package metrics

import (
	"context"
	"log/slog"
	"net/http"
	"runtime"
	"runtime/debug"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/progress"
)

// Namespace prefixes every metric name.
const Namespace = "analyzer"

// The label values of the live counters (sources, ingest error, skip and
// Loki push failure reasons) are domain's (domain.IngestSourcePush,
// domain.IngestErrorReasons, ...): the components that count use them
// without importing this package.

// Unit states of analyzer_unit_state.
const (
	StateBooting = "booting" // latest attempt still running, not ready yet
	StateReady   = "ready"   // latest attempt reached ready and has not ended
	StateFailed  = "failed"  // latest attempt failed
	StateStopped = "stopped" // latest attempt ended without a failure
)

// UnitStates lists the states of analyzer_unit_state, each exported per unit.
var UnitStates = []string{StateBooting, StateReady, StateFailed, StateStopped}

// UnitState maps an attempt's verdict and end to the unit state it implies.
func UnitState(verdict domain.Verdict, endedBy string) string {
	switch {
	case verdict.IsFailure():
		return StateFailed
	case verdict == domain.VerdictRunning && endedBy == "":
		return StateBooting
	case verdict == domain.VerdictReady && endedBy == "":
		return StateReady
	}
	return StateStopped
}

// Unit names a unit of a host; units given in Options.Units have their
// label sets exported at 0 even before the database knows them.
type Unit struct{ Host, Unit string }

// Snapshotter is what the scrape-time collector reads (*store.DB has it).
type Snapshotter interface {
	MetricsSnapshot(ctx context.Context) (*domain.MetricsSnapshot, error)
}

// Options configures New. The zero value gives the live counters only.
type Options struct {
	// Store, when set, is read at every scrape for the attempt, finding
	// and unit metrics.
	Store Snapshotter
	// Findings lists finding ids exported at 0 per unit, in addition to
	// AlertedFindings: those a site's own alerts read with delta() or
	// increase(). Other findings appear with their first attempt.
	Findings []string
	// Units are exported at 0 even before they appear in the database.
	Units []Unit
	// Version is the version the binary reports (--version: the stamp of
	// make build, else the module version and revision); "" takes the
	// module version the toolchain recorded ("(devel)" for a local build).
	Version string
	// ExternalURL is the URL the analyzer's UI is reached at from outside
	// (serve --external-url, no trailing slash): links in labels start
	// with it; "" leaves them relative ("/attempts/ID").
	ExternalURL string
	// ScrapeTimeout bounds the database read of one scrape (default 5 s).
	ScrapeTimeout time.Duration
	// Now is the clock (tests); default time.Now.
	Now func() time.Time
	// Logger receives scrape errors; default slog.Default().
	Logger *slog.Logger
	// NoProcessMetrics leaves out the Go runtime and process collectors.
	NoProcessMetrics bool
	// MaxHosts caps the hosts of the per-host journal series, and the
	// (host, unit) pairs of the per-unit series read from the database
	// (default DefaultMaxHosts): past it the series of further hosts and
	// units are dropped and counted (analyzer_metrics_series_dropped_total,
	// analyzer_metrics_units_dropped), so that a push of made-up host names
	// cannot make /metrics slow and large.
	MaxHosts int
	// Progress, when set, is read at every scrape for the boots in
	// progress and whether they stalled (analyzer_boot_stalled), with
	// StallQuiet the no-history quiet limit (default
	// progress.DefaultQuiet) and StallFloor the least time past a phase's
	// p90 (default progress.StallMargin).
	Progress               progress.Lister
	StallQuiet, StallFloor time.Duration
}

// DefaultMaxHosts is the default of Options.MaxHosts.
const DefaultMaxHosts = 1000

// Metrics holds the registry and the live counters. Its methods are safe for
// concurrent use; a nil *Metrics ignores every call, so components can be
// used without metrics.
type Metrics struct {
	reg   *prometheus.Registry
	opts  Options
	store *storeCollector // nil without Options.Store

	ingestEntries *prometheus.CounterVec
	ingestBytes   *prometheus.CounterVec
	ingestErrors  *prometheus.CounterVec
	linesSkipped  *prometheus.CounterVec
	pushRequests  *prometheus.CounterVec

	notesWritten prometheus.Counter

	lokiSuccess  prometheus.Counter
	lokiFailures *prometheus.CounterVec
	lokiRetries  prometheus.Counter
	lokiRequests *prometheus.CounterVec
	lokiQueue    prometheus.Gauge

	pipelineQueue       prometheus.Gauge
	pipelineFlushes     prometheus.Counter
	pipelineFlushErrors prometheus.Counter
	pipelineSaved       prometheus.Counter

	rulesReloadSuccess prometheus.Gauge
	rulesReloadTime    prometheus.Gauge
	rulesLoaded        prometheus.Gauge

	hostsEvicted  prometheus.Counter
	seriesDropped *prometheus.CounterVec

	mu        sync.Mutex
	lastEntry map[string]time.Time // host → newest journal entry time

	lokiDelivered, lokiFailed, lokiTooOld atomic.Int64
}

// BuildInfo reads the binary's module version, VCS revision (with
// "-dirty" when the tree was modified) and Go version, "unknown" where the
// toolchain recorded none.
func BuildInfo() (version, revision, goVersion string) {
	version, revision = "unknown", "unknown"
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return version, revision, runtime.Version()
	}
	if bi.Main.Version != "" {
		version = bi.Main.Version
	}
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if dirty {
		revision += "-dirty"
	}
	return version, revision, bi.GoVersion
}

// New builds the registry with every analyzer metric registered.
func New(opts Options) *Metrics {
	if opts.ScrapeTimeout <= 0 {
		opts.ScrapeTimeout = 5 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.MaxHosts <= 0 {
		opts.MaxHosts = DefaultMaxHosts
	}
	m := &Metrics{reg: prometheus.NewRegistry(), opts: opts, lastEntry: map[string]time.Time{}}
	counterVec := func(name, help string, labels ...string) *prometheus.CounterVec {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: name, Help: help}, labels)
		m.reg.MustRegister(c)
		return c
	}
	counter := func(name, help string) prometheus.Counter {
		c := prometheus.NewCounter(prometheus.CounterOpts{Namespace: Namespace, Name: name, Help: help})
		m.reg.MustRegister(c)
		return c
	}
	gauge := func(name, help string) prometheus.Gauge {
		g := prometheus.NewGauge(prometheus.GaugeOpts{Namespace: Namespace, Name: name, Help: help})
		m.reg.MustRegister(g)
		return g
	}
	m.ingestEntries = counterVec("ingest_entries_total", "Journal entries fed to the tracker, after line reassembly.", "source")
	m.ingestBytes = counterVec("ingest_bytes_total", "Bytes of ingest input read (request bodies as received).", "source")
	m.ingestErrors = counterVec("ingest_errors_total", "Ingest requests or records refused, by reason.", "source", "reason")
	m.linesSkipped = counterVec("ingest_lines_skipped_total", "Log lines received but not fed to the tracker, by reason.", "source", "reason")
	m.pushRequests = counterVec("push_requests_total", "Requests to POST /loki/api/v1/push, by HTTP status code.", "code")
	m.notesWritten = counter("notes_written_total", "Root-cause notes written to the journal.")
	m.lokiSuccess = counter("loki_push_success_total", "Findings delivered to Loki (acknowledged with 2xx).")
	m.lokiFailures = counterVec("loki_push_failures_total", "Findings not delivered to Loki, by reason.", "reason")
	m.lokiRetries = counter("loki_push_retries_total", "Push requests to Loki retried after 429, 5xx or a network error.")
	m.lokiRequests = counterVec("loki_push_requests_total", "Push requests sent to Loki, by HTTP status code (\"error\" for network errors).", "code")
	m.lokiQueue = gauge("loki_push_queue_length", "Findings waiting to be pushed to Loki.")
	m.pipelineQueue = gauge("pipeline_queue_entries", "Entries waiting in the live pipeline's input queue.")
	m.pipelineFlushes = counter("pipeline_flushes_total", "Flushes of the live pipeline (tracker state saved to the database).")
	m.pipelineFlushErrors = counter("pipeline_flush_errors_total", "Flushes of the live pipeline that failed to save.")
	m.pipelineSaved = counter("pipeline_attempts_saved_total", "Attempt versions saved by the live pipeline (an attempt counts again when it changes).")
	m.rulesReloadSuccess = gauge("rules_last_reload_success", "1 if the last load of the rule files succeeded, 0 if it failed (the previous rules stay in use).")
	m.rulesReloadTime = gauge("rules_last_reload_timestamp_seconds", "Time of the last load of the rule files, successful or not (Unix seconds).")
	m.rulesLoaded = gauge("rules_loaded", "Rules in the rule set in use.")
	m.hostsEvicted = counter("push_hosts_evicted_total",
		"Hosts whose line reassembly state the push receiver dropped to make room for newer hosts (its host cap); their unfinished lines were emitted as log loss.")
	m.seriesDropped = counterVec("metrics_series_dropped_total",
		"Updates of per-host series left out of /metrics because the host cap (Options.MaxHosts) was reached, by metric.", "metric")
	m.seriesDropped.WithLabelValues("journal_last_entry_timestamp_seconds")
	version, revision, goVersion := BuildInfo()
	if opts.Version != "" {
		version = opts.Version
	}
	buildInfoGauge := prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Name: "build_info",
		Help: "1, labelled with the analyzer's module version, VCS revision and Go version (alerts use it to tell the analyzer was up)."},
		[]string{"version", "revision", "goversion"})
	m.reg.MustRegister(buildInfoGauge)
	buildInfoGauge.WithLabelValues(version, revision, goVersion).Set(1)

	for _, src := range []string{domain.IngestSourcePush, domain.IngestSourceJournal} {
		m.ingestEntries.WithLabelValues(src)
		m.ingestBytes.WithLabelValues(src)
		for _, r := range domain.IngestSkipReasons {
			m.linesSkipped.WithLabelValues(src, r)
		}
	}
	for _, r := range domain.IngestErrorReasons {
		m.ingestErrors.WithLabelValues(domain.IngestSourcePush, r)
	}
	m.ingestErrors.WithLabelValues(domain.IngestSourceJournal, domain.IngestErrMalformedRecord)
	for _, code := range []string{"204", "400", "401", "405", "413", "415", "429"} {
		m.pushRequests.WithLabelValues(code)
	}
	for _, r := range domain.LokiPushFailureReasons {
		m.lokiFailures.WithLabelValues(r)
	}
	m.reg.MustRegister(&journalCollector{m: m})
	if opts.Store != nil {
		m.store = newStoreCollector(opts)
		m.reg.MustRegister(m.store)
	}
	if !opts.NoProcessMetrics {
		m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	return m
}

// Registry is the analyzer's own registry (for tests and for adding
// collectors).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in the Prometheus exposition formats: text
// 0.0.4, or OpenMetrics 1.0 when the scraper's Accept header asks for it
// (Prometheus does by default; exemplars need it). A scrape whose database
// read fails still returns the live metrics (the failing collector reports
// analyzer_store_up 0 and logs the error).
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError, EnableOpenMetrics: true})
}

// IngestEntries counts n entries fed to the tracker from source.
func (m *Metrics) IngestEntries(source string, n int) {
	if m != nil && n > 0 {
		m.ingestEntries.WithLabelValues(source).Add(float64(n))
	}
}

// IngestBytes counts n input bytes read from source.
func (m *Metrics) IngestBytes(source string, n int64) {
	if m != nil && n > 0 {
		m.ingestBytes.WithLabelValues(source).Add(float64(n))
	}
}

// IngestError counts one refused request or record.
func (m *Metrics) IngestError(source, reason string) {
	if m != nil {
		m.ingestErrors.WithLabelValues(source, reason).Inc()
	}
}

// LinesSkipped counts n lines received but not fed to the tracker.
func (m *Metrics) LinesSkipped(source, reason string, n int) {
	if m != nil && n > 0 {
		m.linesSkipped.WithLabelValues(source, reason).Add(float64(n))
	}
}

// PushRequest counts one answer of the push endpoint.
func (m *Metrics) PushRequest(code int) {
	if m != nil {
		m.pushRequests.WithLabelValues(itoa(code)).Inc()
	}
}

// JournalEntry records the time of an entry of host (the newest one wins);
// analyzer_journal_lag_seconds is computed from it at scrape time.
func (m *Metrics) JournalEntry(host string, t time.Time) {
	if m == nil || t.IsZero() {
		return
	}
	m.mu.Lock()
	old, ok := m.lastEntry[host]
	switch {
	case !ok && len(m.lastEntry) >= m.opts.MaxHosts:
		m.mu.Unlock()
		m.seriesDropped.WithLabelValues("journal_last_entry_timestamp_seconds").Inc()
		return
	case t.After(old):
		m.lastEntry[host] = t
	}
	m.mu.Unlock()
}

// HostsEvicted counts n hosts the push receiver evicted.
func (m *Metrics) HostsEvicted(n int) {
	if m != nil && n > 0 {
		m.hostsEvicted.Add(float64(n))
	}
}

// NoteWritten counts one root-cause note written to the journal.
func (m *Metrics) NoteWritten() {
	if m != nil {
		m.notesWritten.Inc()
	}
}

// LokiDelivered counts n findings acknowledged by Loki.
func (m *Metrics) LokiDelivered(n int) {
	if m != nil && n > 0 {
		m.lokiSuccess.Add(float64(n))
		m.lokiDelivered.Add(int64(n))
	}
}

// LokiFailed counts n findings that were not delivered, by reason.
func (m *Metrics) LokiFailed(reason string, n int) {
	if m != nil && n > 0 {
		m.lokiFailures.WithLabelValues(reason).Add(float64(n))
		if reason == domain.LokiPushTooOld {
			m.lokiTooOld.Add(int64(n))
		} else {
			m.lokiFailed.Add(int64(n))
		}
	}
}

// LokiTotals returns the findings delivered to Loki and those that failed,
// since New; findings too old for Loki (not sent) are counted apart.
func (m *Metrics) LokiTotals() (delivered, failed, tooOld int64) {
	if m == nil {
		return 0, 0, 0
	}
	return m.lokiDelivered.Load(), m.lokiFailed.Load(), m.lokiTooOld.Load()
}

// LokiRetry counts one retried push request.
func (m *Metrics) LokiRetry() {
	if m != nil {
		m.lokiRetries.Inc()
	}
}

// LokiRequest counts one push request sent to Loki with its outcome: the
// status code, or "error" for a network error.
func (m *Metrics) LokiRequest(code string) {
	if m != nil {
		m.lokiRequests.WithLabelValues(code).Inc()
	}
}

// LokiQueue sets the length of the push queue.
func (m *Metrics) LokiQueue(n int) {
	if m != nil {
		m.lokiQueue.Set(float64(n))
	}
}

// PipelineQueue sets the number of entries queued in the live pipeline.
func (m *Metrics) PipelineQueue(n int) {
	if m != nil {
		m.pipelineQueue.Set(float64(n))
	}
}

// PipelineFlush counts one flush that saved n attempts, or failed.
func (m *Metrics) PipelineFlush(saved int, err error) {
	if m == nil {
		return
	}
	m.pipelineFlushes.Inc()
	if err != nil {
		m.pipelineFlushErrors.Inc()
		return
	}
	m.pipelineSaved.Add(float64(saved))
}

// SetFindings replaces Options.Findings, the extra finding ids exported at
// 0 per unit, so that alerts on delta() or increase() see their first
// firing.
func (m *Metrics) SetFindings(ids []string) {
	if m == nil || m.store == nil {
		return
	}
	m.store.setFindings(ids)
}

// RulesReloaded records a load of the rule files at time at: whether it
// succeeded, and the number of rules in use afterwards (the previous set's
// count when it failed).
func (m *Metrics) RulesReloaded(ok bool, at time.Time, loaded int) {
	if m == nil {
		return
	}
	if ok {
		m.rulesReloadSuccess.Set(1)
	} else {
		m.rulesReloadSuccess.Set(0)
	}
	m.rulesReloadTime.Set(float64(at.UnixNano()) / 1e9)
	m.rulesLoaded.Set(float64(loaded))
}

func itoa(n int) string {
	if n >= 100 && n <= 999 {
		return string([]byte{byte('0' + n/100), byte('0' + n/10%10), byte('0' + n%10)})
	}
	return "other"
}

// journalCollector exports the newest entry time per host and the lag to now.
type journalCollector struct{ m *Metrics }

var (
	lastEntryDesc = prometheus.NewDesc(Namespace+"_journal_last_entry_timestamp_seconds",
		"Time of the newest journal entry received from the host (Unix seconds).", []string{"host"}, nil)
	lagDesc = prometheus.NewDesc(Namespace+"_journal_lag_seconds",
		"Seconds between the newest journal entry received from the host and now.", []string{"host"}, nil)
)

func (c *journalCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- lastEntryDesc
	ch <- lagDesc
}

func (c *journalCollector) Collect(ch chan<- prometheus.Metric) {
	c.m.mu.Lock()
	hosts := make([]string, 0, len(c.m.lastEntry))
	for h := range c.m.lastEntry {
		hosts = append(hosts, h)
	}
	times := make(map[string]time.Time, len(hosts))
	for _, h := range hosts {
		times[h] = c.m.lastEntry[h]
	}
	c.m.mu.Unlock()
	sort.Strings(hosts)
	now := c.m.opts.Now()
	for _, h := range hosts {
		t := times[h]
		ch <- prometheus.MustNewConstMetric(lastEntryDesc, prometheus.GaugeValue, float64(t.UnixNano())/1e9, h)
		ch <- prometheus.MustNewConstMetric(lagDesc, prometheus.GaugeValue, now.Sub(t).Seconds(), h)
	}
}
