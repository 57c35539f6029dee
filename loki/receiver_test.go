package loki_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang/snappy"
	"github.com/grafana/loki/pkg/push"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/loki"
	"github.com/llmfleet/analyzer/metrics"
	"github.com/llmfleet/analyzer/pipeline"
	"github.com/llmfleet/analyzer/rules"
	"github.com/llmfleet/analyzer/store"
)

// validPush is a small real push: two lines of a unit.
func validPush(t *testing.T) []byte {
	t.Helper()
	req := &push.PushRequest{Streams: []push.Stream{{
		Labels: `{host="gpu-01", job="journal", unit="vllm.service"}`,
		Entries: []push.Entry{
			{Timestamp: time.Unix(1790916000, 0), Line: "INFO Starting vLLM API server",
				StructuredMetadata: push.LabelsAdapter{{Name: "invocation_id", Value: "0123456789abcdef0123456789abcdef"}, {Name: "_TRANSPORT", Value: "stdout"}}},
			{Timestamp: time.Unix(1790916001, 0), Line: "INFO vLLM API server version 0.19.2",
				StructuredMetadata: push.LabelsAdapter{{Name: "invocation_id", Value: "0123456789abcdef0123456789abcdef"}, {Name: "_TRANSPORT", Value: "stdout"}}},
		},
	}}}
	b, err := loki.EncodeProtobuf(req)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestPushRefusals sends each kind of bad request and checks its status and
// counted reason, then that a good push still goes through: a refusal never
// stops the pipeline.
func TestPushRefusals(t *testing.T) {
	s := newStack(t, stackOptions{token: testToken, maxBytes: 64 << 10})
	auth := "Bearer " + testToken
	proto := map[string]string{"Content-Type": "application/x-protobuf", "Authorization": auth}
	notProto := snappy.Encode(nil, []byte("\xff\xff\xff\xff definitely not a protobuf message"))
	var bomb bytes.Buffer
	zw := gzip.NewWriter(&bomb)
	_, _ = zw.Write(bytes.Repeat([]byte("a"), 1<<20)) // into a bytes.Buffer: cannot fail
	zw.Close()

	reasons, codes := map[string]int{}, map[int]int{} // counted so far
	for _, tc := range []struct {
		name   string
		body   []byte
		header map[string]string
		status int
		reason string
	}{
		{"missing token", validPush(t), map[string]string{"Content-Type": "application/x-protobuf"}, 401, domain.IngestErrUnauthorized},
		{"wrong token", validPush(t), map[string]string{"Content-Type": "application/x-protobuf", "Authorization": "Bearer nope"}, 401, domain.IngestErrUnauthorized},
		{"bad snappy", []byte("this is not snappy block data at all"), proto, 400, domain.IngestErrSnappy},
		{"malformed protobuf", notProto, proto, 400, domain.IngestErrProtobuf},
		{"wrong content type", validPush(t), map[string]string{"Content-Type": "text/plain", "Authorization": auth}, 415, domain.IngestErrContentType},
		{"oversized body", bytes.Repeat([]byte("x"), 65<<10), proto, 413, domain.IngestErrTooLarge},
		{"gzip bomb", bomb.Bytes(), map[string]string{"Content-Type": "application/json", "Content-Encoding": "gzip", "Authorization": auth}, 413, domain.IngestErrTooLarge},
		{"bad gzip", []byte("not gzip"), map[string]string{"Content-Type": "application/json", "Content-Encoding": "gzip", "Authorization": auth}, 400, domain.IngestErrDecompress},
		{"unknown encoding", validPush(t), map[string]string{"Content-Type": "application/x-protobuf", "Content-Encoding": "br", "Authorization": auth}, 400, domain.IngestErrEncoding},
		{"no content type", validPush(t), map[string]string{"Authorization": auth}, 415, domain.IngestErrContentType},
		{"bad json", []byte(`{"streams":[{"stream":{"job":"x"},"values":[["1","a"`), map[string]string{"Content-Type": "application/json", "Authorization": auth}, 400, domain.IngestErrJSON},
		{"bad timestamp", []byte(`{"streams":[{"stream":{"job":"x"},"values":[["yesterday","a"]]}]}`), map[string]string{"Content-Type": "application/json", "Authorization": auth}, 400, domain.IngestErrTimestamp},
		{"bad labels", mustProto(t, `{job="x", unit=~"v.*"}`), proto, 400, domain.IngestErrLabels},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, msg := s.post(t, tc.body, tc.header)
			if code != tc.status {
				t.Fatalf("status %d (%s), want %d", code, strings.TrimSpace(msg), tc.status)
			}
			// Each refusal counts its reason and its status, and nothing else.
			reasons[tc.reason]++
			codes[tc.status]++
			s.compareMetrics(t, ingestErrors(reasons)+pushRequests(codes),
				"analyzer_ingest_errors_total", "analyzer_push_requests_total")
		})
	}

	if code, msg := s.post(t, validPush(t), proto); code != 204 {
		t.Fatalf("a good push after the refusals: %d %s", code, msg)
	}
	s.flush(t)
	as := listAttempts(t, s.db)
	if len(as) != 1 || as[0].Unit != "vllm.service" || as[0].Host != "gpu-01" || as[0].InvocationID != "0123456789abcdef0123456789abcdef" {
		t.Fatalf("attempts after the good push: %+v", as)
	}
	if as[0].Engine != "vllm" || as[0].Lines != 2 {
		t.Errorf("attempt engine %q lines %d, want vllm and 2", as[0].Engine, as[0].Lines)
	}
	codes[http.StatusNoContent]++
	s.compareMetrics(t, ingestErrors(reasons)+pushRequests(codes), "analyzer_ingest_errors_total", "analyzer_push_requests_total")
}

