package loki_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"strings"
	"testing"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/ingest"
	"github.com/llmfleet/analyzer/loki"
)

// TestAlloyPushGivesTheAttemptsOfReplay pushes the night-ladder capture to
// POST /loki/api/v1/push as a host running deploy/alloy/config.alloy would
// (labels and structured metadata from its relabel rules, batches grouped by
// stream, several requests) and checks that the database then holds exactly
// the attempts `analyzer replay` stores for the same file: ids, verdicts,
// phases, findings, shape, timeline, evidence text.
func TestAlloyPushGivesTheAttemptsOfReplay(t *testing.T) {
	want := replayAttempts(t, nightLadder)
	if len(want) < 10 {
		t.Fatalf("replay found only %d attempts", len(want))
	}
	recs := readRecords(t, nightLadder)
	aj := alloy(t)
	for _, tc := range []struct {
		name string
		enc  func(t *testing.T, body []byte) ([]byte, map[string]string)
		json bool
	}{
		{name: "protobuf+snappy"},
		{name: "json", json: true},
		{name: "json+gzip", json: true, enc: gzipBody},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStack(t, stackOptions{token: testToken})
			batches := alloyBatches(t, aj, recs, 97)
			if len(batches) < 5 {
				t.Fatalf("want several requests, got %d", len(batches))
			}
			for i, req := range batches {
				var body []byte
				var err error
				header := map[string]string{"Authorization": "Bearer " + testToken}
				if tc.json {
					body, err = loki.EncodeJSON(req)
					header["Content-Type"] = "application/json"
				} else {
					body, err = loki.EncodeProtobuf(req)
					header["Content-Type"] = "application/x-protobuf"
				}
				if err != nil {
					t.Fatal(err)
				}
				if tc.enc != nil {
					var extra map[string]string
					body, extra = tc.enc(t, body)
					for k, v := range extra {
						header[k] = v
					}
				}
				if code, msg := s.post(t, body, header); code != 204 {
					t.Fatalf("request %d: %d %s", i, code, msg)
				}
			}
			s.flush(t)
			got := listAttempts(t, s.db)
			sameAttempts(t, want, got)

			// The receiver fed the tracker exactly the entries replay
			// reads from the file (split lines reassembled alike).
			s.compareMetrics(t, ingestEntries(replayEntries(t, nightLadder)), "analyzer_ingest_entries_total")
		})
	}
}

// TestPushTwiceChangesNothing: a client that resends batches (Alloy after a
// timeout) must not double lines: records are recognised and skipped.
func TestPushTwiceChangesNothing(t *testing.T) {
	want := replayAttempts(t, clawDay)
	s := newStack(t, stackOptions{})
	batches := alloyBatches(t, alloy(t), readRecords(t, clawDay), 20)
	for round := 0; round < 2; round++ {
		for _, req := range batches {
			body, err := loki.EncodeProtobuf(req)
			if err != nil {
				t.Fatal(err)
			}
			if code, msg := s.post(t, body, map[string]string{"Content-Type": "application/x-protobuf"}); code != 204 {
				t.Fatalf("%d %s", code, msg)
			}
		}
	}
	s.flush(t)
	sameAttempts(t, want, listAttempts(t, s.db))
	// The first round fed the tracker what replay reads; every record of
	// the second was recognised and skipped as a duplicate.
	pushed := 0
	for _, req := range batches {
		for _, st := range req.Streams {
			pushed += len(st.Entries)
		}
	}
	s.compareMetrics(t, ingestEntries(replayEntries(t, clawDay))+linesSkipped(map[string]int{domain.IngestSkipDuplicate: pushed}),
		"analyzer_ingest_entries_total", "analyzer_ingest_lines_skipped_total")
}

// TestFormatAsJSONLines: Alloy's format_as_json sends each journal record
// as the JSON line; the receiver reads it as the record itself.
func TestFormatAsJSONLines(t *testing.T) {
	want := replayAttempts(t, clawDay)
	s := newStack(t, stackOptions{})
	var values [][]string
	for _, rec := range readRecords(t, clawDay) {
		line, err := json.Marshal(recordJSON(rec))
		if err != nil {
			t.Fatal(err)
		}
		values = append(values, []string{string(rec["__REALTIME_TIMESTAMP"]) + "000", string(line)})
	}
	body, _ := json.Marshal(map[string]any{"streams": []any{map[string]any{
		"stream": map[string]string{"job": "journal"}, "values": values}}})
	var buf bytes.Buffer
	buf.Write(body)
	if code, msg := s.post(t, buf.Bytes(), map[string]string{"Content-Type": "application/json"}); code != 204 {
		t.Fatalf("%d %s", code, msg)
	}
	s.flush(t)
	got := listAttempts(t, s.db)
	sameAttempts(t, want, got)
	// With the whole record, evidence keeps the journal's own cursors.
	for _, a := range got {
		for _, e := range a.Evidence {
			if strings.HasPrefix(e.Cursor, "loki;") {
				t.Fatalf("evidence cursor %q is synthetic although the record had __CURSOR", e.Cursor)
			}
		}
	}
}

func gzipBody(t *testing.T, body []byte) ([]byte, map[string]string) {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write(body); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes(), map[string]string{"Content-Encoding": "gzip"}
}

// recordJSON renders a record as journalctl -o json would (strings).
func recordJSON(rec ingest.Record) map[string]string {
	m := make(map[string]string, len(rec))
	for k, v := range rec {
		m[k] = string(v)
	}
	return m
}
