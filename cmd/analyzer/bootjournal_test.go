package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/llmfleet/analyzer/ingest"
	"github.com/llmfleet/analyzer/internal/journaldtest"
)

// journalBoot is one vLLM boot of host's unit as journald records it
// (journalctl -o json fields): systemd starts the unit at start, the
// engine prints its banner, loads weights from a third of pre (default 3
// min), enters CUDA graph capture at pre and, when capture > 0, leaves it
// after capture and is ready a third of pre later; stopAt > 0 stops the
// unit then (from start).
type journalBoot struct {
	host, unit, inv      string
	start                time.Time
	capture, stopAt, pre time.Duration
}

// journalSeq numbers the records' cursors across a test.
var journalSeq int

// records are the boot's records up to (not past) until from its start
// (< 0: all of them).
func (b journalBoot) records(until time.Duration) []map[string]string { return b.span(-1, until) }

// span are the boot's records after from and up to until (< 0: no bound).
func (b journalBoot) span(from, until time.Duration) []map[string]string {
	if b.pre <= 0 {
		b.pre = 3 * time.Minute
	}
	var out []map[string]string
	add := func(at time.Duration, pid1 bool, msg string, extra ...string) {
		if (until >= 0 && at > until) || at <= from {
			return
		}
		journalSeq++
		t := b.start.Add(at)
		r := map[string]string{"MESSAGE": msg, "PRIORITY": "6", "_HOSTNAME": b.host, "_BOOT_ID": "0f6c4a1b2e3d4c5b8a7968574635241f",
			"_MACHINE_ID": "36b3216fdaeeb975729fae923d5a4fd1", "_TRANSPORT": "stdout",
			"__REALTIME_TIMESTAMP": strconv.FormatInt(t.UnixMicro(), 10), "__MONOTONIC_TIMESTAMP": strconv.FormatInt(int64(journalSeq)*1000, 10),
			"__CURSOR": fmt.Sprintf("s=5a7c0e0f0b6d4e4f9a3b2c1d0e9f8a7b;i=%x;b=0f6c4a1b2e3d4c5b8a7968574635241f;m=%x;t=%x;x=%x", journalSeq, journalSeq*1000, t.UnixMicro(), journalSeq)}
		if pid1 {
			r["_PID"], r["SYSLOG_IDENTIFIER"], r["_SYSTEMD_UNIT"], r["UNIT"], r["INVOCATION_ID"], r["_TRANSPORT"] = "1", "systemd", "init.scope", b.unit, b.inv, "journal"
		} else {
			r["_PID"], r["SYSLOG_IDENTIFIER"], r["_SYSTEMD_UNIT"], r["_SYSTEMD_INVOCATION_ID"] = "4242", "vllm", b.unit, b.inv
		}
		for i := 0; i+1 < len(extra); i += 2 {
			r[extra[i]] = extra[i+1]
		}
		out = append(out, r)
	}
	clock := func(at time.Duration) string { return b.start.Add(at).UTC().Format("01-02 15:04:05") }
	add(0, true, "Started "+b.unit+" - vLLM.", "MESSAGE_ID", "39f53479d3a045ac8e11786248231fbf", "JOB_TYPE", "start", "JOB_RESULT", "done")
	third := b.pre / 3
	add(time.Millisecond, false, "INFO "+clock(0)+" [api_server.py:1885] vLLM API server version 0.11.0")
	add(third, false, "INFO "+clock(third)+" [gpu_model_runner.py:2602] Starting to load model Qwen/Qwen3-8B...")
	add(2*third, false, fmt.Sprintf("INFO %s [default_loader.py:291] Loading weights took %.2f seconds", clock(2*third), third.Seconds()))
	add(b.pre, false, "INFO "+clock(b.pre)+" [gpu_model_runner.py:3000] Capturing CUDA graphs (mixed prefill-decode, PIECEWISE):   0%|          | 0/67")
	if b.capture > 0 {
		left := b.pre + b.capture
		add(left, false, fmt.Sprintf("INFO %s [gpu_model_runner.py:3480] Graph capturing finished in %.0f secs, took 0.50 GiB", clock(left), b.capture.Seconds()))
		add(left+third, false, fmt.Sprintf("INFO %s [core.py:200] init engine (profile, create kv cache, warmup model) took %.2f seconds", clock(left+third), (left+third).Seconds()))
		add(left+third, false, "INFO:     Application startup complete.")
	}
	if b.stopAt > 0 {
		add(b.stopAt, true, "Stopping "+b.unit+" - vLLM...", "JOB_TYPE", "stop")
		add(b.stopAt+time.Second, true, b.unit+": Deactivated successfully.", "MESSAGE_ID", "7ad2d189f7e94e70a38c781354912448")
		add(b.stopAt+time.Second, true, "Stopped "+b.unit+" - vLLM.", "MESSAGE_ID", "9d1aaa27d60140bd96365438aad20286", "JOB_TYPE", "stop", "JOB_RESULT", "done")
	}
	return out
}

// jsonLines is records as journalctl -o json prints them.
func jsonLines(t *testing.T, recs []map[string]string) []byte {
	t.Helper()
	var b bytes.Buffer
	for _, r := range recs {
		line, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(append(line, '\n'))
	}
	return b.Bytes()
}

// exportOf is records in journal export format, one each
// (systemd-journal-remote's input).
func exportOf(t *testing.T, recs []map[string]string) [][]byte {
	t.Helper()
	var out [][]byte
	for _, r := range recs {
		rec := ingest.Record{}
		for k, v := range r {
			rec[k] = []byte(v)
		}
		out = append(out, journaldtest.Export(t, rec))
	}
	return out
}
