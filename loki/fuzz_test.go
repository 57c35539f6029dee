package loki

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/grafana/loki/pkg/push"

	"github.com/llmfleet/analyzer/domain"
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

// FuzzPush posts arbitrary bodies, JSON and snappy protobuf, to the push
// endpoint: every body is answered (204 or a 4xx) in bounded time, and a
// body queues no more entries than it has bytes.
func FuzzPush(f *testing.F) {
	pushSeeds(f)
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
		start := time.Now()
		rv.ServeHTTP(w, r)
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("a %d-byte body took %v", len(body), d)
		}
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
