package loki_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/llmfleet/analyzer/ingest"
	"github.com/llmfleet/analyzer/internal/lokitest"
	"github.com/llmfleet/analyzer/loki"
)

const selector = `{job="systemd-journal"}`

// collect runs QueryRange over the whole test day and returns the records'
// "HOST MESSAGE" in the order handed over.
func collect(t *testing.T, cfg loki.QueryConfig) ([]string, loki.QueryStats, error) {
	t.Helper()
	if cfg.Query == "" {
		cfg.Query = selector
	}
	if cfg.Start.IsZero() {
		cfg.Start, cfg.End = day, day.Add(24*time.Hour)
	}
	var got []string
	st, err := loki.QueryRange(context.Background(), cfg, func(rec ingest.Record) error {
		got = append(got, string(rec["_HOSTNAME"])+" "+string(rec["MESSAGE"]))
		return nil
	})
	return got, st, err
}

var day = time.Date(2026, 10, 2, 0, 0, 0, 0, time.UTC)

// TestQueryRangeSharedTimestamps: entries of several streams sharing
// timestamps, with pages of 2 to 7 entries so that page boundaries fall
// inside the groups, and a group larger than the page: every entry arrives
// exactly once, in time order, with the host from the stream labels and
// the structured metadata mapped as a push's.
func TestQueryRangeSharedTimestamps(t *testing.T) {
	var a, b lokitest.Stream
	a.Labels = map[string]string{"job": "systemd-journal", "host": "alpha", "unit": "vllm.service"}
	b.Labels = map[string]string{"job": "systemd-journal", "host": "beta", "unit": "vllm.service"}
	var want []string
	for i := 0; i < 40; i++ {
		ts := day.Add(time.Duration(i/5) * time.Second) // groups of 5 share a time
		if i >= 30 {
			ts = day.Add(time.Hour) // one group of 10
		}
		s, host := &a, "alpha"
		if i%2 == 1 {
			s, host = &b, "beta"
		}
		line := fmt.Sprintf("line %02d", i)
		s.Entries = append(s.Entries, lokitest.Entry{Time: ts, Line: line, Metadata: map[string]string{"invocation_id": "inv" + host}})
		want = append(want, host+" "+line)
	}
	sort.Strings(want)
	srv := &lokitest.Server{Query: selector, Streams: []lokitest.Stream{a, b}}
	srv.Start(t)
	for limit := 2; limit <= 7; limit++ {
		got, st, err := collect(t, loki.QueryConfig{URL: srv.URL, Limit: limit})
		if err != nil {
			t.Fatalf("limit %d: %v", limit, err)
		}
		prev := 0
		for _, l := range got {
			var host string
			var i int
			_, _ = fmt.Sscanf(l, "%s line %d", &host, &i) // a line of another shape: i stays 0, out of order
			if g := min(i/5, 6); g < prev {
				t.Errorf("limit %d: %q out of time order", limit, l)
			} else {
				prev = g
			}
		}
		g := append([]string(nil), got...)
		sort.Strings(g)
		if strings.Join(g, "\n") != strings.Join(want, "\n") {
			t.Errorf("limit %d: got %d entries, want %d:\n%s", limit, len(got), len(want), strings.Join(got, "\n"))
		}
		if st.Entries != 40 || st.Lost != 0 || st.Malformed != 0 {
			t.Errorf("limit %d: stats %+v", limit, st)
		}
		if st.Repeated == 0 {
			t.Errorf("limit %d: no entry was read twice at a page boundary; the test does not test paging", limit)
		}
	}
	// Records map labels and metadata as a push does.
	var recs []ingest.Record
	if _, err := loki.QueryRange(context.Background(), loki.QueryConfig{URL: srv.URL, Query: selector, Start: day, End: day.Add(time.Second)},
		func(r ingest.Record) error { recs = append(recs, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(recs) != 5 {
		t.Fatalf("%d records in the first second, want 5", len(recs))
	}
	r := recs[0]
	if string(r["_HOSTNAME"]) != "alpha" || string(r["_SYSTEMD_UNIT"]) != "vllm.service" || string(r["_SYSTEMD_INVOCATION_ID"]) != "invalpha" ||
		string(r["__REALTIME_TIMESTAMP"]) != fmt.Sprint(day.UnixMicro()) || string(r["MESSAGE"]) != "line 00" {
		t.Errorf("first record %q", r)
	}
}

// TestQueryRangeMoreThanTheLimitAtOneTime: 5001 entries at one nanosecond
// cannot be read with Loki's largest page (5000): the query counts one lost
// timestamp and goes on to the next entry instead of looping.
func TestQueryRangeMoreThanTheLimitAtOneTime(t *testing.T) {
	s := lokitest.Stream{Labels: map[string]string{"job": "systemd-journal", "host": "h"}}
	for i := 0; i < 5001; i++ {
		s.Entries = append(s.Entries, lokitest.Entry{Time: day, Line: fmt.Sprint("same ", i)})
	}
	s.Entries = append(s.Entries, lokitest.Entry{Time: day.Add(time.Minute), Line: "after"})
	srv := &lokitest.Server{Query: selector, Streams: []lokitest.Stream{s}}
	srv.Start(t)
	got, st, err := collect(t, loki.QueryConfig{URL: srv.URL, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 5001 || got[len(got)-1] != "h after" || st.Lost != 1 {
		t.Errorf("%d entries, last %q, stats %+v; want 5000 of the group, then \"after\", 1 lost", len(got), got[len(got)-1], st)
	}
	if st.Pages > 10 {
		t.Errorf("%d pages", st.Pages)
	}
}

// TestQueryRangeUntrusted: malformed entries are skipped and counted, a
// response over the cap, a refusal and a server inventing entries at one
// timestamp end or move on with a clear error.
func TestQueryRangeUntrusted(t *testing.T) {
	ns := fmt.Sprint(day.Add(time.Second).UnixNano())
	body := `{"status":"success","data":{"resultType":"streams","result":[
		{"stream":{"job":"systemd-journal","host":"h"},"values":[
			["` + ns + `","good"],
			["not-a-number","bad time"],
			["` + ns + `"],
			["` + ns + `","bad meta",{"structuredMetadata":{"bad-name":"x"}}],
			["1","outside the range"],
			["` + ns + `", 42]]},
		{"stream":{"bad label":"x"},"values":[["` + ns + `","bad stream"]]},
		{"stream":"nope"}]}}`
	var h http.HandlerFunc = func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, body) }
	srv := httptest.NewServer(h)
	defer srv.Close()
	got, st, err := collect(t, loki.QueryConfig{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != "h good" || st.Malformed != 7 || len(st.Errors) != 7 {
		t.Errorf("got %q, stats %+v; want the good entry and 7 malformed", got, st)
	}
	// Over the size cap.
	if _, _, err := collect(t, loki.QueryConfig{URL: srv.URL, MaxBytes: 100}); err == nil || !strings.Contains(err.Error(), "over 100 bytes") {
		t.Errorf("MaxBytes 100: %v", err)
	}
	// A metric query's answer is not a log query's.
	h2 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"status":"success","data":{"resultType":"matrix","result":[]}}`)
	}))
	defer h2.Close()
	if _, _, err := collect(t, loki.QueryConfig{URL: h2.URL}); err == nil || !strings.Contains(err.Error(), "matrix") {
		t.Errorf("matrix: %v", err)
	}
	// Loki's refusal: status and body in the error.
	h3 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "the query time range exceeds the limit (query length: 745h0m0s, limit: 721h0m0s)", http.StatusBadRequest)
	}))
	defer h3.Close()
	if _, _, err := collect(t, loki.QueryConfig{URL: h3.URL}); err == nil || !strings.Contains(err.Error(), "HTTP 400: the query time range exceeds") {
		t.Errorf("400: %v", err)
	}
	// A server that answers every page with new entries at the start time:
	// the query must still end.
	n := 0
	h4 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := r.URL.Query().Get("start")
		n++
		fmt.Fprintf(w, `{"status":"success","data":{"resultType":"streams","result":[{"stream":{"host":"h"},"values":[["%s","a%d"],["%s","b%d"]]}]}}`, start, n, start, n)
	}))
	defer h4.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st4, err := loki.QueryRange(ctx, loki.QueryConfig{URL: h4.URL, Query: selector, Limit: 2, Start: day, End: day.Add(3)},
		func(ingest.Record) error { return nil })
	if err != nil || st4.Lost != 3 || st4.Pages != 3*65 {
		t.Errorf("inventing server: %v, stats %+v", err, st4)
	}
}
