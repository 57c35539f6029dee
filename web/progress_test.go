package web

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/internal/fixturetest"
)

// TestProgressOfABootInProgress: the API gives a running boot of a target
// with earlier boots its phase, the expected time to ready from them and
// whether it has stalled in graph capture; an ended boot, and a boot of a
// target with no history, have no estimate to give (the latter only its
// quiet limit).
func TestProgressOfABootInProgress(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Second)
	as := fixturetest.ReadyBoots("gpu1", "vllm.service", now, 2*time.Minute, 3*time.Minute, 4*time.Minute, 3*time.Minute)
	for _, a := range as {
		a.Shape = domain.Shape{domain.ShapeMaxModelLen: 32768}
	}
	running := func(id, unit string, inCapture time.Duration) *domain.Attempt {
		s := now.Add(-3*time.Minute - inCapture)
		return &domain.Attempt{ID: id, Host: "gpu1", Unit: unit, Engine: "vllm", StartedAt: s, Phase: domain.PhaseGraphCapture,
			Verdict: domain.VerdictRunning, Shape: domain.Shape{domain.ShapeMaxModelLen: 32768},
			Timeline: []domain.PhaseMark{{Phase: domain.PhaseWeights, Time: s.Add(time.Minute)}, {Phase: domain.PhaseGraphCapture, Time: s.Add(3 * time.Minute)}}}
	}
	as = append(as, running("healthy", "vllm.service", time.Minute), running("wedged", "vllm.service", 20*time.Minute), running("fresh", "new.service", 20*time.Minute))
	srv := serveAttempts(t, as, Options{})
	progressOf := func(id string) map[string]any {
		code, body, _ := get(t, srv, "/api/v1/attempts/"+id)
		if code != 200 {
			t.Fatalf("%s: %d %s", id, code, body)
		}
		var out struct {
			Progress map[string]any `json:"progress"`
		}
		if err := json.Unmarshal([]byte(body), &out); err != nil {
			t.Fatal(err)
		}
		return out.Progress
	}
	p := progressOf("healthy")
	// 1 min into capture: the earlier boots had 1-3 min of capture left and 1 min of warmup.
	near := func(v any, want float64) bool { f, ok := v.(float64); return ok && math.Abs(f-want) < 5 } // the request's now is a little later
	if p["phase"] != "graph_capture" || !near(p["eta_p50_s"], 180) || !near(p["eta_p90_s"], 240) || p["basis"] != 4.0 || p["same_shape"] != true || p["stalled"] != false || p["stall_limit_s"] != 720.0 {
		t.Errorf("healthy boot: %v", p)
	}
	if p := progressOf("wedged"); p["stalled"] != true || p["in_phase_s"].(float64) < 1200 {
		t.Errorf("boot 20 min in a 2-4 min graph capture: %v", p)
	}
	if p := progressOf("fresh"); p["no_history"] != true || p["eta_p50_s"] != nil || p["stall_limit_s"] != (15*time.Minute).Seconds() || p["stalled"] != true {
		t.Errorf("boot of a target with no history: %v", p)
	}
	if p := progressOf("vllm.service-earlier0"); p != nil {
		t.Errorf("an ended boot has progress %v", p)
	}
	// The attempt pages say the same in words, with a bar.
	if code, page, _ := get(t, srv, "/attempts/healthy"); code != 200 || !strings.Contains(page, "Boot in progress: graph_capture for 1m") ||
		!strings.Contains(page, "<progress max=\"100\"") || !strings.Contains(page, "from 4 earlier boots of this unit with this shape") || strings.Contains(page, "Stalled") {
		t.Errorf("attempt page of the healthy boot: %d", code)
	}
	if _, page, _ := get(t, srv, "/attempts/wedged"); !strings.Contains(page, "<b>Stalled</b>: graph_capture for 20m") || !strings.Contains(page, "it usually takes 3m0s-4m0s") {
		t.Errorf("attempt page of the wedged boot says no stall")
	}
	if _, page, _ := get(t, srv, "/attempts/vllm.service-earlier0"); strings.Contains(page, "Boot in progress") {
		t.Errorf("an ended boot's page shows progress")
	}
	// GET /api/v1/boots: the three boots in progress, newest first, with
	// their progress; not the ended ones.
	code, body, _ := get(t, srv, "/api/v1/boots")
	var boots struct {
		Boots []struct {
			ID       string         `json:"id"`
			Progress map[string]any `json:"progress"`
		} `json:"boots"`
	}
	if err := json.Unmarshal([]byte(body), &boots); code != 200 || err != nil || len(boots.Boots) != 3 {
		t.Fatalf("/api/v1/boots: %d %v %s", code, err, body)
	}
	stalled := map[string]bool{}
	for _, b := range boots.Boots {
		stalled[b.ID] = b.Progress["stalled"] == true
	}
	if stalled["healthy"] || !stalled["wedged"] || !stalled["fresh"] || len(stalled) != 3 {
		t.Errorf("/api/v1/boots stalled: %v", stalled)
	}
}

