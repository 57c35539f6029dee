package loki_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/grafana/loki/pkg/push"

	"github.com/llmfleet/analyzer/deploy"
	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/ingest"
	"github.com/llmfleet/analyzer/internal/fixturetest"
	"github.com/llmfleet/analyzer/internal/lokitest"
	"github.com/llmfleet/analyzer/loki"
	"github.com/llmfleet/analyzer/metrics"
	"github.com/llmfleet/analyzer/pipeline"
	"github.com/llmfleet/analyzer/rules"
	"github.com/llmfleet/analyzer/store"
	"github.com/llmfleet/analyzer/web"
)

const (
	nightLadder = "../examples/dankserver-night-ladder.journal.json"
	clawDay     = "../examples/dankclaw-day.journal.json"
	testToken   = "s3cret-push-token"
)

// stack is the analyzer's serve stack on a real loopback HTTP server and a
// real SQLite file: web UI routes, /metrics and the push endpoint.
type stack struct {
	url      string
	db       *store.DB
	live     *pipeline.Live
	recv     *loki.Receiver
	metrics  *metrics.Metrics
	pushPath string
}

type stackOptions struct {
	token       string
	maxBytes    int64
	queue       int
	findings    pipeline.FindingSink
	flushPeriod time.Duration
}

func newStack(t *testing.T, so stackOptions) *stack {
	t.Helper()
	db, err := store.Open(filepath.Join(t.TempDir(), "live.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	set, err := rules.LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	m := metrics.New(metrics.Options{Store: db, NoProcessMetrics: true})
	live := pipeline.New(db, set, pipeline.Options{Metrics: m, QueueEntries: so.queue, Findings: so.findings,
		FlushInterval: so.flushPeriod})
	live.Start()
	t.Cleanup(func() { live.Close() })
	rv := loki.NewReceiver(loki.ReceiverOptions{Sink: live, Token: so.token, MaxBytes: so.maxBytes, Metrics: m})
	h := web.New(db, web.Options{Routes: []web.Route{
		{Method: http.MethodGet, Path: "/metrics", Handler: m.Handler()},
		{Method: http.MethodPost, Path: loki.PushPath, Handler: rv},
	}})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &stack{url: srv.URL, db: db, live: live, recv: rv, metrics: m, pushPath: srv.URL + loki.PushPath}
}

// post sends one push request and returns the status and body.
func (s *stack) post(t *testing.T, body []byte, header map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.pushPath, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String()
}

// flush waits until everything pushed is judged and saved.
func (s *stack) flush(t *testing.T) {
	t.Helper()
	s.recv.FlushIdle(0)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.live.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

// readRecords and alloy are lokitest's, under the names these tests use.
func readRecords(t *testing.T, path string) []ingest.Record { return lokitest.JournalRecords(t, path) }

func alloy(t *testing.T) *deploy.AlloyJournal { return lokitest.Alloy(t) }

// alloyBatches turns journal records into push requests the way a host
// running the shipped Alloy config sends them: each record's fields become
// labels and structured metadata through the config's relabel rules and
// structured_metadata stage, the line is MESSAGE, the timestamp the
// journal's realtime; a batch groups entries by stream (so streams are
// interleaved in time across the batch), per records per request.
func alloyBatches(t *testing.T, aj *deploy.AlloyJournal, recs []ingest.Record, per int) []*push.PushRequest {
	t.Helper()
	var out []*push.PushRequest
	for start := 0; start < len(recs); start += per {
		req := &push.PushRequest{}
		idx := map[string]int{}
		for _, rec := range recs[start:min(start+per, len(recs))] {
			fields := map[string]string{}
			for k, v := range rec {
				fields[k] = string(v)
			}
			line, ok := fields["MESSAGE"]
			if !ok || line == "" {
				continue // loki.source.journal skips entries without MESSAGE
			}
			labels, meta, keep := aj.Entry(fields)
			if !keep {
				continue
			}
			var us int64
			_, _ = fmt.Sscan(fields["__REALTIME_TIMESTAMP"], &us) // none: the epoch, as before
			e := push.Entry{Timestamp: time.UnixMicro(us), Line: line}
			names := make([]string, 0, len(meta))
			for k := range meta {
				names = append(names, k)
			}
			sort.Strings(names)
			for _, k := range names {
				e.StructuredMetadata = append(e.StructuredMetadata, push.LabelAdapter{Name: k, Value: meta[k]})
			}
			ls := loki.FormatLabels(labels)
			i, ok := idx[ls]
			if !ok {
				i = len(req.Streams)
				idx[ls] = i
				req.Streams = append(req.Streams, push.Stream{Labels: ls})
			}
			req.Streams[i].Entries = append(req.Streams[i].Entries, e)
		}
		out = append(out, req)
	}
	return out
}

// replayAttempts is what `analyzer replay FILE` stores: the file through
// ingest and one tracker, saved to a fresh database and read back.
func replayAttempts(t *testing.T, path string) []*domain.Attempt {
	t.Helper()
	attempts := fixturetest.Attempts(t, path)
	db, err := store.Open(filepath.Join(t.TempDir(), "replay.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.SaveAttempts(context.Background(), attempts, nil); err != nil {
		t.Fatal(err)
	}
	return listAttempts(t, db)
}

func listAttempts(t *testing.T, db *store.DB) []*domain.Attempt {
	t.Helper()
	as, err := db.ListAttempts(context.Background(), domain.AttemptFilter{})
	if err != nil {
		t.Fatal(err)
	}
	return as
}

// comparable renders everything stored of an attempt except evidence
// cursors (journal cursors for a file, synthetic ones for a push).
func comparable(a *domain.Attempt) string {
	c := *a
	strip := func(ev []domain.Evidence) []domain.Evidence {
		out := make([]domain.Evidence, len(ev))
		for i, e := range ev {
			out[i] = domain.Evidence{Time: e.Time.UTC(), Message: e.Message}
		}
		return out
	}
	c.Evidence, c.Context = strip(a.Evidence), strip(a.Context)
	c.Findings = nil
	for _, f := range a.Findings {
		f.Evidence = strip(f.Evidence)
		f.Time = f.Time.UTC()
		c.Findings = append(c.Findings, f)
	}
	c.Timeline = nil
	for _, m := range a.Timeline {
		m.Cursor = ""
		m.Time = m.Time.UTC()
		c.Timeline = append(c.Timeline, m)
	}
	c.StartedAt, c.EndedAt, c.ReadyAt = a.StartedAt.UTC(), a.EndedAt.UTC(), a.ReadyAt.UTC()
	b, _ := json.MarshalIndent(struct {
		A        domain.AttemptJSON
		Findings []domain.Finding
		Timeline []domain.PhaseMark
		Context  []domain.Evidence
		Lines    int
		Exit     string
		CID      string
		Restart  *int
	}{c.JSON(), c.Findings, c.Timeline, c.Context, c.Lines, c.ExitCode, c.ContainerID, c.RestartCounter}, "", " ")
	return string(b)
}

// sameAttempts reports every difference between two attempt lists.
func sameAttempts(t *testing.T, want, got []*domain.Attempt) {
	t.Helper()
	if len(want) != len(got) {
		t.Errorf("want %d attempts, got %d", len(want), len(got))
	}
	byID := map[string]*domain.Attempt{}
	for _, a := range got {
		byID[a.ID] = a
	}
	for _, w := range want {
		g := byID[w.ID]
		if g == nil {
			t.Errorf("attempt %s (%s %s, %s) missing", w.ID, w.Unit, w.InvocationID, w.Verdict)
			continue
		}
		if cw, cg := comparable(w), comparable(g); cw != cg {
			t.Errorf("attempt %s (%s %s) differs:\n%s", w.ID, w.Unit, w.Verdict, firstDiff(cw, cg))
		}
	}
}

func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(al) || i < len(bl); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return fmt.Sprintf("line %d:\n want %s\n  got %s", i+1, x, y)
		}
	}
	return ""
}
