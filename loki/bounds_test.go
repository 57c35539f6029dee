package loki_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang/snappy"
	"github.com/grafana/loki/pkg/push"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/ingest"
	"github.com/llmfleet/analyzer/internal/fuzzcost"
	"github.com/llmfleet/analyzer/internal/race"
	"github.com/llmfleet/analyzer/loki"
	"github.com/llmfleet/analyzer/metrics"
)

// keepSink keeps what a push queued, as the pipeline's queue does, so that
// what the entries hold counts in the measured heap.
type keepSink struct {
	mu sync.Mutex
	es []domain.Entry
}

func (s *keepSink) Add(es []domain.Entry) error {
	s.mu.Lock()
	s.es = append(s.es, es...)
	s.mu.Unlock()
	return nil
}
func (s *keepSink) Saturated() bool { return false }
func (s *keepSink) RequestFlush()   {}
func (s *keepSink) n() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.es)
}

// oneStreamPush is a snappy push of n one-byte entries, 1 µs apart, on one
// stream whose host label is hostBytes long.
func oneStreamPush(t *testing.T, hostBytes, n int) []byte {
	t.Helper()
	st := push.Stream{Labels: `{host="` + strings.Repeat("h", hostBytes) + `", job="journal"}`}
	for i := 0; i < n; i++ {
		st.Entries = append(st.Entries, push.Entry{Timestamp: time.UnixMicro(1790916000000000 + int64(i)), Line: "x"})
	}
	b, err := loki.EncodeProtobuf(&push.PushRequest{Streams: []push.Stream{st}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func servePush(rv *loki.Receiver, body []byte) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, loki.PushPath, bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/x-protobuf")
	w := httptest.NewRecorder()
	rv.ServeHTTP(w, r)
	return w
}

// pushBudget is what one reproduction may cost: issue 28's 100 MiB above
// the server's baseline.
const pushBudget = 100 << 20

// TestHugeHostLabelPush is issue 28's reproduction: a 146 KB snappy push,
// a 100 KB host label on 20,000 one-byte entries, once took the server
// past 2.2 GB in 6 s (every record copied every label, the synthetic
// cursor embedded the host). Loki refuses a label value over 2048 bytes
// (max_label_value_length) with 400; so does the analyzer, before any
// per-entry work.
func TestHugeHostLabelPush(t *testing.T) {
	body := oneStreamPush(t, 100<<10, 20000)
	if len(body) > 200<<10 {
		t.Fatalf("the reproduction is %d bytes, want about 146 KB", len(body))
	}
	sink := &keepSink{}
	rv := loki.NewReceiver(loki.ReceiverOptions{Sink: sink})
	var w *httptest.ResponseRecorder
	c := fuzzcost.Measure(func() { w = servePush(rv, body) })
	t.Logf("%d-byte push: %d, allocated %d MiB, peak heap %d MiB, %v", len(body), w.Code, c.Alloc>>20, c.PeakHeap>>20, c.Time)
	if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), "max_label_value_length") {
		t.Errorf("answer %d %q, want 400 naming max_label_value_length", w.Code, w.Body.String())
	}
	if sink.n() != 0 {
		t.Errorf("%d entries queued from the refused stream", sink.n())
	}
	if c.Alloc > pushBudget || c.PeakHeap > pushBudget || c.Time > race.Budget(time.Second) {
		t.Errorf("cost %d MiB allocated, %d MiB peak, %v: over 100 MiB or 1 s", c.Alloc>>20, c.PeakHeap>>20, c.Time)
	}
}

