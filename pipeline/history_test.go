package pipeline_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/internal/fixturetest"
	"github.com/llmfleet/analyzer/pipeline"
)

// countingHistory counts the reads of the earlier boots.
type countingHistory struct {
	pipeline.History
	mu    sync.Mutex
	reads int
}

func (h *countingHistory) ListAttempts(ctx context.Context, f domain.AttemptFilter) ([]*domain.Attempt, error) {
	h.mu.Lock()
	h.reads++
	h.mu.Unlock()
	return h.History.ListAttempts(ctx, f)
}

func (h *countingHistory) count() int { h.mu.Lock(); defer h.mu.Unlock(); return h.reads }

// TestStallChecksReadHistoryOncePerTTL: the stall checks of a boot in
// progress read its target's earlier boots once per HistoryTTL, not on
// every flush (every 2 s); a boot of the target that ended in this pipeline counts at
// once (it is the unit's previous boot, replaced by the new one, and may
// not be saved yet); a boot of a unit with no history that keeps printing
// lines that mark no phase is not stalled, one that went silent for the
// quiet limit is.
func TestStallChecksReadHistoryOncePerTTL(t *testing.T) {
	db := openDB(t)
	t0 := time.Date(2026, 10, 1, 12, 0, 0, 0, time.UTC)
	// Two stored boots whose graph capture took 2 and 3 min: one short of
	// a basis (progress.MinBasis).
	earlier := fixturetest.ReadyBoots("gpu1", "vllm.service", t0, 2*time.Minute, 3*time.Minute)
	if err := db.SaveAttempts(t.Context(), earlier, nil); err != nil {
		t.Fatal(err)
	}
	hist := &countingHistory{History: db}
	var mu sync.Mutex
	now := t0
	setNow := func(d time.Duration) { mu.Lock(); now = t0.Add(d); mu.Unlock() }
	l := pipeline.New(db, ruleSet(t), pipeline.Options{FlushInterval: time.Hour, StallQuiet: 10 * time.Minute,
		Now: func() time.Time { mu.Lock(); defer mu.Unlock(); return now }, History: hist})
	l.Start()
	defer l.Close()
	n := 0
	entry := func(unit, inv string, at time.Duration, msg string) domain.Entry {
		n++
		return domain.Entry{Journal: true, Host: "gpu1", Unit: unit, InvocationID: inv, Identifier: "vllm", PID: 7,
			Time: t0.Add(at), Cursor: fmt.Sprintf("s=1;i=%d", n), Message: msg, Fields: map[string]string{"_SYSTEMD_UNIT": unit}}
	}
	pid1 := func(unit, inv string, at time.Duration, msg string) domain.Entry {
		n++
		return domain.Entry{Journal: true, Host: "gpu1", Unit: unit, InvocationID: inv, Identifier: "systemd", PID: 1,
			Time: t0.Add(at), Cursor: fmt.Sprintf("s=1;i=%d", n), Message: msg,
			Fields: map[string]string{"_PID": "1", "UNIT": unit, "INVOCATION_ID": inv, "_TRANSPORT": "journal"}}
	}
	add := func(es ...domain.Entry) {
		t.Helper()
		if err := l.Add(es); err != nil {
			t.Fatal(err)
		}
	}
	// The third boot of vllm.service: its graph capture takes 4 min and it
	// is ready; the operator stops it.
	add(entry("vllm.service", "third", 0, "INFO 10-01 12:00:00 [api_server.py:1885] vLLM API server version 0.11.0"),
		entry("vllm.service", "third", 3*time.Minute, "INFO 10-01 12:03:00 [gpu_model_runner.py:3000] Capturing CUDA graphs (mixed prefill-decode, PIECEWISE):   0%|          | 0/67"),
		entry("vllm.service", "third", 7*time.Minute, "INFO 10-01 12:07:00 [core.py:200] init engine (profile, create kv cache, warmup model) took 420.00 seconds"),
		entry("vllm.service", "third", 8*time.Minute, "INFO:     Application startup complete."),
		pid1("vllm.service", "third", 9*time.Minute, "Stopping vllm.service - vLLM..."),
		pid1("vllm.service", "third", 9*time.Minute+time.Second, "vllm.service: Deactivated successfully."))
	// The fourth boot enters graph capture at minute 11.
	add(entry("vllm.service", "fourth", 10*time.Minute, "INFO 10-01 12:10:00 [api_server.py:1885] vLLM API server version 0.11.0"),
		entry("vllm.service", "fourth", 11*time.Minute, "INFO 10-01 12:11:00 [gpu_model_runner.py:3000] Capturing CUDA graphs (mixed prefill-decode, PIECEWISE):   0%|          | 0/67"))
	// fresh.service has no history: it loads weights and prints progress.
	add(entry("fresh.service", "f1", 10*time.Minute, "INFO 10-01 12:10:00 [api_server.py:1885] vLLM API server version 0.11.0"),
		entry("fresh.service", "f1", 11*time.Minute, "INFO 10-01 12:11:00 [gpu_model_runner.py:1] Starting to load model /models/big..."))
	stalled := func() map[string]string {
		out := map[string]string{}
		for _, a := range list(t, db) {
			for _, f := range a.Findings {
				if f.ID == domain.FindingBootStalled {
					out[a.InvocationID] = f.Note
				}
			}
		}
		return out
	}
	for m := 12; m < 20; m++ {
		add(entry("fresh.service", "f1", time.Duration(m)*time.Minute, fmt.Sprintf("Loading safetensors checkpoint shards: %d%% Completed | %d/30", m*3, m-10)))
	}
	// Nothing was flushed yet: the third boot is not stored when the
	// first check reads the earlier boots.
	for m := 20; m <= 46; m++ {
		if m < 35 {
			add(entry("fresh.service", "f1", time.Duration(m)*time.Minute, fmt.Sprintf("Loading safetensors checkpoint shards: %d%% Completed | %d/30", m*3, m-10)))
		}
		setNow(time.Duration(m)*time.Minute + time.Second)
		flush(t, l)
		got := stalled()
		// Two targets booting: one read of each one's earlier boots per
		// HistoryTTL (5 min), not one per flush.
		if want := 2 * ((m-20)/5 + 1); hist.count() != want {
			t.Errorf("minute %d: %d reads of the earlier boots, want %d", m, hist.count(), want)
		}
		// fourth: graph capture took 2, 3 and 4 min in the three earlier
		// boots (the third known only to this pipeline's tracker until
		// the read at minute 25): p90 4 min, the limit max(3 × 4, 4 + 2)
		// = 12 min from minute 11. Without the third, the quiet limit
		// would have raised it at minute 21.
		if want := m >= 23; (got["fourth"] != "") != want {
			t.Errorf("minute %d: fourth stalled %q, want %v", m, got["fourth"], want)
		}
		// fresh: printed until minute 34, quiet limit 10 min; once
		// raised, the stall stands (its own line is no line of the boot).
		if want := m >= 44; (got["f1"] != "") != want {
			t.Errorf("minute %d: fresh stalled %q, want %v", m, got["f1"], want)
		}
	}
	if got := stalled(); got["fourth"] != "graph_capture for 12m1s; it took 3m0s-4m0s in the last 3 boots of this unit" ||
		got["f1"] != "weights for 33m1s, and nothing printed for 10m1s; no earlier boot of this unit tells how long weights takes" {
		t.Errorf("notes %q", got)
	}
}

