package loki

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grafana/loki/pkg/push"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/ingest"
	"github.com/llmfleet/analyzer/internal/fuzzcost"
	"github.com/llmfleet/analyzer/internal/race"
)

// countSink counts what a push queued.
type countSink struct{ n int }

func (s *countSink) Add(es []domain.Entry) error { s.n += len(es); return nil }
func (s *countSink) Saturated() bool             { return false }
func (s *countSink) RequestFlush()               {}

// pushSeeds are push bodies as Alloy and Promtail send them.
func pushSeeds(f *testing.F) {
	req := &push.PushRequest{Streams: []push.Stream{{
		Labels: `{host="gpu-01", unit="vllm.service", invocation_id="0123"}`,
		Entries: []push.Entry{{Timestamp: time.Unix(1790916000, 0), Line: "INFO vLLM API server version 0.19.2",
			StructuredMetadata: push.LabelsAdapter{{Name: "cursor", Value: "s=1"}}}},
	}}}
	js, err := EncodeJSON(req)
	if err != nil {
		f.Fatal(err)
	}
	pb, err := EncodeProtobuf(req)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(js, true)
	f.Add(pb, false)
	f.Add([]byte(`{"streams":[{"labels":"{job=\"x\"}","entries":[{"ts":"2026-10-01T21:40:00Z","line":"x"}]}]}`), true)
	f.Add([]byte(`{"streams":[{"stream":{"a":"b"},"values":[["1","x",{"k":"v"}]]}]}`), true)
}

// pushBudget is what one fuzzed push or query may cost (issue 28: no
// input may take more than 1 s or 100 MiB).
var pushBudget = fuzzcost.Budget{Bytes: 100 << 20, Time: race.Budget(time.Second)}

// FuzzPush posts arbitrary bodies, JSON and snappy protobuf, to the push
// endpoint: every body is answered (204 or a 4xx) within pushBudget, and a
// body queues no more entries than it has bytes. Seeds include a stream
// over a label limit and a malformed entry among good ones.
func FuzzPush(f *testing.F) {
	pushSeeds(f)
	long := &push.PushRequest{Streams: []push.Stream{{Labels: `{host="` + strings.Repeat("h", 4096) + `"}`}}}
	for i := 0; i < 2000; i++ {
		long.Streams[0].Entries = append(long.Streams[0].Entries, push.Entry{Timestamp: time.Unix(0, int64(i)), Line: "x"})
	}
	if b, err := EncodeProtobuf(long); err == nil {
		f.Add(b, false)
	}
	f.Add([]byte(`{"streams":[{"stream":{"host":"h"},"values":[["1","a"],["x","b"],["2","c"]]},{"labels":"{a=\"b\"}","entries":[{"ts":"2026-10-01T21:40:00Z","line":"x"}]}]}`), true)
	f.Fuzz(func(t *testing.T, body []byte, isJSON bool) {
		sink := &countSink{}
		rv := NewReceiver(ReceiverOptions{Sink: sink, MaxBytes: 1 << 20, DedupeRecords: -1})
		r := httptest.NewRequest(http.MethodPost, PushPath, bytes.NewReader(body))
		if isJSON {
			r.Header.Set("Content-Type", "application/json")
		} else {
			r.Header.Set("Content-Type", "application/x-protobuf")
		}
		w := httptest.NewRecorder()
		fuzzcost.Check(t, pushBudget, func() { rv.ServeHTTP(w, r) })
		if w.Code != http.StatusNoContent && (w.Code < 400 || w.Code >= 500) {
			t.Fatalf("status %d", w.Code)
		}
		if sink.n > len(body)+1 {
			t.Fatalf("%d entries from %d bytes", sink.n, len(body))
		}
	})
}