// TestLongestHostLabelPushIsCheap: the same push with a host label at
// Loki's limit (2048 bytes) is taken, and its cost does not grow with the
// label times the entries: records share the stream's labels, and the
// synthetic cursor holds a hash of the stream, not its labels.
func TestLongestHostLabelPushIsCheap(t *testing.T) {
	body := oneStreamPush(t, loki.MaxLabelValueLength, 20000)
	sink := &keepSink{}
	rv := loki.NewReceiver(loki.ReceiverOptions{Sink: sink})
	var w *httptest.ResponseRecorder
	c := fuzzcost.Measure(func() { w = servePush(rv, body) })
	t.Logf("%d-byte push: %d, allocated %d MiB, peak heap %d MiB, %v", len(body), w.Code, c.Alloc>>20, c.PeakHeap>>20, c.Time)
	if w.Code != http.StatusNoContent {
		t.Fatalf("answer %d %q, want 204", w.Code, w.Body.String())
	}
	if sink.n() != 20000 {
		t.Errorf("%d entries queued, want 20000", sink.n())
	}
	for _, e := range sink.es[:1] {
		if len(e.Cursor) > 128 || strings.Contains(e.Cursor, "hhhh") {
			t.Errorf("cursor of %d bytes holds the host: %.80q", len(e.Cursor), e.Cursor)
		}
		if len(e.Host) != loki.MaxLabelValueLength {
			t.Errorf("host of %d bytes, want %d", len(e.Host), loki.MaxLabelValueLength)
		}
	}
	if c.Alloc > pushBudget || c.PeakHeap > pushBudget || c.Time > race.Budget(time.Second) {
		t.Errorf("cost %d MiB allocated, %d MiB peak, %v: over 100 MiB or 1 s", c.Alloc>>20, c.PeakHeap>>20, c.Time)
	}
}

