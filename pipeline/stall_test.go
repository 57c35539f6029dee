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
	"github.com/llmfleet/analyzer/store"
)

// TestLiveRaisesBootStalled: with three earlier boots of the unit whose
// graph capture took 2-4 min, a new boot that entered graph capture is
// not stalled after 1 min, is after 40 (ten times its usual time): the
// boot_stalled finding stands on the stored attempt with a note that says
// so and is offered once to the sinks (the notes writer); when the boot
// moves on to warmup it is withdrawn.
func TestLiveRaisesBootStalled(t *testing.T) {
	fs := &sink{}
	r := newStallRig(t, pipeline.Options{Findings: fs, FindingGrace: time.Second})
	db, l, setNow := r.db, r.l, r.set
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
	if err := l.Add([]domain.Entry{r.entry(44*time.Minute, "INFO 10-01 12:44:00 [core.py:200] init engine (profile, create kv cache, warmup model) took 2640.00 seconds")}); err != nil {
		t.Fatal(err)
	}
	setNow(44*time.Minute + time.Second)
	flush(t, l)
	if a := stored(); stalledNote(a) != "" {
		t.Errorf("after it moved on (phase %s): still stalled %q", a.Phase, stalledNote(a))
	}
}

// stallRig is a live pipeline (History: the store) over a store holding
// three earlier boots of gpu1's vllm.service whose graph capture took 2-4
// min, fed a new boot of that unit ("new") that entered graph capture 3
// min after t0; its clock stands at t0 plus what set says.
type stallRig struct {
	db *store.DB
	l  *pipeline.Live
	t0 time.Time

	mu  sync.Mutex
	now time.Time
}

// newStallRig starts the rig with opts (FlushInterval, Now and History set
// here); the pipeline closes with the test.
func newStallRig(t *testing.T, opts pipeline.Options) *stallRig {
	t.Helper()
	r := &stallRig{db: openDB(t), t0: time.Date(2026, 10, 1, 12, 0, 0, 0, time.UTC)}
	r.now = r.t0
	if err := r.db.SaveAttempts(t.Context(), fixturetest.ReadyBoots("gpu1", "vllm.service", r.t0, 2*time.Minute, 3*time.Minute, 4*time.Minute), nil); err != nil {
		t.Fatal(err)
	}
	opts.FlushInterval, opts.History = time.Hour, r.db
	opts.Now = func() time.Time { r.mu.Lock(); defer r.mu.Unlock(); return r.now }
	r.l = pipeline.New(r.db, ruleSet(t), opts)
	r.l.Start()
	t.Cleanup(func() { _ = r.l.Close() })
	if err := r.l.Add([]domain.Entry{
		r.entry(0, "INFO 10-01 12:00:00 [api_server.py:1885] vLLM API server version 0.11.0"),
		r.entry(3*time.Minute, "INFO 10-01 12:03:00 [gpu_model_runner.py:3000] Capturing CUDA graphs (mixed prefill-decode, PIECEWISE):   0%|          | 0/67"),
	}); err != nil {
		t.Fatal(err)
	}
	return r
}

// set moves the clock to t0 + d.
func (r *stallRig) set(d time.Duration) { r.mu.Lock(); r.now = r.t0.Add(d); r.mu.Unlock() }

// entry is a line of the new boot at t0 + at.
func (r *stallRig) entry(at time.Duration, msg string) domain.Entry {
	return domain.Entry{Journal: true, Host: "gpu1", Unit: "vllm.service", InvocationID: "new", Identifier: "vllm", PID: 7,
		Time: r.t0.Add(at), Cursor: fmt.Sprintf("s=1;i=%d", at), Message: msg, Fields: map[string]string{"_SYSTEMD_UNIT": "vllm.service"}}
}