// TestAttemptsPageShowsBootsInProgress: the attempts page lists the boots
// in progress above the table, each with its bar segmented by phase (the
// phases it left as they took, graph capture as long as it usually takes
// and filled as far as the boot is in it, warmup ahead) and the ETA in
// words; a boot of a target with no history says so, a stalled one is
// marked; a verdict filter without running, and a later page, show none.
func TestAttemptsPageShowsBootsInProgress(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Second)
	// Capture 2, 3, 4, 3 min: 1 min into it, the median leaves 2 min of
	// capture and 1 min of warmup, as the estimate (3m, p90 4m).
	as := fixturetest.ReadyBoots("gpu1", "vllm.service", now, 2*time.Minute, 3*time.Minute, 4*time.Minute, 3*time.Minute)
	running := func(id, unit string, inCapture time.Duration) *domain.Attempt {
		s := now.Add(-3*time.Minute - inCapture)
		return &domain.Attempt{ID: id, Host: "gpu1", Unit: unit, Engine: "vllm", StartedAt: s, Phase: domain.PhaseGraphCapture,
			Verdict: domain.VerdictRunning, Shape: domain.Shape{}, LastLineAt: s.Add(3 * time.Minute),
			Timeline: []domain.PhaseMark{{Phase: domain.PhaseWeights, Time: s.Add(time.Minute)}, {Phase: domain.PhaseGraphCapture, Time: s.Add(3 * time.Minute)}}}
	}
	as = append(as, running("healthy", "vllm.service", time.Minute), running("fresh", "new.service", 20*time.Minute))
	srv := serveAttempts(t, as, Options{Now: func() time.Time { return now }})
	code, page, _ := get(t, srv, "/")
	if code != 200 {
		t.Fatalf("GET /: %d", code)
	}
	i, j := strings.Index(page, `<section class="boots"`), strings.Index(page, "</section>")
	if i < 0 || j < i {
		t.Fatalf("no boots in progress on the page")
	}
	boots := page[i:j]
	healthy := boots[strings.Index(boots, "/attempts/healthy"):]
	healthy = healthy[:strings.Index(healthy, `class="eta"`)+80]
	// 1m start, 2m weights, 3m graph capture (1m in), 1m warmup: 7m.
	for _, w := range []string{
		`vllm.service</a> on gpu1: graph_capture for 1m0s, 4m0s since the start`,
		`<g class="seg done" data-phase="start"><title>start 1m0s</title><rect class="all" x="0" y="0" width="142.9" height="12"></rect><rect class="fill" x="0" y="0" width="142.9" height="12"></rect></g>`,
		`<g class="seg done" data-phase="weights"><title>weights 2m0s</title><rect class="all" x="142.9" y="0" width="285.7" height="12"></rect><rect class="fill" x="142.9" y="0" width="285.7" height="12"></rect></g>`,
		`<g class="seg current" data-phase="graph_capture"><title>graph_capture 1m0s of ~3m0s</title><rect class="all" x="428.6" y="0" width="428.6" height="12"></rect><rect class="fill" x="428.6" y="0" width="142.9" height="12"></rect></g>`,
		`<g class="seg later" data-phase="warmup"><title>warmup ~1m0s</title><rect class="all" x="857.1" y="0" width="142.9" height="12"></rect><rect class="fill" x="857.1" y="0" width="0" height="12"></rect></g>`,
		`<div class="seglegend dim"><span class="done">start 1m0s</span> · <span class="done">weights 2m0s</span> · <span class="current">graph_capture 1m0s of ~3m0s</span> · <span class="later">warmup ~1m0s</span></div>`,
		`<div class="eta">ready in ~3m0s (p90 4m0s), from 4 boots</div>`,
	} {
		if !strings.Contains(healthy, w) {
			t.Errorf("the healthy boot lacks %s:\n%s", w, healthy)
		}
	}
	fresh := boots[strings.Index(boots, "/attempts/fresh"):]
	if !strings.Contains(fresh, `<div class="eta">no history</div>`) || strings.Contains(fresh, "segbar") || !strings.Contains(fresh, `<span class="chip fail">stalled</span>`) {
		t.Errorf("the boot with no history (20 min silent):\n%s", fresh)
	}
	// The attempt page draws the same bar.
	if _, page, _ := get(t, srv, "/attempts/healthy"); !strings.Contains(page, `<g class="seg current" data-phase="graph_capture"><title>graph_capture 1m0s of ~3m0s</title>`) {
		t.Errorf("the attempt page has no segmented bar")
	}
	for _, q := range []string{"/?verdict=ready", "/?failed=1", "/?unit=other.service"} {
		if _, page, _ := get(t, srv, q); strings.Contains(page, `<section class="boots"`) {
			t.Errorf("%s shows boots in progress", q)
		}
	}
	if _, page, _ := get(t, srv, "/?unit=new.service&verdict=running"); !strings.Contains(page, "/attempts/fresh") || strings.Contains(page, `<section class="boots"`) && strings.Contains(page, "/attempts/healthy") {
		t.Errorf("unit filter: the boots section shows other units' boots")
	}
}