// manyHostsPush is a snappy push of n streams, each a new host with one
// line: issue 28's 813 KB pushes of 100,000 new hosts.
func manyHostsPush(t *testing.T, first, n int) []byte {
	t.Helper()
	req := &push.PushRequest{}
	for i := first; i < first+n; i++ {
		req.Streams = append(req.Streams, push.Stream{Labels: fmt.Sprintf(`{host="h%07d", unit="vllm.service"}`, i),
			Entries: []push.Entry{{Timestamp: time.Unix(1790916000, int64(i)), Line: "INFO Starting vLLM API server"}}})
	}
	b, err := loki.EncodeProtobuf(req)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestManyNewHostsPush is issue 28's reproduction: three pushes of 100,000
// new hosts each once peaked at 2.6 GB and held 1.85 GB when idle. The
// receiver holds at most MaxHosts hosts (the least recently pushing ones
// are evicted and counted), forgets idle ones, and /metrics keeps at most
// its host cap of per-host series, counting the rest.
func TestManyNewHostsPush(t *testing.T) {
	now := time.Unix(1790916000, 0)
	m := metrics.New(metrics.Options{NoProcessMetrics: true})
	// The pipeline records each entry's host for the journal series; its
	// queue is bounded on its own, so the entries are not kept here.
	sink := &hostSink{m: m}
	rv := loki.NewReceiver(loki.ReceiverOptions{Sink: sink, Metrics: m, Now: func() time.Time { return now }})
	for round := 0; round < 3; round++ {
		body := manyHostsPush(t, round*100000, 100000)
		var w *httptest.ResponseRecorder
		c := fuzzcost.Measure(func() { w = servePush(rv, body) })
		t.Logf("push %d: %d bytes, %d, allocated %d MiB, peak heap %d MiB, retained %d MiB, %v",
			round, len(body), w.Code, c.Alloc>>20, c.PeakHeap>>20, c.Retained>>20, c.Time)
		if w.Code != http.StatusNoContent {
			t.Fatalf("push %d: %d %s", round, w.Code, w.Body.String())
		}
		// 100,000 entries decoded at once are some 60 MiB live (the
		// pipeline's queue takes them); the peak counts garbage up to
		// as much again (GOGC=100). What a push leaves held is bounded
		// by the host cap, whatever the hosts.
		if c.Retained > 16<<20 || c.PeakHeap > uint64(race.Memory(2*pushBudget)) || c.Time > race.Budget(5*time.Second) {
			t.Errorf("push %d cost %d MiB retained, %d MiB peak, %v: over 16 MiB, 200 MiB or 5 s", round, c.Retained>>20, c.PeakHeap>>20, c.Time)
		}
		if h := rv.Hosts(); h != loki.DefaultMaxHosts {
			t.Errorf("after push %d the receiver holds %d hosts, want its cap %d", round, h, loki.DefaultMaxHosts)
		}
	}
	if n := sink.entries; n != 300000 {
		t.Errorf("%d entries queued, want 300000", n)
	}
	if got := testutil.ToFloat64(metricByName(t, m, "analyzer_push_hosts_evicted_total")); got != 300000-loki.DefaultMaxHosts {
		t.Errorf("analyzer_push_hosts_evicted_total %v, want %d", got, 300000-loki.DefaultMaxHosts)
	}
	// Once idle, the hosts are forgotten.
	now = now.Add(time.Hour)
	rv.FlushIdle(time.Minute)
	if h := rv.Hosts(); h != 0 {
		t.Errorf("%d hosts held after an hour idle", h)
	}

	var out bytes.Buffer
	c := fuzzcost.Measure(func() {
		rec := httptest.NewRecorder()
		m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		out = *rec.Body
	})
	t.Logf("/metrics: %d bytes, %v", out.Len(), c.Time)
	if n := strings.Count(out.String(), "analyzer_journal_lag_seconds{"); n != metrics.DefaultMaxHosts {
		t.Errorf("%d journal lag series, want the cap %d", n, metrics.DefaultMaxHosts)
	}
	if !strings.Contains(out.String(), `analyzer_metrics_series_dropped_total{metric="journal_last_entry_timestamp_seconds"} 299000`) {
		t.Errorf("dropped series not counted:\n%s", grepLines(out.String(), "dropped"))
	}
	if out.Len() > 1<<20 || c.Time > race.Budget(time.Second) {
		t.Errorf("/metrics is %d bytes and took %v", out.Len(), c.Time)
	}
}

// hostSink counts entries and records their hosts in m, as the pipeline does.
type hostSink struct {
	m       *metrics.Metrics
	entries int
}

func (s *hostSink) Add(es []domain.Entry) error {
	s.entries += len(es)
	for _, e := range es {
		s.m.JournalEntry(e.Host, e.Time)
	}
	return nil
}
func (s *hostSink) Saturated() bool { return false }
func (s *hostSink) RequestFlush()   {}

func grepLines(s, word string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, word) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// metricByName returns the collector of one counter of m's registry.
func metricByName(t *testing.T, m *metrics.Metrics, name string) prometheus.Collector {
	t.Helper()
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: "copy"},
				func() float64 { return mf.GetMetric()[0].GetCounter().GetValue() })
		}
	}
	t.Fatalf("%s not on /metrics", name)
	return nil
}