// FuzzParseLabels: the stream selector parser ends on any input.
func FuzzParseLabels(f *testing.F) {
	f.Add(`{host="gpu-01", unit="vllm.service"}`)
	f.Add("{a=`raw`,b=\"\\u00e9\",}")
	f.Fuzz(func(t *testing.T, s string) {
		ls, err := ParseLabels(s)
		if err == nil && len(ls) > len(s) {
			t.Fatalf("%d labels from %d bytes", len(ls), len(s))
		}
		if err == nil {
			if _, err := json.Marshal(ls); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// FuzzDecodePage: any query_range body decodes without panicking, every
// entry handed over lies in the asked range, in time order, and the
// entries kept plus the malformed ones never exceed what the body held.
func FuzzDecodePage(f *testing.F) {
	f.Add([]byte(`{"status":"success","data":{"resultType":"streams","result":[{"stream":{"host":"h","unit":"vllm.service"},"values":[["1500","a"],["1200","b",{"structuredMetadata":{"invocation_id":"x"}}]]}]}}`))
	f.Add([]byte(`{"status":"success","data":{"resultType":"streams","result":[{"stream":{"bad label":"x"},"values":[["1500","a"]]},{"stream":"no"},{"values":[["x"]]}]}}`))
	f.Add([]byte(`{"status":"success","data":{"resultType":"matrix","result":[]}}`))
	f.Add([]byte(`{"status":"error"}`))
	f.Add([]byte(`[`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var st QueryStats
		out, raw, err := decodePage(body, 1000, 2000, 100, &st)
		if err != nil {
			if len(out) > 0 {
				t.Fatal("entries with an error")
			}
			return
		}
		if len(out) > raw {
			t.Fatalf("%d entries of %d held", len(out), raw)
		}
		for i, e := range out {
			if e.ts < 1000 || e.ts >= 2000 {
				t.Fatalf("entry at %d outside [1000, 2000)", e.ts)
			}
			if i > 0 && e.ts < out[i-1].ts {
				t.Fatal("out of time order")
			}
			_ = recordOf(e.fields, &e.entry)
		}
		if len(st.Errors) > maxQueryErrors {
			t.Fatalf("%d error messages kept", len(st.Errors))
		}
	})
}

// pageServer is an adversarial Loki in a RoundTripper (no sockets): it
// answers each query_range request with page, where "$START" becomes the
// asked start and "$N" the request's number, and "@@" a label-sized run
// of bytes; once is false for a server that repeats itself. After
// maxPages requests it answers an empty page: a server inventing entries
// for ever is a data source, not a loop of the reader's.
type pageServer struct {
	page  []byte
	big   int
	once  bool
	mu    sync.Mutex
	n     int
	limit []int // the limits asked
}

const maxFuzzPages = 100

func (s *pageServer) RoundTrip(r *http.Request) (*http.Response, error) {
	s.mu.Lock()
	s.n++
	n := s.n
	lim, _ := strconv.Atoi(r.URL.Query().Get("limit"))
	s.limit = append(s.limit, lim)
	s.mu.Unlock()
	body := []byte(`{"status":"success","data":{"resultType":"streams","result":[]}}`)
	if n <= maxFuzzPages && (n == 1 || !s.once) {
		body = bytes.ReplaceAll(s.page, []byte("$START"), []byte(r.URL.Query().Get("start")))
		body = bytes.ReplaceAll(body, []byte("$N"), []byte(strconv.Itoa(n)))
		body = bytes.ReplaceAll(body, []byte("@@"), bytes.Repeat([]byte("h"), s.big))
	}
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(bytes.NewReader(body)), Request: r}, nil
}

// FuzzQueryRange pages through an adversarial Loki (repeated pages, pages
// that follow the asked start, huge labels): every query ends within
// pushBudget, hands over only entries of the asked range, and a server
// that repeats one page without following the start is paged through in
// a few requests.
func FuzzQueryRange(f *testing.F) {
	const start, end = 1000, 1000 + 3600e9
	ok := func(vals string) []byte {
		return []byte(`{"status":"success","data":{"resultType":"streams","result":[{"stream":{"host":"h@@"},"values":[` + vals + `]}]}}`)
	}
	f.Add(ok(`["1000","a"],["1000","b"],["2000","c"],["3000","d"]`), false, uint16(0))
	f.Add(ok(`["1000","a"],["1000","b"],["1000","c"],["1000","d"]`), false, uint16(0))
	f.Add(ok(`["$START","a$N"],["$START","b$N"]`), false, uint16(0))
	f.Add(ok(`["1000","a"],["2000","b"],["3000","c"],["4000","d"]`), false, uint16(1024))
	f.Add(ok(`["1000","a",{"structuredMetadata":{"cursor":"c"}}],["1500","b",{"parsed":{"x":"y"}}]`), true, uint16(3000))
	f.Add([]byte(`{"status":"success","data":{"resultType":"streams","result":[{"stream":{"a":"b"},"values":[["5","old"],["5","old"],["5","old"],["5","old"]]}]}}`), false, uint16(0))
	f.Fuzz(func(t *testing.T, page []byte, once bool, big uint16) {
		srv := &pageServer{page: page, once: once, big: int(big) % (1 << 20 / 2)}
		if len(page)+strings.Count(string(page), "@@")*srv.big > 4<<20 {
			return // a page over 4 MiB costs its size: the cap's business, tested apart
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var st QueryStats
		var err error
		n := 0
		fuzzcost.Check(t, pushBudget, func() {
			st, err = QueryRange(ctx, QueryConfig{URL: "http://loki.test", Query: `{job="x"}`, Start: time.Unix(0, start), End: time.Unix(0, end),
				Limit: 4, Client: &http.Client{Transport: srv}}, func(rec ingest.Record) error {
				n++
				us, perr := strconv.ParseInt(string(rec["__REALTIME_TIMESTAMP"]), 10, 64)
				if perr != nil || us*1000 < start/1000*1000 || us*1000 >= end {
					t.Fatalf("record at %q µs outside [%d, %d) ns", rec["__REALTIME_TIMESTAMP"], int64(start), int64(end))
				}
				return nil
			})
		})
		if ctx.Err() != nil {
			t.Fatalf("the query outlived its deadline: %v", err)
		}
		static := !bytes.Contains(page, []byte("$START")) && !bytes.Contains(page, []byte("$N"))
		if static && st.Pages > 32 {
			t.Fatalf("a server repeating one page was asked %d pages (limits %v): %v", st.Pages, srv.limit[:min(len(srv.limit), 40)], err)
		}
		if int64(n) != st.Entries {
			t.Fatalf("%d records handed over, stats say %d", n, st.Entries)
		}
	})
}
