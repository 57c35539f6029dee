// Package lokitest is an in-process stand-in for Loki's read path, for the
// tests of `analyzer replay --from-loki`: it holds log streams and answers
// GET /loki/api/v1/query_range as Loki does for a log query (the format of
// https://grafana.com/docs/loki/latest/reference/loki-http-api/#query-logs-within-a-range-of-time):
// {"status":"success","data":{"resultType":"streams","result":[{"stream":
// {labels},"values":[["<ns>","<line>"],…]}]}}, entries with start <= t <
// end, the first `limit` of them in the asked direction, grouped by stream;
// with the header X-Loki-Response-Encoding-Flags: categorize-labels each
// value carries a third element {"structuredMetadata":{…}}, without it the
// structured metadata are merged into the stream labels (as Loki 3 does).
package lokitest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmfleet/analyzer/deploy"
	"github.com/llmfleet/analyzer/ingest"
)

// MaxLimit is Loki's default max_entries_limit_per_query.
const MaxLimit = 5000

// Entry is one stored log entry.
type Entry struct {
	Time     time.Time
	Line     string
	Metadata map[string]string // structured metadata
}

// Stream is one label set and its entries.
type Stream struct {
	Labels  map[string]string
	Entries []Entry
}

// Server is the fake Loki. Set its fields before the first request.
type Server struct {
	// Query is the only LogQL query answered; others get 400.
	Query string
	// Token, when set, must come as "Authorization: Bearer TOKEN".
	Token   string
	Streams []Stream

	URL string
	mu  sync.Mutex
	// Requests counts the query_range requests answered 200.
	requests int
}

// Start serves s on a loopback port until the test ends and sets s.URL.
func (s *Server) Start(t testing.TB) {
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	s.URL = srv.URL
}

// Requests is the number of pages served.
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests
}

type flat struct {
	ts     int64
	stream int
	e      *Entry
}

func lokiError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	fmt.Fprintln(w, msg)
}

// ServeHTTP answers query_range.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/loki/api/v1/query_range" {
		lokiError(w, http.StatusNotFound, "404 page not found")
		return
	}
	if s.Token != "" && r.Header.Get("Authorization") != "Bearer "+s.Token {
		lokiError(w, http.StatusUnauthorized, "no org id") // what an auth proxy in front of Loki answers varies
		return
	}
	q := r.URL.Query()
	if q.Get("query") != s.Query {
		lokiError(w, http.StatusBadRequest, fmt.Sprintf("parse error : unexpected query %q", q.Get("query")))
		return
	}
	start, err1 := strconv.ParseInt(q.Get("start"), 10, 64)
	end, err2 := strconv.ParseInt(q.Get("end"), 10, 64)
	limit, err3 := strconv.Atoi(q.Get("limit"))
	if err1 != nil || err2 != nil || err3 != nil {
		lokiError(w, http.StatusBadRequest, "invalid start, end or limit")
		return
	}
	if limit > MaxLimit {
		lokiError(w, http.StatusBadRequest, fmt.Sprintf("max entries limit per query exceeded, limit > max_entries_limit_per_query (%d > %d)", limit, MaxLimit))
		return
	}
	if end <= start {
		lokiError(w, http.StatusBadRequest, "end timestamp must not be before or equal to start time")
		return
	}
	backward := q.Get("direction") != "forward" // Loki's default is backward
	var all []flat
	for si := range s.Streams {
		for ei := range s.Streams[si].Entries {
			e := &s.Streams[si].Entries[ei]
			if ts := e.Time.UnixNano(); ts >= start && ts < end {
				all = append(all, flat{ts: ts, stream: si, e: e})
			}
		}
	}
	sort.SliceStable(all, func(i, j int) bool {
		if backward {
			return all[i].ts > all[j].ts
		}
		return all[i].ts < all[j].ts
	})
	if len(all) > limit {
		all = all[:limit]
	}
	categorize := strings.Contains(r.Header.Get("X-Loki-Response-Encoding-Flags"), "categorize-labels")
	type outStream struct {
		Stream map[string]string `json:"stream"`
		Values [][]any           `json:"values"`
	}
	var result []*outStream
	idx := map[string]*outStream{}
	for _, f := range all {
		labels := map[string]string{}
		for k, v := range s.Streams[f.stream].Labels {
			labels[k] = v
		}
		if !categorize {
			for k, v := range f.e.Metadata {
				labels[k] = v
			}
		}
		key := fmt.Sprint(labels) // fmt sorts map keys
		os := idx[key]
		if os == nil {
			os = &outStream{Stream: labels}
			idx[key] = os
			result = append(result, os)
		}
		v := []any{strconv.FormatInt(f.ts, 10), f.e.Line}
		if categorize {
			meta := map[string]any{}
			if len(f.e.Metadata) > 0 {
				meta["structuredMetadata"] = f.e.Metadata
			}
			v = append(v, meta)
		}
		os.Values = append(os.Values, v)
	}
	if result == nil {
		result = []*outStream{}
	}
	s.mu.Lock()
	s.requests++
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"status": "success",
		"data": map[string]any{
			"resultType": "streams",
			"result":     result,
			"stats":      map[string]any{"summary": map[string]any{"totalEntriesReturned": len(all)}},
		},
	})
}

// AlloyStreams stores journal records the way a host running
// deploy/alloy/config.alloy pushes them to Loki: the config's relabel rules
// and structured_metadata stage make labels and metadata of each record's
// fields, the line is MESSAGE, the time the journal's realtime; records
// without MESSAGE are skipped as loki.source.journal does.
func AlloyStreams(t testing.TB, recs []ingest.Record) []Stream {
	t.Helper()
	aj := Alloy(t)
	var out []Stream
	idx := map[string]int{}
	for _, rec := range recs {
		fields := map[string]string{}
		for k, v := range rec {
			fields[k] = string(v)
		}
		line := fields["MESSAGE"]
		if line == "" {
			continue
		}
		labels, meta, keep := aj.Entry(fields)
		if !keep {
			continue
		}
		us, err := strconv.ParseInt(fields["__REALTIME_TIMESTAMP"], 10, 64)
		if err != nil {
			t.Fatalf("record without __REALTIME_TIMESTAMP: %v", err)
		}
		key := fmt.Sprint(labels)
		i, ok := idx[key]
		if !ok {
			i = len(out)
			idx[key] = i
			out = append(out, Stream{Labels: labels})
		}
		out[i].Entries = append(out[i].Entries, Entry{Time: time.UnixMicro(us), Line: line, Metadata: meta})
	}
	return out
}

// Alloy is the model of the shipped deploy/alloy/config.alloy's journal
// pipeline: its relabel rules and structured metadata.
func Alloy(t testing.TB) *deploy.AlloyJournal {
	t.Helper()
	src, err := deploy.Files.ReadFile("alloy/config.alloy")
	if err != nil {
		t.Fatal(err)
	}
	root, err := deploy.ParseAlloy(string(src))
	if err != nil {
		t.Fatal(err)
	}
	aj, err := deploy.JournalPipeline(root)
	if err != nil {
		t.Fatal(err)
	}
	return aj
}

// JournalRecords reads a journalctl -o json capture as raw records, what a
// journal source hands on before ingest.
func JournalRecords(t testing.TB, path string) []ingest.Record {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []ingest.Record
	for i, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		rec, err := ingest.ParseJSONRecord([]byte(line))
		if err != nil {
			t.Fatalf("%s:%d: %v", path, i+1, err)
		}
		out = append(out, rec)
	}
	return out
}