// TestPushResynchronises: a malformed entry, or a stream over a label
// limit, is skipped and counted, and the rest of the push arrives; the
// answer is Loki's 400 naming the first problem.
func TestPushResynchronises(t *testing.T) {
	entry := func(sec int64, line string) []byte {
		b, err := (&push.Entry{Timestamp: time.Unix(sec, 0), Line: line}).Marshal()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	stream := func(labels string, entries ...[]byte) []byte {
		var b []byte
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendString(b, labels)
		for _, e := range entries {
			b = protowire.AppendTag(b, 2, protowire.BytesType)
			b = protowire.AppendBytes(b, e)
		}
		return b
	}
	var tooMany []string
	for i := 0; i < loki.MaxLabelNamesPerSeries+1; i++ {
		tooMany = append(tooMany, fmt.Sprintf(`l%d="v"`, i))
	}
	var req []byte
	for _, s := range [][]byte{
		stream(`{host="a", unit="u.service"}`, entry(1790916000, "one"), []byte{0x0a, 0xff, 0xff}, entry(1790916002, "three")),
		stream(`{host="b", `+strings.Join(tooMany, ", ")+`}`, entry(1790916003, "refused")),
		stream(`{host="c", unit="u.service"}`, entry(1790916004, "four")),
	} {
		req = protowire.AppendTag(req, 1, protowire.BytesType)
		req = protowire.AppendBytes(req, s)
	}
	m := metrics.New(metrics.Options{NoProcessMetrics: true})
	sink := &keepSink{}
	rv := loki.NewReceiver(loki.ReceiverOptions{Sink: sink, Metrics: m})
	w := servePush(rv, snappy.Encode(nil, req))
	if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), "stream 0 entry 1") {
		t.Errorf("answer %d %q, want 400 naming stream 0 entry 1", w.Code, w.Body.String())
	}
	var lines []string
	for _, e := range sink.es {
		lines = append(lines, e.Host+":"+e.Message)
	}
	if got := strings.Join(lines, " "); got != "a:one a:three c:four" {
		t.Errorf("queued %q, want a:one a:three c:four", got)
	}
	if got := testutil.ToFloat64(metricByName(t, m, "analyzer_push_hosts_evicted_total")); got != 0 {
		t.Errorf("evicted %v", got)
	}
	var out bytes.Buffer
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	out = *rec.Body
	if !strings.Contains(out.String(), `analyzer_ingest_lines_skipped_total{reason="malformed",source="loki_push"} 2`) {
		t.Errorf("skipped entries not counted:\n%s", grepLines(out.String(), "skipped"))
	}

	// The stream over the limit alone: 400 naming Loki's limit.
	only := protowire.AppendTag(nil, 1, protowire.BytesType)
	only = protowire.AppendBytes(only, stream(`{host="b", `+strings.Join(tooMany, ", ")+`}`, entry(1790916003, "refused")))
	if w := servePush(rv, snappy.Encode(nil, only)); w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), "max_label_names_per_series") {
		t.Errorf("answer %d %q, want 400 naming max_label_names_per_series", w.Code, w.Body.String())
	}

	// JSON: a bad timestamp and a wrong arity are skipped, the rest taken.
	sink.es = nil
	r := httptest.NewRequest(http.MethodPost, loki.PushPath, strings.NewReader(
		`{"streams":[{"stream":{"host":"j"},"values":[["1790916010000000000","ok1"],["yesterday","bad"],["1"],["1790916011000000000","ok2"]]}]}`))
	r.Header.Set("Content-Type", "application/json")
	w = httptest.NewRecorder()
	rv.ServeHTTP(w, r)
	lines = nil
	for _, e := range sink.es {
		lines = append(lines, e.Host+":"+e.Message)
	}
	if w.Code != http.StatusBadRequest || strings.Join(lines, " ") != "j:ok1 j:ok2" {
		t.Errorf("JSON push: %d %q, queued %q, want 400 and j:ok1 j:ok2", w.Code, w.Body.String(), lines)
	}
}