func mustProto(t *testing.T, labels string) []byte {
	t.Helper()
	b, err := loki.EncodeProtobuf(&push.PushRequest{Streams: []push.Stream{{Labels: labels,
		Entries: []push.Entry{{Timestamp: time.Unix(1, 0), Line: "x"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSaturatedPipelineAnswers429: while the pipeline's queue is full the
// endpoint answers 429 (with Retry-After) and takes nothing; once the worker
// catches up, the retried push is taken.
func TestSaturatedPipelineAnswers429(t *testing.T) {
	db, err := store.Open(filepath.Join(t.TempDir(), "sat.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	set, err := rules.LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	m := metrics.New(metrics.Options{NoProcessMetrics: true})
	live := pipeline.New(db, set, pipeline.Options{QueueEntries: 2, Metrics: m}) // not started: nothing drains
	defer live.Close()
	rv := loki.NewReceiver(loki.ReceiverOptions{Sink: live, Metrics: m})
	srv := httptest.NewServer(rv)
	defer srv.Close()
	post := func() *http.Response {
		resp, err := http.Post(srv.URL, "application/x-protobuf", bytes.NewReader(validPush(t)))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if r := post(); r.StatusCode != 204 {
		t.Fatalf("first push: %d", r.StatusCode)
	}
	r := post()
	if r.StatusCode != 429 || r.Header.Get("Retry-After") == "" {
		t.Fatalf("push into a full queue: %d, Retry-After %q", r.StatusCode, r.Header.Get("Retry-After"))
	}
	live.Start()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := live.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if r := post(); r.StatusCode != 204 {
		t.Fatalf("push after the queue drained: %d", r.StatusCode)
	}
	if err := live.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	as, _ := db.ListAttempts(ctx, store.Filter{})
	if len(as) != 1 || as[0].Lines != 2 {
		t.Fatalf("want 1 attempt of 2 lines (the retried push is a duplicate), got %d", len(as))
	}
}

func TestParseLabels(t *testing.T) {
	for in, want := range map[string]string{
		`{}`:                                   `{}`,
		`{job="x"}`:                            `{job="x"}`,
		` { unit = "a\"b\\c" , job="j", } `:    `{job="j", unit="a\"b\\c"}`,
		"{a=`raw\\n`, b=\"tab\\t\"}":           `{a="raw\\n", b="tab\t"}`,
		`{host="dankserver",unit="x.service"}`: `{host="dankserver", unit="x.service"}`,
	} {
		ls, err := loki.ParseLabels(in)
		if err != nil {
			t.Errorf("%s: %v", in, err)
			continue
		}
		m := map[string]string{}
		for _, l := range ls {
			m[l.Name] = l.Value
		}
		if got := loki.FormatLabels(m); got != want {
			t.Errorf("%s → %s, want %s", in, got, want)
		}
	}
	for _, bad := range []string{``, `job="x"`, `{job=x}`, `{job!="x"}`, `{job=~"x"}`, `{"job"="x"}`, `{job="x"`, `{job="x"} extra`, `{1a="x"}`} {
		if _, err := loki.ParseLabels(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestFieldName(t *testing.T) {
	for in, want := range map[string]string{
		"host": "_HOSTNAME", "hostname": "_HOSTNAME", "unit": "_SYSTEMD_UNIT", "_SYSTEMD_UNIT": "_SYSTEMD_UNIT",
		"invocation_id": "_SYSTEMD_INVOCATION_ID", "_SYSTEMD_INVOCATION_ID": "_SYSTEMD_INVOCATION_ID",
		"UNIT": "UNIT", "INVOCATION_ID": "INVOCATION_ID", "MESSAGE_ID": "MESSAGE_ID", "message_id": "MESSAGE_ID",
		"CONTAINER_NAME": "CONTAINER_NAME", "container_name": "CONTAINER_NAME", "CONTAINER_ID_FULL": "CONTAINER_ID_FULL",
		"N_RESTARTS": "N_RESTARTS", "n_restarts": "N_RESTARTS", "exit_code": "EXIT_CODE", "EXIT_STATUS": "EXIT_STATUS",
		"unit_result": "UNIT_RESULT", "PODMAN_EVENT": "PODMAN_EVENT", "podman_name": "PODMAN_NAME", "_PID": "_PID", "pid": "_PID",
		"SYSLOG_IDENTIFIER": "SYSLOG_IDENTIFIER", "syslog_identifier": "SYSLOG_IDENTIFIER", "comm": "_COMM",
		"__journal__systemd_unit": "_SYSTEMD_UNIT", "__journal_unit": "UNIT", "__journal_invocation_id": "INVOCATION_ID",
		"__journal_container_partial_message": "CONTAINER_PARTIAL_MESSAGE", "transport": "_TRANSPORT",
		"job": "", "service_name": "", "__journal_priority_keyword": "", "__name__": "", "team": "team",
	} {
		if got := loki.FieldName(in); got != want {
			t.Errorf("FieldName(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestStructuredMetadataWinsOverLabels: per-entry metadata beats a stream
// label for the same field, and a journald name beats a short alias.
func TestStructuredMetadataWinsOverLabels(t *testing.T) {
	ls, _ := loki.ParseLabels(`{unit="from-label.service", _SYSTEMD_UNIT="exact.service", host="h"}`)
	fields := loki.StreamFields(ls)
	if fields["_SYSTEMD_UNIT"] != "exact.service" {
		t.Errorf("_SYSTEMD_UNIT = %q", fields["_SYSTEMD_UNIT"])
	}
	rec := loki.Record(fields, &push.Entry{Timestamp: time.UnixMicro(1790916000123456), Line: "hello",
		StructuredMetadata: push.LabelsAdapter{{Name: "unit", Value: "from-meta.service"}}})
	if string(rec["_SYSTEMD_UNIT"]) != "from-meta.service" || string(rec["MESSAGE"]) != "hello" ||
		string(rec["__REALTIME_TIMESTAMP"]) != "1790916000123456" || string(rec["_HOSTNAME"]) != "h" {
		t.Errorf("record = %q", rec)
	}
	if c := string(rec["__CURSOR"]); !strings.HasPrefix(c, "loki;s=") || !strings.Contains(c, ";t=1790916000123456;x=") || len(c) > 64 {
		t.Errorf("synthetic cursor %q", c)
	}
}

// TestDeepJSONPushIsLinear: a push body of deeply nested JSON (once 16 s of
// CPU for 4.9 KB, each level decoded again) is refused after one pass.
func TestDeepJSONPushIsLinear(t *testing.T) {
	const n = 1 << 19 // 1 MiB of brackets
	for name, body := range map[string]string{
		"value":    `{"streams":[{"stream":{"a":"b"},"values":[["1",` + strings.Repeat("[", n) + strings.Repeat("]", n) + `]]}]}`,
		"metadata": `{"streams":[{"stream":{"a":"b"},"values":[["1","x",` + strings.Repeat(`{"a":`, n/5) + `1` + strings.Repeat("}", n/5) + `]]}]}`,
		"streams":  `{"streams":` + strings.Repeat("[", 2*n),
	} {
		start := time.Now()
		if _, err := loki.DecodeJSON([]byte(body)); err == nil {
			t.Errorf("%s: nested body accepted", name)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("%s: %d bytes took %v", name, len(body), d)
		}
	}
}