// TestStalledBootKeepsItWhenItTimesOut: a boot that stalled in graph
// capture and is then killed by systemd's start timeout ends as timeout in
// graph_capture with boot_stalled still among its findings (the spec: kept
// on the attempt when it later ends); later flushes do not withdraw it.
func TestStalledBootKeepsItWhenItTimesOut(t *testing.T) {
	r := newStallRig(t, pipeline.Options{})
	db, l, setNow, t0 := r.db, r.l, r.set, r.t0
	setNow(20 * time.Minute)
	flush(t, l)
	for _, a := range list(t, db) {
		if a.InvocationID == "new" && (!a.HasFinding(domain.FindingBootStalled) || a.Verdict != domain.VerdictRunning) {
			t.Fatalf("17 min into a 2-4 min graph capture: verdict %s, findings %v", a.Verdict, a.FindingIDs())
		}
	}
	// systemd's TimeoutStartSec (30 min) kills it.
	if err := l.Add([]domain.Entry{{Journal: true, Host: "gpu1", Unit: "vllm.service", Identifier: "systemd", PID: 1, Time: t0.Add(30 * time.Minute),
		Cursor: "s=1;i=end", Message: "vllm.service: Failed with result 'timeout'.",
		Fields: map[string]string{"_PID": "1", "UNIT": "vllm.service", "INVOCATION_ID": "new", "MESSAGE_ID": "d9b373ed55a64feb8242e02dbe79a49c", "UNIT_RESULT": "timeout"}}}); err != nil {
		t.Fatal(err)
	}
	for _, d := range []time.Duration{30*time.Minute + time.Second, 31 * time.Minute} {
		setNow(d)
		flush(t, l)
	}
	var got *domain.Attempt
	for _, a := range list(t, db) {
		if a.InvocationID == "new" {
			got = a
		}
	}
	if got == nil {
		t.Fatal("the boot is not stored")
	}
	if got.Verdict != domain.VerdictTimeout || got.Phase != domain.PhaseGraphCapture || got.EndedAt.IsZero() || !got.HasFinding(domain.FindingBootStalled) {
		t.Errorf("timed-out stalled boot: verdict %s phase %s ended %v findings %v; want timeout in graph_capture with boot_stalled",
			got.Verdict, got.Phase, got.EndedAt, got.FindingIDs())
	}
	// The verdict is among the findings (the spec), with the phase it
	// reached, the line that ended it and its own MESSAGE_ID for the note.
	var timeout *domain.Finding
	for i, f := range got.Findings {
		if f.ID == string(domain.VerdictTimeout) {
			timeout = &got.Findings[i]
		}
	}
	want := "systemd ended the unit because its start timed out (TimeoutStartSec) after 30m0s, in phase graph_capture, before the engine reported ready"
	if timeout == nil || timeout.Phase != domain.PhaseGraphCapture || timeout.MessageID != "d3e394f6bb6c31320d5691bd13b7a4f4" ||
		!strings.HasPrefix(timeout.Note, want) || !timeout.Time.Equal(t0.Add(30*time.Minute)) || len(timeout.Evidence) == 0 ||
		timeout.Evidence[len(timeout.Evidence)-1].Message != "vllm.service: Failed with result 'timeout'." || got.Note != timeout.Note {
		t.Errorf("timeout finding %+v; want one in graph_capture noting %q", timeout, want)
	}
}