// hugeLabelPage is a query_range answer of 40 streams, each a 1 MB host
// label on 1,000 entries at day + 1 s: issue 28's 41 MB page.
func hugeLabelPage() []byte {
	var b bytes.Buffer
	b.WriteString(`{"status":"success","data":{"resultType":"streams","result":[`)
	ns := fmt.Sprint(day.Add(time.Second).UnixNano())
	for s := 0; s < 40; s++ {
		if s > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"stream":{"job":"systemd-journal","host":"%d%s"},"values":[`, s, strings.Repeat("h", 1<<20))
		for i := 0; i < 1000; i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `["%s","line %d"]`, ns, i)
		}
		b.WriteString(`]}`)
	}
	b.WriteString(`]}}`)
	return b.Bytes()
}

// TestHugeLabelPage is issue 28's reproduction: replay --from-loki against
// a Loki answering a 41 MB page (1 MB labels on 40,000 entries) once took
// more than 4 GB in 10 s (every entry's identity held its stream's labels).
// With the default cap the page is refused unread; under a cap raised
// past it, its streams break max_label_value_length and are skipped
// before their entries are read, and the query ends with a clear error,
// as a full page that brings nothing new cannot be paged past.
func TestHugeLabelPage(t *testing.T) {
	page := hugeLabelPage()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(page) }))
	defer srv.Close()
	for _, tc := range []struct {
		maxBytes int64
		want     string
	}{
		{0, fmt.Sprintf("response over %d bytes", loki.DefaultQueryMaxBytes)},
		{64 << 20, "no progress"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		var st loki.QueryStats
		var err error
		n := 0
		c := fuzzcost.Measure(func() {
			st, err = loki.QueryRange(ctx, loki.QueryConfig{URL: srv.URL, Query: selector, Start: day, End: day.Add(time.Hour),
				MaxBytes: tc.maxBytes, Limit: 40000}, func(ingest.Record) error { n++; return nil })
		})
		cancel()
		t.Logf("%d-byte page, cap %d: %v; stats %d pages, %d malformed; allocated %d MiB, peak %d MiB, %v",
			len(page), tc.maxBytes, err, st.Pages, st.Malformed, c.Alloc>>20, c.PeakHeap>>20, c.Time)
		if err == nil || !strings.Contains(err.Error(), tc.want) || n != 0 {
			t.Errorf("cap %d: %v with %d records, want an error saying %q", tc.maxBytes, err, n, tc.want)
		}
		if tc.maxBytes > 0 && st.Malformed != 40000 {
			t.Errorf("%d malformed, want the 40,000 entries of the refused streams", st.Malformed)
		}
		// Under the default cap the page is not read past it. Under a cap
		// raised past the page, it is read whole, each stream's JSON copied
		// once to decode it alone, and the labels decoded before they are
		// refused: some four times the page (not streamed: a known cost of
		// raising the cap), yet nothing per entry.
		if tc.maxBytes == 0 && (c.Alloc > uint64(race.Memory(pushBudget)) || c.PeakHeap > uint64(race.Memory(pushBudget))) {
			t.Errorf("default cap: %d MiB allocated, %d MiB peak: over 100 MiB", c.Alloc>>20, c.PeakHeap>>20)
		}
		if tc.maxBytes > 0 && c.Alloc > uint64(race.Memory(5*int64(len(page)))) {
			t.Errorf("cap %d: %d MiB allocated for a %d MiB page", tc.maxBytes, c.Alloc>>20, len(page)>>20)
		}
		if c.Time > race.Budget(5*time.Second) {
			t.Errorf("cap %d: %v", tc.maxBytes, c.Time)
		}
	}
}

// TestRepeatedPage is issue 28's reproduction: a Loki that answers every
// request with the same full page, whatever its start, once kept
// replay --from-loki going for ever (1 ns further every 4 pages). Time
// paging ends with ErrNoProgress once a full page brings nothing at or
// after the asked start.
func TestRepeatedPage(t *testing.T) {
	var b bytes.Buffer
	b.WriteString(`{"status":"success","data":{"resultType":"streams","result":[{"stream":{"host":"h"},"values":[`)
	for i := 0; i < loki.DefaultQueryLimit; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `["%d","line %d"]`, day.Add(time.Duration(i)*time.Millisecond).UnixNano(), i)
	}
	b.WriteString(`]}]}}`)
	page := b.Bytes()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(page) }))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n := 0
	st, err := loki.QueryRange(ctx, loki.QueryConfig{URL: srv.URL, Query: selector, Start: day, End: day.Add(time.Hour)},
		func(ingest.Record) error { n++; return nil })
	t.Logf("%v; %d records, %d pages", err, n, st.Pages)
	if !errors.Is(err, loki.ErrNoProgress) {
		t.Fatalf("%v, want ErrNoProgress", err)
	}
	if n != loki.DefaultQueryLimit || st.Pages > 5 {
		t.Errorf("%d records in %d pages, want the page's %d once, in a few pages", n, st.Pages, loki.DefaultQueryLimit)
	}
}
