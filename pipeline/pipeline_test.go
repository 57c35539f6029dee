package pipeline_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/ingest"
	"github.com/llmfleet/analyzer/metrics"
	"github.com/llmfleet/analyzer/pipeline"
	"github.com/llmfleet/analyzer/rules"
	"github.com/llmfleet/analyzer/store"
	"github.com/llmfleet/analyzer/tracker"
)

var fixtures = []string{
	"../examples/dankserver-night-ladder.journal.json",
	"../examples/dankclaw-day.journal.json",
}

func ruleSet(t *testing.T) *rules.Set {
	t.Helper()
	set, err := rules.LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func openDB(t *testing.T) *store.DB {
	t.Helper()
	db, err := store.Open(filepath.Join(t.TempDir(), "p.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// entries reads the files as replay does (reassembled entries).
func entries(t *testing.T, paths ...string) []domain.Entry {
	t.Helper()
	var out []domain.Entry
	for _, p := range paths {
		if _, err := ingest.ReadFile(context.Background(), p, ingest.Options{}, func(e domain.Entry) error {
			out = append(out, e)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// replayed is what replay stores for the same entries.
func replayed(t *testing.T, es []domain.Entry) []*domain.Attempt {
	t.Helper()
	tr := tracker.New(ruleSet(t), tracker.Options{})
	for _, e := range es {
		tr.Add(e)
	}
	tr.Finish()
	db := openDB(t)
	if err := db.SaveAttempts(context.Background(), tr.Attempts(), nil); err != nil {
		t.Fatal(err)
	}
	return list(t, db)
}

func list(t *testing.T, db *store.DB) []*domain.Attempt {
	t.Helper()
	as, err := db.ListAttempts(context.Background(), domain.AttemptFilter{})
	if err != nil {
		t.Fatal(err)
	}
	return as
}

func render(as []*domain.Attempt) string {
	b, _ := json.MarshalIndent(as, "", " ")
	return string(b)
}

func flush(t *testing.T, l *pipeline.Live) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

// sink records the findings offered, once per (attempt, finding, rule),
// like the Loki pusher.
type sink struct {
	mu     sync.Mutex
	offers map[string]domain.Finding
	order  []string
}

func (s *sink) Offer(a *domain.Attempt, f domain.Finding) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.offers == nil {
		s.offers = map[string]domain.Finding{}
	}
	k := a.ID + "/" + f.ID + "/" + f.Rule
	if _, ok := s.offers[k]; ok {
		return false
	}
	s.offers[k] = f
	s.order = append(s.order, k)
	return true
}

func (s *sink) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.offers)
}

// TestLiveMatchesReplay feeds both fixture hosts in small batches and checks
// the database holds what replay stores, and that flushing again without new
// entries saves nothing.
func TestLiveMatchesReplay(t *testing.T) {
	es := entries(t, fixtures...)
	want := replayed(t, es)
	t.Run("default", func(t *testing.T) { liveMatchesReplay(t, es, want, 0) })
	// Pruning ended attempts from the tracker as the night goes on
	// changes nothing in what is stored.
	t.Run("pruning", func(t *testing.T) { liveMatchesReplay(t, es, want, time.Minute) })
}

func liveMatchesReplay(t *testing.T, es []domain.Entry, want []*domain.Attempt, prune time.Duration) {
	db := openDB(t)
	m := &flushLog{Metrics: metrics.New(metrics.Options{NoProcessMetrics: true})}
	fs := &sink{}
	l := pipeline.New(db, ruleSet(t), pipeline.Options{Metrics: m, Findings: fs, FlushInterval: time.Hour, PruneAfter: prune})
	l.Start()
	defer l.Close()
	for i := 0; i < len(es); i += 37 {
		if err := l.Add(es[i:min(i+37, len(es))]); err != nil {
			t.Fatal(err)
		}
		if i%370 == 0 {
			flush(t, l) // save in the middle too: later saves update the same rows
		}
	}
	flush(t, l)
	got := list(t, db)
	if render(got) != render(want) {
		t.Errorf("live pipeline and replay disagree:\nlive %d attempts, replay %d", len(got), len(want))
	}
	// Every stored attempt was saved at least once, and /metrics says
	// what the pipeline reported.
	saved, flushes := m.totals()
	if saved < len(got) {
		t.Errorf("the flushes saved %d attempt versions, fewer than the %d attempts stored", saved, len(got))
	}
	compareFlushMetrics(t, m, saved, flushes)
	flush(t, l)
	if again, _ := m.totals(); again != saved {
		t.Errorf("a flush without new entries saved %d attempts", again-saved)
	}
	_, flushes = m.totals()
	compareFlushMetrics(t, m, saved, flushes)
	// Every finding of an ended attempt is offered once.
	n := 0
	for _, a := range got {
		if a.EndedBy != "" {
			n += len(a.Findings)
		}
	}
	if fs.count() != n || n == 0 {
		t.Errorf("offered %d findings, want %d", fs.count(), n)
	}
}

// flushLog is a pipeline.Metrics that records the flushes the pipeline
// reports and passes every call on to the real metrics.
type flushLog struct {
	*metrics.Metrics
	mu      sync.Mutex
	saved   int // attempt versions the flushes saved
	flushes int
}

func (f *flushLog) PipelineFlush(saved int, err error) {
	f.Metrics.PipelineFlush(saved, err)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.flushes++
	if err == nil {
		f.saved += saved
	}
}

func (f *flushLog) totals() (saved, flushes int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.saved, f.flushes
}

// compareFlushMetrics checks the pipeline's flush counters on /metrics
// (testutil.GatherAndCompare): saved attempt versions, flushes, no error.
func compareFlushMetrics(t *testing.T, m *flushLog, saved, flushes int) {
	t.Helper()
	want := fmt.Sprintf(`# HELP analyzer_pipeline_attempts_saved_total Attempt versions saved by the live pipeline (an attempt counts again when it changes).
# TYPE analyzer_pipeline_attempts_saved_total counter
analyzer_pipeline_attempts_saved_total %d
# HELP analyzer_pipeline_flushes_total Flushes of the live pipeline (tracker state saved to the database).
# TYPE analyzer_pipeline_flushes_total counter
analyzer_pipeline_flushes_total %d
# HELP analyzer_pipeline_flush_errors_total Flushes of the live pipeline that failed to save.
# TYPE analyzer_pipeline_flush_errors_total counter
analyzer_pipeline_flush_errors_total 0
`, saved, flushes)
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "analyzer_pipeline_attempts_saved_total",
		"analyzer_pipeline_flushes_total", "analyzer_pipeline_flush_errors_total"); err != nil {
		t.Error(err)
	}
}

// TestFindingsOfRunningAttemptWaitGrace: a root cause seen while the unit
// still runs is offered only once it has stood for FindingGrace; when the
// attempt ends, its findings go at once.
func TestFindingsOfRunningAttemptWaitGrace(t *testing.T) {
	es := entries(t, fixtures[0])
	// Cut the night just after the first OOM line: the attempt has its
	// verdict but has not exited yet.
	cut := -1
	for i, e := range es {
		if strings.Contains(e.Message, "Tried to allocate 76.00 MiB") {
			cut = i + 1
			break
		}
	}
	if cut < 0 {
		t.Fatal("no OOM line in the fixture")
	}
	var mu sync.Mutex
	now := time.Unix(1790990000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	fs := &sink{}
	db := openDB(t)
	l := pipeline.New(db, ruleSet(t), pipeline.Options{Findings: fs, FindingGrace: time.Minute, FlushInterval: time.Hour, Now: clock})
	l.Start()
	defer l.Close()
	if err := l.Add(es[:cut]); err != nil {
		t.Fatal(err)
	}
	flush(t, l)
	as := list(t, db)
	if len(as) != 1 || as[0].Verdict != domain.VerdictOOMGraphCapture || as[0].EndedBy != "" {
		t.Fatalf("want one running attempt judged oom_graph_capture, got %s", render(as))
	}
	if fs.count() != 0 {
		t.Fatalf("offered %d findings of a running attempt at once", fs.count())
	}
	mu.Lock()
	now = now.Add(2 * time.Minute)
	mu.Unlock()
	flush(t, l)
	if fs.count() != 1 {
		t.Fatalf("after the grace period: %d findings offered, want 1", fs.count())
	}
	if err := l.Add(es[cut:]); err != nil {
		t.Fatal(err)
	}
	flush(t, l)
	want := 0
	for _, a := range list(t, db) {
		if a.EndedBy != "" {
			want += len(a.Findings)
		}
	}
	if fs.count() != want {
		t.Errorf("offered %d, want %d", fs.count(), want)
	}
}

// TestSaturated: Add refuses a batch while the queue is full, and takes it
// again once the worker drained the queue.
func TestSaturated(t *testing.T) {
	es := entries(t, fixtures[1])
	l := pipeline.New(openDB(t), ruleSet(t), pipeline.Options{QueueEntries: 10})
	defer l.Close()
	if err := l.Add(es[:20]); err != nil { // one batch may pass the bound
		t.Fatal(err)
	}
	if !l.Saturated() {
		t.Fatal("not saturated with 20 of 10 entries queued")
	}
	if err := l.Add(es[20:21]); !errors.Is(err, pipeline.ErrSaturated) {
		t.Fatalf("Add into a full queue: %v", err)
	}
	l.Start()
	flush(t, l)
	if l.Saturated() || l.Queued() != 0 {
		t.Fatal("still saturated after the worker drained the queue")
	}
	if err := l.Add(es[20:]); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Add(es[:1]); !errors.Is(err, pipeline.ErrClosed) {
		t.Errorf("Add after Close: %v", err)
	}
}

// TestRestartDoesNotOverwriteStoredAttempt: after an analyzer restart the
// tracker sees only the rest of an attempt; the database's fuller record of
// it (same id, earlier start) is kept.
func TestRestartDoesNotOverwriteStoredAttempt(t *testing.T) {
	es := entries(t, fixtures[1])
	db := openDB(t)
	first := pipeline.New(db, ruleSet(t), pipeline.Options{})
	first.Start()
	half := len(es) / 2
	if err := first.Add(es[:half]); err != nil {
		t.Fatal(err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	before := render(list(t, db))

	second := pipeline.New(db, ruleSet(t), pipeline.Options{})
	second.Start()
	defer second.Close()
	// The output of the first half's last invocation, without its first
	// lines: the tail of an attempt the first process saw start.
	inv := ""
	for _, e := range es[:half] {
		if e.InvocationID != "" {
			inv = e.InvocationID
		}
	}
	var tail []domain.Entry
	for _, e := range es[:half] {
		if e.InvocationID == inv {
			tail = append(tail, e)
		}
	}
	if len(tail) < 4 {
		t.Fatalf("only %d lines of invocation %s in the first half", len(tail), inv)
	}
	if err := second.Add(tail[2:]); err != nil {
		t.Fatal(err)
	}
	flush(t, second)
	probe := tracker.New(ruleSet(t), tracker.Options{})
	for _, e := range tail[2:] {
		probe.Add(e)
	}
	if len(probe.Attempts()) != 1 {
		t.Fatal("the tail alone does not make an attempt; the test would prove nothing")
	}
	if after := render(list(t, db)); after != before {
		t.Errorf("the second process overwrote attempts it only saw the end of")
	}
}

// TestWithoutMetrics: the pipeline runs with Metrics left nil and with a
// nil *metrics.Metrics in it (an interface holding a nil pointer is not
// nil; the pointer's methods ignore a nil receiver), and stores what replay
// stores.
func TestWithoutMetrics(t *testing.T) {
	es := entries(t, fixtures[1])
	want := replayed(t, es)
	for _, tc := range []struct {
		name string
		m    pipeline.Metrics
	}{
		{name: "unset"},
		{name: "nil *metrics.Metrics", m: (*metrics.Metrics)(nil)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := openDB(t)
			l := pipeline.New(db, ruleSet(t), pipeline.Options{Metrics: tc.m, FlushInterval: time.Hour})
			l.Start()
			defer l.Close()
			if err := l.Add(es); err != nil {
				t.Fatal(err)
			}
			flush(t, l)
			if got := list(t, db); render(got) != render(want) {
				t.Errorf("stored %d attempts, replay %d, or they differ", len(got), len(want))
			}
		})
	}
}
