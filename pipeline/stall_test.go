package pipeline_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/internal/fixturetest"
	"github.com/llmfleet/analyzer/pipeline"
)

// TestLiveRaisesBootStalled: with three earlier boots of the unit whose
// graph capture took 2-4 min, a new boot that entered graph capture is
// not stalled after 1 min, is after 40 (ten times its usual time): the
// boot_stalled finding stands on the stored attempt with a note that says
// so and is offered once to the sinks (the notes writer); when the boot
// moves on to warmup it is withdrawn.
func TestLiveRaisesBootStalled(t *testing.T) {
	db := openDB(t)
	t0 := time.Date(2026, 10, 1, 12, 0, 0, 0, time.UTC)
	earlier := fixturetest.ReadyBoots("gpu1", "vllm.service", t0, 2*time.Minute, 3*time.Minute, 4*time.Minute)
	if err := db.SaveAttempts(t.Context(), earlier, nil); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	now := t0
	setNow := func(d time.Duration) { mu.Lock(); now = t0.Add(d); mu.Unlock() }
	fs := &sink{}
	l := pipeline.New(db, ruleSet(t), pipeline.Options{Findings: fs, FindingGrace: time.Second, FlushInterval: time.Hour,
		Now: func() time.Time { mu.Lock(); defer mu.Unlock(); return now }, History: db})
	l.Start()
	defer l.Close()
	entry := func(at time.Duration, msg string) domain.Entry {
		return domain.Entry{Journal: true, Host: "gpu1", Unit: "vllm.service", InvocationID: "new", Identifier: "vllm", PID: 7,
			Time: t0.Add(at), Cursor: fmt.Sprintf("s=1;i=%d", at), Message: msg, Fields: map[string]string{"_SYSTEMD_UNIT": "vllm.service"}}
	}
	if err := l.Add([]domain.Entry{
		entry(0, "INFO 10-01 12:00:00 [api_server.py:1885] vLLM API server version 0.11.0"),
		entry(3*time.Minute, "INFO 10-01 12:03:00 [gpu_model_runner.py:3000] Capturing CUDA graphs (mixed prefill-decode, PIECEWISE):   0%|          | 0/67"),
	}); err != nil {
		t.Fatal(err)
	}
	stored := func() *domain.Attempt {
		for _, a := range list(t, db) {
			if a.InvocationID == "new" {
				return a
			}
		}
		t.Fatal("the new boot is not stored")
		return nil
	}
	stalledNote := func(a *domain.Attempt) string {
		for _, f := range a.Findings {
			if f.ID == domain.FindingBootStalled {
				return f.Note
			}
		}
		return ""
	}
	setNow(4 * time.Minute)
	flush(t, l)
	if a := stored(); a.Phase != domain.PhaseGraphCapture || stalledNote(a) != "" {
		t.Fatalf("1 min into graph capture: phase %s, stalled %q", a.Phase, stalledNote(a))
	}
	setNow(43 * time.Minute)
	flush(t, l)
	setNow(43*time.Minute + 2*time.Second)
	flush(t, l)
	want := "graph_capture for 40m0s; it took 3m0s-4m0s in the last 3 boots of this unit"
	if note := stalledNote(stored()); note != want {
		t.Fatalf("40 min into graph capture: boot_stalled note %q, want %q", note, want)
	}
	offered := 0
	fs.mu.Lock()
	for k := range fs.offers {
		if strings.Contains(k, "/"+domain.FindingBootStalled+"/") {
			offered++
		}
	}
	fs.mu.Unlock()
	if offered != 1 {
		t.Errorf("boot_stalled offered %d times to the sinks, want once", offered)
	}
	// It moves on: the stall is withdrawn.
	if err := l.Add([]domain.Entry{entry(44*time.Minute, "INFO 10-01 12:44:00 [core.py:200] init engine (profile, create kv cache, warmup model) took 2640.00 seconds")}); err != nil {
		t.Fatal(err)
	}
	setNow(44*time.Minute + time.Second)
	flush(t, l)
	if a := stored(); stalledNote(a) != "" {
		t.Errorf("after it moved on (phase %s): still stalled %q", a.Phase, stalledNote(a))
	}
}
