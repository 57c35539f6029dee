package loki_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/ingest"
	"github.com/llmfleet/analyzer/loki"
	"github.com/llmfleet/analyzer/metrics"
)

// compareMetrics checks the named metric families of m against want, in
// the text format (testutil.GatherAndCompare: every series of a family,
// HELP and TYPE included).
func compareMetrics(t *testing.T, m *metrics.Metrics, want string, names ...string) {
	t.Helper()
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), names...); err != nil {
		t.Error(err)
	}
}

// compareMetrics checks the stack's metrics (see compareMetrics).
func (s *stack) compareMetrics(t *testing.T, want string, names ...string) {
	t.Helper()
	compareMetrics(t, s.metrics, want, names...)
}

// The families the receiver and the pusher count, as /metrics exports
// them: every label value known in advance at 0, the given counts on top.

func ingestEntries(push int) string {
	return fmt.Sprintf(`# HELP analyzer_ingest_entries_total Journal entries fed to the tracker, after line reassembly.
# TYPE analyzer_ingest_entries_total counter
analyzer_ingest_entries_total{source="journal"} 0
analyzer_ingest_entries_total{source="loki_push"} %d
`, push)
}

func ingestErrors(push map[string]int) string {
	var b strings.Builder
	b.WriteString(`# HELP analyzer_ingest_errors_total Ingest requests or records refused, by reason.
# TYPE analyzer_ingest_errors_total counter
analyzer_ingest_errors_total{reason="malformed_record",source="journal"} 0
`)
	for _, r := range domain.IngestErrorReasons {
		fmt.Fprintf(&b, "analyzer_ingest_errors_total{reason=%q,source=%q} %d\n", r, domain.IngestSourcePush, push[r])
	}
	return b.String()
}

func linesSkipped(push map[string]int) string {
	var b strings.Builder
	b.WriteString(`# HELP analyzer_ingest_lines_skipped_total Log lines received but not fed to the tracker, by reason.
# TYPE analyzer_ingest_lines_skipped_total counter
`)
	for _, r := range domain.IngestSkipReasons {
		fmt.Fprintf(&b, "analyzer_ingest_lines_skipped_total{reason=%q,source=%q} 0\n", r, domain.IngestSourceJournal)
		fmt.Fprintf(&b, "analyzer_ingest_lines_skipped_total{reason=%q,source=%q} %d\n", r, domain.IngestSourcePush, push[r])
	}
	return b.String()
}

func pushRequests(byCode map[int]int) string {
	var b strings.Builder
	b.WriteString(`# HELP analyzer_push_requests_total Requests to POST /loki/api/v1/push, by HTTP status code.
# TYPE analyzer_push_requests_total counter
`)
	for _, code := range []int{204, 400, 401, 405, 413, 415, 429} {
		fmt.Fprintf(&b, "analyzer_push_requests_total{code=\"%d\"} %d\n", code, byCode[code])
	}
	return b.String()
}

func pushFailures(byReason map[string]int) string {
	var b strings.Builder
	b.WriteString(`# HELP analyzer_loki_push_failures_total Findings not delivered to Loki, by reason.
# TYPE analyzer_loki_push_failures_total counter
`)
	for _, r := range domain.LokiPushFailureReasons {
		fmt.Fprintf(&b, "analyzer_loki_push_failures_total{reason=%q} %d\n", r, byReason[r])
	}
	return b.String()
}

// replayEntries is the number of entries `analyzer replay` reads from path.
func replayEntries(t *testing.T, path string) int {
	t.Helper()
	n := 0
	if _, err := ingest.ReadFile(context.Background(), path, ingest.Options{}, func(domain.Entry) error {
		n++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

// entrySink is a loki.Sink that keeps what it is given.
type entrySink struct{ entries []domain.Entry }

func (s *entrySink) Add(entries []domain.Entry) error {
	s.entries = append(s.entries, entries...)
	return nil
}
func (s *entrySink) Saturated() bool { return false }
func (s *entrySink) RequestFlush()   {}

// TestWithoutMetrics: the receiver and the pusher work with Metrics left
// nil and with a nil *metrics.Metrics in it (an interface holding a nil
// pointer is not nil; the pointer's methods ignore a nil receiver).
func TestWithoutMetrics(t *testing.T) {
	for _, tc := range []struct {
		name string
		recv loki.ReceiverMetrics
		push loki.PusherMetrics
	}{
		{name: "unset"},
		{name: "nil *metrics.Metrics", recv: (*metrics.Metrics)(nil), push: (*metrics.Metrics)(nil)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sink := &entrySink{}
			rv := loki.NewReceiver(loki.ReceiverOptions{Sink: sink, Metrics: tc.recv})
			for _, c := range []struct {
				method, ctype string
				want          int
			}{
				{"POST", "application/x-protobuf", 204},
				{"GET", "application/x-protobuf", 405},
				{"POST", "text/plain", 415},
			} {
				req := httptest.NewRequest(c.method, loki.PushPath, strings.NewReader(string(validPush(t))))
				req.Header.Set("Content-Type", c.ctype)
				rec := httptest.NewRecorder()
				rv.ServeHTTP(rec, req)
				if rec.Code != c.want {
					t.Errorf("%s %s: %d, want %d", c.method, c.ctype, rec.Code, c.want)
				}
			}
			rv.FlushIdle(0)
			if len(sink.entries) != 2 {
				t.Errorf("the sink got %d entries, want the push's 2", len(sink.entries))
			}

			fl := &fakeLoki{t: t, script: []int{503}}
			srv := httptest.NewServer(fl)
			defer srv.Close()
			p, err := loki.NewPusher(loki.PusherConfig{URL: srv.URL, BatchWait: 10 * time.Millisecond,
				MinBackoff: 5 * time.Millisecond, MaxBackoff: 20 * time.Millisecond, MaxAge: -1, Metrics: tc.push})
			if err != nil {
				t.Fatal(err)
			}
			p.Start()
			a, f := sampleFinding()
			if !p.Offer(a, f) {
				t.Fatal("Offer refused the finding")
			}
			closePusher(t, p)
			if got := len(fl.accepted()); got != 1 {
				t.Errorf("Loki accepted %d streams after the retry, want 1", got)
			}
		})
	}
}
